"""docs/model-stage.md's audits run as written (marker `server`: the judge is an HTTP server of the test's own):
`--verifier model --model-path ./nli-onnx`, then `--verifier cascade` with that model and a judge.

What the page assumes is made in the folder the commands run in, the installed `groundwatch` as a user types
it: `traffic.jsonl` (answers that the heuristic, the model and the judge split between them,
`tests.support.model_answers`) and `./nli-onnx` (the tiny real cross-encoder written for those answers: the
page's exported model folder, with its three files). The page's judge, `http://127.0.0.1:8000/v1`, becomes an
OpenAI-compatible server on a free port, whose model replies are scripted (`tests.support.openai_server`).
The page's `[--calibration cal.json]` is optional, and dropped as every `[...]` part is
(`tests.support.documented.commands`).
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from dashboards.views import connect_lake
from tests.support.audit_messages import message
from tests.support.documented import ROOT, commands, groundwatch_bin
from tests.support.model_answers import COPIED, MODEL_SURE, MODEL_UNSURE, NEGATED, write_answer_model
from tests.support.openai_server import OpenAIServer

pytestmark = pytest.mark.server

PAGE = ROOT / "docs" / "model-stage.md"
DOCUMENTED_JUDGE = "http://127.0.0.1:8000/v1"
BOTH_UNSURE = "Potassium was 4.2 mmol/L on admission, falling sharply overnight."
"""Inside the default bands of both stages (the page gives none): heuristic 0.76 in (0.5, 0.8), then the model's
entailment 0.74 under 0.8, so it goes on to the judge."""
ANSWERS = [f"{COPIED} {MODEL_SURE}", f"{NEGATED} {MODEL_UNSURE}", BOTH_UNSURE]


def _decided_by(lake: str, verifier: str) -> set[str]:
    con = connect_lake(lake)
    sql = "SELECT DISTINCT unnest(decided_by) FROM responses WHERE verifier = ?"
    return {row[0] for row in con.execute(sql, [verifier]).fetchall()}


def test_the_model_pages_audits_run_as_written(tmp_path):
    audits = [c for c in commands(PAGE) if c[1] == "audit"]
    assert [c[c.index("--verifier") + 1] for c in audits] == ["model", "cascade"]  # a new one is run here too
    model, cascade = audits
    (tmp_path / "traffic.jsonl").write_text(
        "".join(json.dumps(message(f"r-{i}", answer=answer)) + "\n" for i, answer in enumerate(ANSWERS))
    )
    write_answer_model(tmp_path / "nli-onnx")
    run = {"capture_output": True, "text": True, "timeout": 600, "cwd": tmp_path, "check": False}

    done = subprocess.run([groundwatch_bin(), *model[1:]], **run)
    assert done.returncode == 0, done.stderr[-2000:]
    lake = str(tmp_path / "groundwatch-lake")  # the audit's default lake
    assert "model" in _decided_by(lake, "model")

    with OpenAIServer() as judge:
        as_written = [judge.base_url if word == DOCUMENTED_JUDGE else word for word in cascade[1:]]
        assert as_written != cascade[1:]  # the page's judge address was there to replace
        done = subprocess.run(
            [groundwatch_bin(), *as_written], **run, env={**os.environ, "GROUNDWATCH_JUDGE_API_KEY": "test-key"}
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert judge.requests  # the sentence both stages were unsure of went on to the judge
    assert {"heuristic", "model", "openai"} <= _decided_by(lake, "cascade")
