"""`groundwatch monitor` with the model stage: the same `--model-*` flags as audit, the model run through
RunInference in the stream's graph, and the same verdicts as a bounded audit of the same messages."""

from __future__ import annotations

import re

import pytest

from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from pipelines.produce import generated_messages, produce_messages
from pipelines.traffic.synthetic import DEFAULT_START
from tests.support.kafka_fixtures import kafka_bootstrap, new_topic  # noqa: F401
from tests.support.tiny_nli import write_tiny_model

SENTENCE_COLUMNS = "response_id, sentence_index, attribution_verdict, confidence, decided_by, provenance_notes"


def sentences(lake) -> list[tuple]:
    query = f"SELECT {SENTENCE_COLUMNS} FROM sentences ORDER BY response_id, sentence_index"
    return connect_lake(str(lake)).execute(query).fetchall()


@pytest.mark.kafka
def test_monitor_runs_the_model_stage_as_audit_does(kafka_bootstrap, new_topic, tmp_path):  # noqa: F811
    messages = generated_messages(40, seed=5, malformed_fraction=0.0, start=DEFAULT_START)
    words = re.findall(r"[a-z0-9]+", b" ".join(messages).decode("utf-8", "replace").lower())
    model = write_tiny_model(tmp_path / "nli", sorted(set(words))[:3000])
    topic = new_topic(partitions=2)
    assert produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, messages) == 40
    model_flags = ["--verifier", "model", "--model-path", model, "--model-top-k", "2", "--window-seconds", "3600"]
    monitor = [
        "monitor", "--bootstrap-servers", kafka_bootstrap, "--topic", topic, "--group-id", f"g-{topic}",
        "--until-caught-up", "--review-topic", "", "--dead-letter-topic", "", "--alerts-topic", "",
        "--lake", str(tmp_path / "stream"),
    ]  # fmt: skip
    assert groundwatch([*monitor, *model_flags]) == 0
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_bytes(b"\n".join(messages) + b"\n")
    assert groundwatch(["audit", "--input", str(traffic), "--lake", str(tmp_path / "batch"), *model_flags]) == 0

    streamed = sentences(tmp_path / "stream")
    assert streamed == sentences(tmp_path / "batch") and len(streamed) > 40
    assert {row[4] for row in streamed} <= {"model", "claim_filter"} and "model" in {row[4] for row in streamed}
    assert all("(2 scored)" in row[5] or "(1 scored)" in row[5] for row in streamed if row[4] == "model")
