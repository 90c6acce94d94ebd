"""The model stage on a tiny real ONNX cross-encoder built here (`tests.support.tiny_nli`): loading, inference,
the verdict mapping, the cascade's routing (heuristic, model, judge) against the scripted judge server, the
`decided_by` column of a real audit lake, and the failure paths (a model that does not load, one that fails on
one input)."""

from __future__ import annotations

import json

import apache_beam as beam
import pytest
from apache_beam.ml.inference.base import RunInference
from apache_beam.testing.test_pipeline import TestPipeline as BeamPipeline
from apache_beam.testing.util import assert_that, equal_to

from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from schemas import AttributionVerdict, EvidencePassage
from tests.support.audit_messages import EVIDENCE, message, raw
from tests.support.model_answers import (
    COPIED,
    MODEL_SURE,
    MODEL_UNSURE,
    NEGATED,
    UNRELATED,
    write_answer_model,
    write_identity_calibration,
)
from tests.support.openai_server import OpenAIServer, data_document
from tests.support.tiny_nli import POISON, write_tiny_model
from transforms.verify.calibration import Calibration
from transforms.verify.heuristic.verifier import HeuristicVerifier
from transforms.verify.model.files import ModelLoadError
from transforms.verify.model.handler import PairModelHandler
from transforms.verify.model.scorer import ModelRunError, PairScorer, load_scorer
from transforms.verify.registry import make_verifier

PASSAGES = [EvidencePassage(**e) for e in EVIDENCE]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return write_answer_model(tmp_path_factory.mktemp("model") / "nli")


def judged_indexes(server) -> list[list[int]]:
    """The sentence indexes of each answer the judge was sent."""
    answers = [a for r in server.requests for a in data_document(r)["answers"]]
    return [[s["sentence_index"] for s in a["sentences"]] for a in answers]


def verdicts(model_dir, sentences, **options):
    return make_verifier("model", model_path=model_dir, **options).verify(sentences, PASSAGES)


def test_the_model_scores_pairs_and_cuts_long_ones(model_dir):
    scorer = load_scorer(model_dir)
    entailed, negated, unrelated = scorer.score(
        [(EVIDENCE[1]["content"], "Potassium was 4.2 mmol/L."), (EVIDENCE[1]["content"], NEGATED), (COPIED, UNRELATED)]
    )
    assert entailed.entailment > 0.9 and negated.contradiction > 0.9
    assert unrelated.entailment < 0.2 and unrelated.neutral > 0.5
    assert load_scorer(model_dir) is scorer  # one model per process
    short = PairScorer(model_dir, max_length=16)
    long_claim = " ".join(["potassium"] * 400)
    assert len(short._tokenizer.encode(COPIED, long_claim).ids) == 16  # cut to the model's length
    [cut] = short.score([(COPIED, long_claim)])
    assert 0.0 <= cut.entailment <= 1.0


def test_verdicts_map_the_probabilities_to_the_spec_fields(model_dir):
    result = verdicts(model_dir, [MODEL_SURE, NEGATED, UNRELATED, MODEL_UNSURE])
    sure, negated, unrelated, unsure = result.verdicts
    assert result.decided_by == ("model",) * 4
    assert sure.attribution_verdict is AttributionVerdict.fully_grounded and sure.confidence > 0.9
    assert sure.supporting_evidence_ids == ["2"] and sure.supporting_evidence_excerpts == [EVIDENCE[1]["content"]]
    assert sure.unsupported_spans == [] and sure.contradicting_evidence_ids == []
    assert negated.attribution_verdict is AttributionVerdict.contradicted
    assert negated.contradicting_evidence_ids == ["2"] and negated.supporting_evidence_ids == []
    assert negated.contradicting_evidence_excerpts[0] in EVIDENCE[1]["content"]
    assert unrelated.attribution_verdict is AttributionVerdict.ungrounded  # the heuristic's coverage is low
    assert unrelated.supporting_evidence_ids == [] and unrelated.unsupported_spans
    assert unsure.attribution_verdict is AttributionVerdict.fully_grounded and 0.6 < unsure.confidence < 0.8
    # confidence reads as the model's P(entailed) for the calibration file
    assert unrelated.grounded_probability == pytest.approx(1 - unrelated.confidence)
    assert all("model: entailment" in v.provenance_notes for v in result.verdicts)


