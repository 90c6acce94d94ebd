"""The Flink tests' clusters (session-wide; with worker pools) and reference lake (`tests.support.flink_fixtures`)."""

from tests.support.flink_fixtures import flink_cluster, pooled_flink, sample_lake_fnapi  # noqa: F401 - fixtures
