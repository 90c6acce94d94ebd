"""`scripts/bench_cascade.py --pipeline`: the audit pipeline with the cascade, run in process, and RunInference's
metrics read back from the run."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.audit_messages import message, raw
from tests.support.model_answers import COPIED, MODEL_SURE, NEGATED
from tests.support.scripts import load_script

ANSWER = " ".join([COPIED, MODEL_SURE, NEGATED])


@pytest.mark.server  # the benchmark starts its scripted judge on 127.0.0.1
def test_the_pipeline_mode_prints_wall_time_and_run_inference_metrics(tmp_path, capsys):
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_bytes(b"".join(raw(message(f"b-{i}", answer=ANSWER)) + b"\n" for i in range(4)))
    bench = load_script("bench_cascade")
    assert bench.main(["--pipeline", "--traffic", str(traffic), "--cascade-band", "0.5,0.85"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"wall time\s+\d+\.\d+ s", out)
    decided = json.loads(re.search(r"decided by\s+(\{.*?\});", out).group(1))
    assert decided["model"] == 8 and decided["heuristic"] == 4  # two model sentences in each of four answers
    metrics = json.loads(re.search(r"RunInference\s+(\{.*\})", out).group(1))
    assert metrics["num_inferences"]["count"] >= 8  # at least one pair per sentence the model decided
    sizes = metrics["inference_request_batch_size"]
    assert sizes["sum"] == metrics["num_inferences"]["count"] and sizes["max"] >= 1
