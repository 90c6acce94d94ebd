"""Shared test set-up: the Kafka fixtures (`kafka_bootstrap`, `new_topic`), the S3 ones (`s3_server`,
`s3_lake`) and the benchmark's small lake (`built_small_lake`, `small_lake`) are available to every test module.

Helpers and fixture modules live in `tests/support/`; test modules import them as `tests.support.<name>`.
"""

# Before any test module imports apache_beam (they import it ahead of our packages): no "apitools not found" line.
import transforms.beam_quiet  # noqa: F401

pytest_plugins = [
    "tests.support.tier_guard",
    "tests.support.bench_lakes",
    "tests.support.kafka_fixtures",
    "tests.support.s3_fixtures",
    "tests.support.scenario_lakes",
]