def test_only_the_top_k_best_aligned_evidence_sentences_are_scored(model_dir):
    passages = [EvidencePassage(doc_id=f"d{i}", content=f"Lab results showed potassium on day {i}.") for i in range(6)]
    verifier = make_verifier("model", model_path=model_dir, model_top_k=2)
    [v] = verifier.verify(["Lab results showed potassium at 4.2 mmol/L."], passages).verdicts
    assert "(2 scored)" in v.provenance_notes
    [v] = make_verifier("model", model_path=model_dir).verify(["Lab results showed potassium."], passages).verdicts
    assert "(3 scored)" in v.provenance_notes  # default 3


def test_a_binary_head_never_says_contradicted(tmp_path):
    folder = write_tiny_model(tmp_path / "binary", NEGATED.lower().split(), labels=("consistent", "inconsistent"))
    [v] = make_verifier("model", model_path=folder).verify([NEGATED], PASSAGES).verdicts
    assert v.attribution_verdict is not AttributionVerdict.contradicted


@pytest.mark.server
def test_the_cascade_routes_each_stage_only_what_the_one_before_left_open(model_dir, tmp_path):
    sentences = [COPIED, MODEL_SURE, MODEL_UNSURE]
    p = [v.grounded_probability for v in HeuristicVerifier().verify(sentences, PASSAGES).verdicts]
    assert p[0] > max(p[1], p[2])  # the heuristic is surest of the copied sentence
    cal = write_identity_calibration(tmp_path / "cal.json", (min(p[1], p[2]), max(p[1], p[2])), (0.3, 0.8))
    with OpenAIServer() as server:
        cascade = make_verifier(
            "cascade",
            base_url=server.base_url,
            model="scripted-judge",
            model_path=model_dir,
            calibration=Calibration.load(cal),
        )
        result = cascade.verify(sentences, PASSAGES)
        asked = judged_indexes(server)
    assert result.decided_by == ("heuristic", "model", "openai")
    assert asked == [[2]]  # the judge saw only what the model left uncertain
    assert result.judge_status == "judged"
    assert "model: entailment" in result.verdicts[1].provenance_notes
    assert "model:" not in result.verdicts[0].provenance_notes  # the model never saw what the heuristic decided
    assert "+model-" in cascade.version


@pytest.mark.server
def test_without_a_model_the_cascade_stays_heuristic_then_judge(tmp_path):
    with OpenAIServer() as server:
        cascade = make_verifier("cascade", base_url=server.base_url, model="m", band=(0.5, 0.85))
        result = cascade.verify([COPIED, MODEL_SURE], PASSAGES)
    assert result.decided_by == ("heuristic", "openai")


def test_the_model_runs_through_run_inference_and_a_failing_input_is_a_dead_letter(model_dir):
    pairs = [(EVIDENCE[1]["content"], "Potassium was 4.2 mmol/L."), (COPIED, f"{POISON} was prescribed")]
    with BeamPipeline(runner="FnApiRunner") as p:
        scored, failed = (
            p | beam.Create(pairs) | RunInference(PairModelHandler(model_dir, batch_size=1)).with_exception_handling()
        )
        kinds = scored | beam.Map(lambda r: (r.example[1], r.inference.entailment > 0.9))
        assert_that(kinds, equal_to([("Potassium was 4.2 mmol/L.", True)]), label="Scored")
        reasons = failed.failed_inferences | beam.Map(lambda f: (f[0][0][1], "out of data bounds" in str(f[1][1])))
        assert_that(reasons, equal_to([(f"{POISON} was prescribed", True)]), label="Failed")


