"""The cascade's gate escalates by the calibration file's verdict model, not by its score-only knots."""

from schemas.reports import SentenceVerdict
from transforms.verify.calibration import Calibration, StageCalibration, VerdictModel
from transforms.verify.model.cascade import StageGate

# Knots that put every score at 0.5, inside the band; a model that is sure of a confident grounded verdict and of
# a contradicted one, and unsure of an ungrounded one.
FLAT_KNOTS = ((0.0, 1.0), (0.5, 0.5))
MODEL = VerdictModel(0.0, (2.0, 0.0, -6.0, 0.0, 0.0))


def _gate(model: VerdictModel | None) -> StageGate:
    stage = StageCalibration(*FLAT_KNOTS, escalate=(0.3, 0.7), model=model)
    return StageGate.of(Calibration({"heuristic": stage}, target_accuracy=0.9), "heuristic")


def _verdict(verdict: str, confidence: float) -> SentenceVerdict:
    return SentenceVerdict(sentence_index=0, sentence_text="s", attribution_verdict=verdict, confidence=confidence)


def test_the_gate_follows_the_verdict_model_where_it_disagrees_with_the_knots():
    gate = _gate(MODEL)
    assert not gate.escalates(_verdict("fully_grounded", 0.99))
    assert not gate.escalates(_verdict("contradicted", 0.9))
    assert gate.escalates(_verdict("ungrounded", 0.6))


def test_without_a_verdict_model_the_gate_uses_the_knots():
    gate = _gate(None)
    assert gate.escalates(_verdict("fully_grounded", 0.99))
    assert gate.escalates(_verdict("contradicted", 0.9))
