"""The Flink tests' session cluster (`tests.support.flink_fixtures`)."""

from tests.support.flink_fixtures import flink_cluster  # noqa: F401 - a fixture, found by name
