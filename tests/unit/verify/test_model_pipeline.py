"""The model stage inside the audit graph, through Beam's RunInference, on the tiny real ONNX model
(`tests.support.tiny_nli`): the graph holds a RunInference step and its metrics count the pairs, the verdicts
are those of the plain verifiers (the code the verify DoFn ran before), a model that does not load on the worker
sends its responses to the dead letters with the reason, the judge path records the calibration file, and the
same audit gives the same rows on the FnApiRunner and on Prism."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from pipelines.cli import main as groundwatch
from schemas import LoggedResponse, ParsedResponse
from tests.support.audit_messages import at, message
from tests.support.model_answers import (
    COPIED,
    MODEL_SURE,
    MODEL_UNSURE,
    NEGATED,
    UNRELATED,
    write_answer_model,
    write_identity_calibration,
)
from tests.support.openai_server import OpenAIServer
from tests.support.prism_fixtures import needs_prism, prism_options
from tests.support.tiny_nli import POISON
from transforms.audit.stages import AUDITED, VerifySentences, verify_response
from transforms.ingest.parse import DEAD_LETTERS
from transforms.verify.calibration import Calibration
from transforms.verify.model.pipeline import MODEL_NAMESPACE
from transforms.verify.registry import make_verifier

ANSWERS = {
    "r-1": f"{COPIED} {MODEL_SURE}",
    "r-2": f"{NEGATED} {MODEL_UNSURE} {UNRELATED}",
    "r-3": COPIED,
    "r-4": f"Here is what I found: {MODEL_UNSURE} {MODEL_SURE}",
    "r-5": f"{UNRELATED} {NEGATED}",
}
CASCADE_BAND = "0.5,0.85"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return write_answer_model(tmp_path_factory.mktemp("model") / "nli")


@pytest.fixture(scope="module")
def calibration(tmp_path_factory) -> str:
    return write_identity_calibration(tmp_path_factory.mktemp("cal") / "cal.json", (0.0, 0.85), (0.3, 0.8))


def parsed(answers=ANSWERS) -> list[ParsedResponse]:
    return [
        ParsedResponse(response=LoggedResponse.model_validate(message(rid, answer=answer)), origin=at(i))
        for i, (rid, answer) in enumerate(answers.items(), start=1)
    ]


def row(audited) -> tuple:
    """What the lake's responses and sentences tables get from one audited response (the judge's call log aside:
    its ids carry the call's time)."""
    sentences = tuple(v.model_dump_json() for v in audited.report.sentences)
    return (
        audited.parsed.response.response_id,
        audited.verifier,
        audited.verifier_version,
        audited.calibration_sha256,
        audited.judge_status,
        tuple(audited.decided_by),
        audited.report.overall_faithfulness_score,
        tuple(audited.report.critical_flags),
        sentences,
    )


def plain_rows(verifier: str, config: dict) -> list[tuple]:
    """The rows the plain verifier gives, response by response: what the verify DoFn produced before the model
    stage ran through RunInference."""
    calibration = config.get("calibration")
    built = make_verifier(verifier, **{**config, "calibration": calibration and Calibration.load(calibration)})
    now = datetime.now(UTC)
    start = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
    return [
        row(verify_response(p, verifier=built, threshold=0.7, window_start=start, window_end=start, now=now))
        for p in parsed()
    ]


def verify(options: PipelineOptions, verifier: str, config: dict, responses=None):
    """Build VerifySentences over `responses` on a pipeline (not run): the pipeline and its outputs."""
    p = beam.Pipeline(options=options)
    out = p | beam.Create(responses or parsed()) | VerifySentences(verifier, threshold=0.7, verifier_config=config)
    return p, out


def fn_api() -> PipelineOptions:
    return PipelineOptions(["--runner=FnApiRunner"])


def stage_labels(p: beam.Pipeline) -> list[str]:
    return [t.unique_name for t in p.to_runner_api().components.transforms.values()]


def counter(result, name: str, namespace: str = MODEL_NAMESPACE) -> int:
    found = result.metrics().query(MetricsFilter().with_namespace(namespace).with_name(name))["counters"]
    return sum(c.committed for c in found)


