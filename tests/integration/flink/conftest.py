"""The Flink tests' session cluster and reference lake (`tests.support.flink_fixtures`)."""

from tests.support.flink_fixtures import flink_cluster, sample_lake_fnapi  # noqa: F401 - fixtures, found by name
