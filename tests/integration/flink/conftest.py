"""The Flink tests' session cluster, the worker pools' cluster and the reference lake (`tests.support.flink_fixtures`)."""

from tests.support.flink_fixtures import flink_cluster, pooled_flink, sample_lake_fnapi  # noqa: F401 - fixtures