def configs(model_dir, calibration, server) -> dict[str, tuple[str, dict]]:
    judge = {"base_url": server.base_url, "model": "scripted-judge"}
    return {
        "model": ("model", {"model_path": model_dir}),
        "model, calibrated": ("model", {"model_path": model_dir, "calibration": calibration}),
        "cascade": ("cascade", {**judge, "model_path": model_dir, "band": CASCADE_BAND}),
        "cascade, calibrated": ("cascade", {**judge, "model_path": model_dir, "calibration": calibration}),
    }


@pytest.mark.server
@pytest.mark.parametrize("case", ["model", "model, calibrated", "cascade", "cascade, calibrated"])
def test_the_pipeline_runs_the_model_through_run_inference_and_gives_the_plain_verifiers_rows(
    model_dir, calibration, case
):
    with OpenAIServer() as server:
        verifier, config = configs(model_dir, calibration, server)[case]
        expected = plain_rows(verifier, config)
        p, out = verify(fn_api(), verifier, config)
        assert_that(out[AUDITED] | beam.Map(row), equal_to(expected), label="SameRows")
        assert_that(out[DEAD_LETTERS], equal_to([]), label="NoDeadLetters")
        labels = stage_labels(p)
        result = p.run()
        result.wait_until_finish()
    assert any(label.endswith("ModelStage/RunModel/BeamML_RunInference") for label in labels), labels
    assert not any("PlanJudgeWork" in label and "Model" in label for label in labels)
    pairs = counter(result, "pairs_to_score")
    assert pairs > 0 and counter(result, "num_inferences") == pairs  # every pair scored once, by RunInference
    decided = {d for r in expected for d in r[5]}
    assert "model" in decided and (verifier == "model") == (decided <= {"model", "claim_filter"})
    if verifier == "cascade":
        assert {"heuristic", "openai"} <= decided
    digest = Calibration.load(calibration).digest if "calibrated" in case else None
    assert {r[3] for r in expected} == {digest}


def test_pairs_of_many_responses_share_model_calls(model_dir):
    """Beam batches pairs across responses: fewer ONNX Runtime calls than responses, each pair counted once."""
    many = {f"r-{i}": f"{MODEL_SURE} {MODEL_UNSURE}" for i in range(12)}
    p, out = verify(fn_api(), "model", {"model_path": model_dir, "model_batch_size": 16}, parsed(many))
    assert_that(out[AUDITED] | beam.Map(lambda a: tuple(a.decided_by)), equal_to([("model", "model")] * 12))
    result = p.run()
    result.wait_until_finish()
    [batches] = result.metrics().query(MetricsFilter().with_name("inference_batch_latency_micro_secs"))["distributions"]
    assert counter(result, "num_inferences") == counter(result, "pairs_to_score") > 12
    assert batches.committed.count < 12


def _load_failure(dead) -> tuple[str, bool, bool]:
    return dead.stage, "did not load" in dead.error, "ModelLoadError" in dead.error


@pytest.mark.server
def test_a_model_that_fails_to_load_on_the_worker_sends_its_responses_to_the_dead_letters(model_dir, tmp_path):
    """The folder loads when the graph is built, then breaks before the run: no crash; every response the model
    had to score is a dead letter naming the reason, the heuristic's sure ones are audited, and counts add up."""
    folder = shutil.copytree(model_dir, tmp_path / "nli")
    with OpenAIServer() as server:
        config = {"base_url": server.base_url, "model": "m", "model_path": str(folder), "band": CASCADE_BAND}
        p, out = verify(fn_api(), "cascade", config)
        (folder / "model.onnx").write_bytes(b"not an onnx file any more")
        reasons = out[DEAD_LETTERS] | beam.Map(_load_failure)
        assert_that(reasons, equal_to([("verify", True, True)] * 4), label="DeadLetters")
        assert_that(out[AUDITED] | beam.Map(lambda a: a.parsed.response.response_id), equal_to(["r-3"]), label="Kept")
        p.run().wait_until_finish()


