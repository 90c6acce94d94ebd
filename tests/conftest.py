"""Shared test set-up: the Kafka fixtures (`kafka_bootstrap`, `new_topic`), the S3 ones (`s3_server`,
`s3_lake`) and the benchmark's small lake (`built_small_lake`, `small_lake`) are available to every test module.

Helpers and fixture modules live in `tests/support/`; test modules import them as `tests.support.<name>`.
"""

import logging
import sys

# Before any test module imports apache_beam (they import it ahead of our packages): no "apitools not found" line.
import transforms.beam_quiet  # noqa: F401

pytest_plugins = [
    "tests.support.tier_guard",
    "tests.support.bench_lakes",
    "tests.support.kafka_fixtures",
    "tests.support.s3_fixtures",
    "tests.support.scenario_lakes",
]


def pytest_unconfigure(config):
    """Point the root logger's stderr handler at the real stderr before pytest closes its capture of it.

    Beam's first root-logger call, during collection, gave the root logger a handler on `sys.stderr`, which was
    then pytest's capture. The job servers of the in-process PrismRunner tests are stopped by Beam at exit, after
    pytest has closed that capture, and their one warning each ended the run as "--- Logging error ---" and a
    traceback."""
    for handler in logging.getLogger().handlers:
        if type(handler) is logging.StreamHandler and handler.stream is not sys.__stderr__:
            handler.setStream(sys.__stderr__)
