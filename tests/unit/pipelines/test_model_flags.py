"""The model stage's flags in the commands that verify in process (`gate`, `serve`, `calibrate`, `replay`): each
runs the tiny real ONNX cross-encoder (`tests.support.tiny_nli`) and the scripted judge server, shows which stage
decided, and refuses a model folder that does not load with exit 2 and one line."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from pipelines.serve import add_arguments as add_serve_arguments
from pipelines.serve import config_from
from tests.support.audit_messages import message, raw
from tests.support.model_answers import (
    COPIED,
    MODEL_SURE,
    MODEL_UNSURE,
    NEGATED,
    write_answer_model,
    write_identity_calibration,
)
from tests.support.openai_server import OpenAIServer, Scripted
from tests.support.serve_fixtures import free_port, running_service, wait_until_healthy
from tests.support.tiny_nli import write_tiny_model

STAGED = " ".join([COPIED, MODEL_SURE, NEGATED, MODEL_UNSURE])
"""An answer the cascade splits over all three stages with `--cascade-band 0.5,0.85` (as in the audit's test)."""
STAGED_BY = ["heuristic", "model", "model", "openai"]
GOLDEN = Path(__file__).resolve().parents[2] / "data" / "calibration_golden.jsonl"
SECRET = "sk-judge-key-never-printed"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return write_answer_model(tmp_path_factory.mktemp("model") / "nli")


def judge_flags(server: OpenAIServer) -> list[str]:
    return ["--judge-base-url", server.base_url, "--judge-model", "scripted-judge"]


def cascade_flags(model_dir, server: OpenAIServer) -> list[str]:
    return ["--verifier", "cascade", "--model-path", str(model_dir), "--cascade-band", "0.5,0.85", *judge_flags(server)]


def one_line_refusal(capsys, command: str) -> str:
    """The reason, the last line of stderr (calibrate lists the golden file's skipped lines before it)."""
    err = capsys.readouterr().err.strip()
    reason = err.splitlines()[-1]
    assert reason.startswith(f"groundwatch {command}: ") and "--model-path" in reason
    assert "Traceback" not in err and "--model-path" not in "\n".join(err.splitlines()[:-1])
    return reason


def write_traffic(path: Path, answers: dict[str, str]) -> str:
    path.write_bytes(b"".join(raw(message(rid, answer=a)) + b"\n" for rid, a in answers.items()))
    return str(path)


# gate


def gate(tmp_path, traffic: str, *flags: str) -> int:
    args = ["gate", "--input", traffic, "--junit", str(tmp_path / "g.xml"), "--summary", str(tmp_path / "g.md")]
    return groundwatch([*args, *flags])


def test_gate_runs_the_model_and_fails_on_what_it_finds_contradicted(model_dir, tmp_path, capsys):
    traffic = write_traffic(tmp_path / "t.jsonl", {"r-neg": NEGATED})
    assert gate(tmp_path, traffic, "--verifier", "model", "--model-path", str(model_dir), "--fail-on-contradicted") == 1
    out = capsys.readouterr().out
    assert "sentences decided by: model 1" in out
    assert "sentences decided by: model 1" in (tmp_path / "g.md").read_text()
    assert "gate FAILED" in out


@pytest.mark.server
def test_gate_runs_the_three_stage_cascade(model_dir, tmp_path, capsys):
    traffic = write_traffic(tmp_path / "t.jsonl", {"r-1": STAGED})
    with OpenAIServer() as server:
        # The staged answer holds a negated sentence; this test is about the stages, not the default policy.
        assert gate(tmp_path, traffic, *cascade_flags(model_dir, server), "--no-fail-on-contradicted") == 0
        assert len(server.requests) == 1  # only the sentence the model left open went to the judge
    assert "sentences decided by: heuristic 1, model 2, openai 1" in capsys.readouterr().out


def test_gate_refuses_a_model_folder_that_does_not_load(model_dir, tmp_path, capsys):
    traffic = write_traffic(tmp_path / "t.jsonl", {"r-1": MODEL_SURE})
    assert gate(tmp_path, traffic, "--verifier", "model", "--model-path", str(tmp_path / "nowhere")) == 2
    assert "not a folder" in one_line_refusal(capsys, "gate")
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("tokenizer.json", "labels.json"):
        (broken / name).write_bytes((Path(model_dir) / name).read_bytes())
    (broken / "model.onnx").write_bytes(b"not an onnx file\nsecond line")
    assert gate(tmp_path, traffic, "--verifier", "model", "--model-path", str(broken)) == 2
    assert "cannot load model.onnx" in one_line_refusal(capsys, "gate")


def calibration_file(tmp_path) -> str:
    """Bands that send every sentence past the heuristic, and on from the model only its near ties."""
    return write_identity_calibration(tmp_path / "cal.json", (0.0, 1.0), (0.3, 0.8))


@pytest.mark.server
def test_gate_takes_the_cascade_bands_from_a_calibration_file(model_dir, tmp_path, capsys):
    traffic = write_traffic(tmp_path / "t.jsonl", {"r-1": STAGED})
    with OpenAIServer() as server:
        flags = [*cascade_flags(model_dir, server), "--calibration", calibration_file(tmp_path)]
        assert gate(tmp_path, traffic, *flags, "--no-fail-on-contradicted") == 0
    assert "sentences decided by: model 3, openai 1" in capsys.readouterr().out  # the heuristic decided none
    (tmp_path / "bad.json").write_text("{not json")
    assert gate(tmp_path, traffic, "--calibration", str(tmp_path / "bad.json")) == 2
    assert capsys.readouterr().err.startswith("groundwatch gate: --calibration")


# serve


def serve_config(*flags: str):
    parser = argparse.ArgumentParser(prog="groundwatch serve")
    add_serve_arguments(parser)
    return config_from(parser.parse_args(list(flags)))


@pytest.mark.server
def test_serve_answers_with_the_model_stage(model_dir):
    config = serve_config("--verifier", "model", "--model-path", str(model_dir))
    with running_service(config) as base_url:
        reply = httpx.post(f"{base_url}/v1/verify", json=message("s-1", answer=f"{MODEL_SURE} {NEGATED}"), timeout=30)
    assert reply.status_code == 200
    result = reply.json()
    assert result["decided_by"] == ["model", "model"]
    verdicts = [s["attribution_verdict"] for s in result["report"]["sentences"]]
    assert verdicts == ["fully_grounded", "contradicted"]


@pytest.mark.server
def test_serve_takes_the_cascade_bands_from_a_calibration_file(model_dir, tmp_path):
    with OpenAIServer() as server:
        flags = [*cascade_flags(model_dir, server), "--calibration", calibration_file(tmp_path)]
        with running_service(serve_config(*flags)) as base_url:
            reply = httpx.post(f"{base_url}/v1/verify", json=message("s-3", answer=STAGED), timeout=60)
    assert reply.json()["decided_by"] == ["model", "model", "model", "openai"]
    (tmp_path / "bad.json").write_text("{not json")
    assert groundwatch(["serve", "--calibration", str(tmp_path / "bad.json")]) == 2


@pytest.mark.server
def test_the_serve_command_runs_the_cascade_and_never_prints_the_judge_key(model_dir):
    port = free_port()
    with OpenAIServer() as server:
        env = {**os.environ, "GROUNDWATCH_JUDGE_API_KEY": SECRET, "PYTHONPATH": os.getcwd()}
        command = [sys.executable, "-m", "pipelines.cli", "serve", "--port", str(port)]
        command += cascade_flags(model_dir, server)
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            base_url = f"http://127.0.0.1:{port}"
            wait_until_healthy(base_url, process)
            reply = httpx.post(f"{base_url}/v1/verify", json=message("s-2", answer=STAGED), timeout=60)
        finally:
            process.terminate()
            output = process.communicate(timeout=60)[0].decode()
        judged = len(server.requests)
    assert reply.status_code == 200, reply.text
    assert reply.json()["decided_by"] == STAGED_BY
    assert "verifier cascade" in output and SECRET not in output
    assert judged == 1  # only the sentence the model left open went to the judge


def test_serve_refuses_a_model_folder_that_does_not_load(tmp_path, capsys):
    assert groundwatch(["serve", "--verifier", "model", "--model-path", str(tmp_path / "nowhere")]) == 2
    assert one_line_refusal(capsys, "serve").endswith("nowhere: not a folder")
    assert groundwatch(["serve", "--verifier", "model"]) == 2  # no folder at all
    assert "--verifier model needs --model-path" in capsys.readouterr().err


# calibrate


@pytest.fixture(scope="module")
def golden_model_dir(tmp_path_factory):
    words = sorted(set(re.findall(r"[a-z]+", GOLDEN.read_text(encoding="utf-8").lower())))
    return write_tiny_model(tmp_path_factory.mktemp("golden-model") / "nli", words)


@pytest.mark.server
def test_calibrate_fits_the_cascade_with_its_model_stage(golden_model_dir, tmp_path, capsys):
    cal = tmp_path / "cal.json"
    with OpenAIServer() as server:
        args = ["calibrate", "--golden", str(GOLDEN), "--verifier", "cascade", "--model-path", str(golden_model_dir)]
        args += ["--cascade-band", "0,1", *judge_flags(server), "--fit", str(cal), "--bootstrap", "0"]
        assert groundwatch([*args, "--no-citations"]) == 0
    out = capsys.readouterr().out
    decided = re.search(r"sentences decided by: (.*)", out)
    assert decided and "model" in decided.group(1)  # the heuristic hands all on; the model keeps its sure ones
    assert "+model-" in out.splitlines()[0]
    assert sorted(json.loads(cal.read_text())["stages"]) == ["heuristic", "model"]


def test_calibrate_measures_the_model_alone_and_refuses_a_bad_folder(golden_model_dir, tmp_path, capsys):
    args = ["calibrate", "--golden", str(GOLDEN), "--bootstrap", "0", "--no-citations", "--verifier", "model"]
    assert groundwatch([*args, "--model-path", str(golden_model_dir)]) == 0
    assert "sentences decided by: model 8" in capsys.readouterr().out
    assert groundwatch([*args, "--model-path", str(GOLDEN)]) == 2
    assert one_line_refusal(capsys, "calibrate").endswith("not a folder")


# replay


def lake_with_a_failed_judge_call(tmp_path) -> tuple[str, str]:
    """An audit lake where the judge's reply to one response failed validation three times."""
    traffic, lake = tmp_path / "traffic.jsonl", str(tmp_path / "lake")
    traffic.write_bytes(raw(message("r-0", answer=f"{MODEL_SURE} {NEGATED}")) + b"\n")
    with OpenAIServer() as server:
        server.script(*[Scripted(content="no")] * 3)
        audit = ["audit", "--input", str(traffic), "--lake", lake, "--verifier", "openai", *judge_flags(server)]
        assert groundwatch(audit) == 0
    return lake, "r-0"


def decided(lake: str, response_id: str) -> list[tuple]:
    query = """
        SELECT sentence_index, decided_by, attribution_verdict FROM sentences WHERE response_id = ?
        QUALIFY row_number() OVER (PARTITION BY sentence_index ORDER BY audited_at DESC) = 1 ORDER BY 1
    """
    return connect_lake(lake).execute(query, [response_id]).fetchall()


@pytest.mark.server
def test_replay_lets_the_model_settle_what_the_judge_still_fails_on(model_dir, tmp_path, capsys):
    lake, rid = lake_with_a_failed_judge_call(tmp_path)
    assert [d for _, d, _ in decided(lake, rid)] == ["heuristic", "heuristic"]
    with OpenAIServer() as server:
        server.script(*[Scripted(content="still no")] * 3)
        code = groundwatch(["replay", "--lake", lake, *judge_flags(server), "--model-path", str(model_dir)])
        assert len(server.requests) == 3  # the judge was asked again first
    assert code == 0
    assert "still failing validation 1" in (out := capsys.readouterr().out) and "settled by the model 1" in out
    assert decided(lake, rid) == [(0, "model", "fully_grounded"), (1, "model", "contradicted")]


@pytest.mark.server
def test_replay_with_the_model_alone_calls_no_judge(model_dir, tmp_path, capsys):
    lake, rid = lake_with_a_failed_judge_call(tmp_path)
    assert groundwatch(["replay", "--lake", lake, "--model-path", str(model_dir)]) == 0
    assert "settled by the model 1" in capsys.readouterr().out
    assert [d for _, d, _ in decided(lake, rid)] == ["model", "model"]
    statuses = connect_lake(lake).execute("SELECT count(*) FROM judge_calls").fetchone()[0]
    assert statuses == 3  # no new judge call was logged
    assert groundwatch(["replay", "--lake", lake, "--model-path", str(tmp_path / "nowhere")]) == 2
    assert one_line_refusal(capsys, "replay").endswith("nowhere: not a folder")


def test_calibrate_names_the_record_the_model_fails_on(golden_model_dir, tmp_path, capsys):
    from tests.support.tiny_nli import POISON

    record = json.loads(GOLDEN.read_text(encoding="utf-8").splitlines()[0])
    record["answer"] = f"{POISON} {record['answer']}"
    golden = tmp_path / "poison.jsonl"
    golden.write_text(json.dumps(record) + "\n", encoding="utf-8")
    args = ["calibrate", "--golden", str(golden), "--verifier", "model", "--model-path", str(golden_model_dir)]
    assert groundwatch([*args, "--bootstrap", "0"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("groundwatch calibrate: --verifier model failed on golden record 'r1': ModelRunError")
    assert "\n" not in err and "Traceback" not in err