def test_one_failing_pair_dead_letters_only_its_own_response(model_dir):
    """A poison pair fails its whole batch; the batch is scored again pair by pair, so the other responses in it
    keep their verdicts."""
    answers = {**{f"ok-{i}": MODEL_SURE for i in range(3)}, "bad": f"The {POISON} patient was prescribed metoprolol."}
    p, out = verify(fn_api(), "model", {"model_path": model_dir}, parsed(answers))
    assert_that(out[AUDITED] | beam.Map(lambda a: a.parsed.response.response_id), equal_to(["ok-0", "ok-1", "ok-2"]))
    errors = out[DEAD_LETTERS] | beam.Map(lambda d: ("ModelRunError" in d.error, "out of data bounds" in d.error))
    assert_that(errors, equal_to([(True, True)]), label="Poison")
    result = p.run()
    result.wait_until_finish()
    assert counter(result, "failed_batches_counter") >= 2  # the shared batch, then the poison pair alone


@pytest.mark.server
def test_the_judge_path_records_the_calibration_file(calibration):
    """`responses.calibration_sha256` is set when the cascade's bands come from a calibration file, the judge's
    RunInference path included (no model)."""
    with OpenAIServer() as server:
        config = {"base_url": server.base_url, "model": "m", "calibration": calibration}
        p, out = verify(fn_api(), "cascade", config, parsed({"r-1": f"{COPIED} {MODEL_UNSURE}"}))
        digests = out[AUDITED] | beam.Map(lambda a: a.calibration_sha256)
        assert_that(digests, equal_to([Calibration.load(calibration).digest]))
        p.run().wait_until_finish()


@pytest.mark.prism
@needs_prism
@pytest.mark.parametrize("mode", ["batch", "streaming"])
def test_prism_gives_the_rows_the_fn_api_runner_gives(model_dir, calibration, mode):
    with OpenAIServer() as server:
        verifier, config = configs(model_dir, calibration, server)["cascade"]
        expected = plain_rows(verifier, config)
        p, out = verify(prism_options(*(["--streaming"] if mode == "streaming" else [])), verifier, config)
        assert_that(out[AUDITED] | beam.Map(row), equal_to(expected), label="SameRows")
        p.run().wait_until_finish()
    assert any("ModelStage/RunModel" in label for label in stage_labels(p))


def test_monitor_takes_the_model_flags_audit_takes(model_dir, tmp_path, capsys):
    """One option group for both commands: `monitor --help` lists the model flags, and a bad `--model-path` is
    refused by the model stage's own check (exit 2, the flag named) before any Kafka connection."""
    with pytest.raises(SystemExit):
        groundwatch(["monitor", "--help"])
    shown = capsys.readouterr().out
    for flag in ("--model-path", "--model-top-k", "--model-max-length", "--model-batch-size", "--model-band"):
        assert flag in shown
    kafka = ["monitor", "--bootstrap-servers", "127.0.0.1:1", "--until-caught-up", "--lake", str(tmp_path / "lake")]
    code = groundwatch([*kafka, "--verifier", "model", "--model-path", str(tmp_path / "nowhere")])
    assert code == 2 and f"--model-path {tmp_path / 'nowhere'}: not a folder" in capsys.readouterr().err


def test_a_response_whose_pairs_cannot_be_planned_is_a_dead_letter_not_a_crash():
    """With the model alone no heuristic reads the evidence before the model stage plans its pairs: an error
    there is the response's dead letter, with its bytes, not the end of the run."""
    from transforms.verify.base import prepare_sentences
    from transforms.verify.judge.pipeline import _Plan
    from transforms.verify.model.pipeline import _PairsDoFn

    [one] = parsed({"r-1": COPIED})
    prepared = prepare_sentences(one.response.answer)
    now = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
    plan = _Plan(one, (), True, now, now, now, prepared=prepared, undecided=(len(prepared.claims) + 5,))
    [out] = list(_PairsDoFn(3).process(("r-1", plan)))
    assert out.tag == DEAD_LETTERS and out.value.stage == "verify" and "IndexError" in out.value.error
    assert out.value.raw_payload == one.response.model_dump_json().encode("utf-8")
