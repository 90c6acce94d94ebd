"""A lake written by `groundwatch monitor` from a real broker verifies against its manifest (marker `kafka`)."""

from __future__ import annotations

import pytest

from pipelines.cli import main
from pipelines.monitor import run
from pipelines.produce import generated_messages, produce_messages
from pipelines.traffic.synthetic import DEFAULT_START
from tests.support.kafka_fixtures import monitor_argv
from transforms.io.lake.manifest_check import replay, verify_lake

pytestmark = pytest.mark.kafka


def test_a_monitor_run_leaves_a_lake_that_verifies(kafka_bootstrap, new_topic, tmp_path, capsys):
    topic = new_topic(partitions=2)
    messages = generated_messages(300, seed=5, malformed_fraction=0.05, start=DEFAULT_START)
    assert produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, messages) == 300
    lake = str(tmp_path / "lake")
    run(monitor_argv(kafka_bootstrap, topic, lake, "--checkpoint_records=100"), out=lambda _: None)

    report = verify_lake(lake)
    assert report.problems == [] and report.files > 0
    tables = {f["table"] for entry in replay(lake, None).entries.values() for f in entry.body["files"]}
    assert {"responses", "dead_letters", "window_metrics"} <= tables
    capsys.readouterr()
    assert main(["verify-lake", "--lake", lake]) == 0
    assert capsys.readouterr().out.rstrip().endswith("unaltered")