def test_a_model_that_fails_on_one_input_raises_a_clear_error(model_dir):
    verifier = make_verifier("model", model_path=model_dir)
    with pytest.raises(ModelRunError, match="out of data bounds"):
        verifier.verify([f"The {POISON} patient was prescribed metoprolol."], PASSAGES)
    assert not ModelRunError.retryable


def test_models_that_do_not_load_fail_naming_the_flag(model_dir, tmp_path):
    with pytest.raises(ModelLoadError, match="--model-path .*missing model.onnx"):
        make_verifier("model", model_path=str(tmp_path))
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("tokenizer.json", "labels.json"):
        (broken / name).write_bytes(open(f"{model_dir}/{name}", "rb").read())
    (broken / "model.onnx").write_bytes(b"not an onnx file")
    with pytest.raises(ModelLoadError, match="--model-path .*cannot load model.onnx"):
        make_verifier("model", model_path=str(broken))
    wrong = write_tiny_model(tmp_path / "wrong", ["potassium"])
    (tmp_path / "wrong" / "labels.json").write_text(json.dumps({"labels": ["entailment", "contradiction"]}))
    with pytest.raises(ModelLoadError, match="--model-path .*labels.json names 2 outputs"):
        make_verifier("model", model_path=wrong)
    with pytest.raises(ValueError, match="--verifier model needs --model-path"):
        make_verifier("model")


def test_audit_refuses_a_bad_model_path_with_exit_2(tmp_path, capsys):
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_bytes(raw(message("r-1")) + b"\n")
    code = groundwatch(
        ["audit", "--input", str(traffic), "--lake", str(tmp_path / "lake"), "--verifier", "model",
         "--model-path", str(tmp_path / "nowhere")]
    )  # fmt: skip
    assert code == 2 and "--model-path" in capsys.readouterr().err


def audit(tmp_path, answers, *flags):
    traffic = tmp_path / "traffic.jsonl"
    lines = [raw(message(rid, answer=answer)) for rid, answer in answers.items()]
    traffic.write_bytes(b"\n".join(lines) + b"\n")
    lake = tmp_path / "lake"
    args = ["audit", "--input", str(traffic), "--lake", str(lake), "--window-seconds", "3600", *flags]
    assert groundwatch(args) == 0
    return connect_lake(str(lake))


@pytest.mark.server
def test_the_lake_records_which_stage_decided_each_sentence(model_dir, tmp_path):
    answer = " ".join([COPIED, MODEL_SURE, NEGATED, MODEL_UNSURE])
    with OpenAIServer() as server:
        con = audit(
            tmp_path, {"r-1": answer}, "--verifier", "cascade", "--model-path", model_dir, "--cascade-band",
            "0.5,0.85", "--judge-base-url", server.base_url, "--judge-model", "scripted-judge",
        )  # fmt: skip
        asked = judged_indexes(server)
    rows = con.execute("SELECT decided_by FROM sentences ORDER BY sentence_index").fetchall()
    assert [r[0] for r in rows] == ["heuristic", "model", "model", "openai"]
    assert asked == [[3]]
    [(version,)] = con.execute("SELECT DISTINCT verifier_version FROM responses").fetchall()
    assert "+model-" in version


def test_a_response_the_model_fails_on_is_dead_lettered_and_the_run_goes_on(model_dir, tmp_path):
    answers = {"r-ok": MODEL_SURE, "r-bad": f"The {POISON} patient was prescribed metoprolol."}
    con = audit(tmp_path, answers, "--verifier", "model", "--model-path", model_dir)
    decided = con.execute("SELECT response_id, list_distinct(list(decided_by)) FROM sentences GROUP BY 1").fetchall()
    assert decided == [("r-ok", ["model"])]
    [(stage, error, original)] = con.execute("SELECT stage, error, raw_payload FROM dead_letters").fetchall()
    assert stage == "verify" and "ModelRunError" in error and "out of data bounds" in error
    assert b"r-bad" in bytes(original)
