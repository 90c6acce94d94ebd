"""The heuristic's typed config: a JSON round trip, strictness, and cue modes that assert, doubt or stay off."""

from __future__ import annotations

import pydantic
import pytest

from schemas import AttributionVerdict, EvidencePassage
from transforms.verify.heuristic.config import CUES, DEFAULT_CONFIG, HeuristicConfig
from transforms.verify.heuristic.verifier import HeuristicVerifier

V = AttributionVerdict
POTASSIUM = [EvidencePassage(doc_id="e1", content="Lab results showed potassium at 4.2 mmol/L.")]
PAINTING = [EvidencePassage(doc_id="e1", content="The museum purchased the old painting from the dealer in 1990.")]


def _verdict(sentence, evidence, config):
    [verdict] = HeuristicVerifier(config=config).verify([sentence], evidence).verdicts
    return verdict


def test_config_round_trips_through_json_and_a_dict():
    config = DEFAULT_CONFIG.with_cue_mode("negation", "off").model_copy(update={"midpoint": 1.3, "max_sources": 2})
    assert HeuristicConfig.model_validate_json(config.model_dump_json()) == config
    assert HeuristicConfig.model_validate(config.model_dump()) == config
    assert HeuristicConfig.model_validate_json(DEFAULT_CONFIG.model_dump_json()) == DEFAULT_CONFIG
    assert config != DEFAULT_CONFIG and config.cues.negation == "off" and DEFAULT_CONFIG.cues.negation == "assert"


def test_config_is_frozen_strict_and_documented():
    with pytest.raises(pydantic.ValidationError):
        DEFAULT_CONFIG.midpoint = 2.0
    with pytest.raises(pydantic.ValidationError):
        HeuristicConfig(midpont=1.3)  # a misspelt setting is an error, not a silent default
    with pytest.raises(pydantic.ValidationError):
        HeuristicConfig(support_threshold=1.5)
    with pytest.raises(ValueError, match="unknown cue"):
        DEFAULT_CONFIG.with_cue_mode("telepathy", "doubt")
    assert set(CUES) == set(DEFAULT_CONFIG.cues.model_dump())
    for name, field in HeuristicConfig.model_fields.items():
        assert field.description, f"{name} has no docstring"


def test_verifier_takes_a_config_or_a_dict_and_rejects_anything_else():
    assert HeuristicVerifier().config is DEFAULT_CONFIG
    assert HeuristicVerifier(config={"midpoint": 1.3}).config.midpoint == 1.3
    with pytest.raises(TypeError):
        HeuristicVerifier(config=[("midpoint", 1.3)])


def test_a_setting_of_the_config_changes_the_verdict():
    sentence = "Lab results showed potassium at 4.2 mmol/L."
    assert _verdict(sentence, POTASSIUM, DEFAULT_CONFIG).attribution_verdict == V.fully_grounded
    strict = DEFAULT_CONFIG.model_copy(update={"midpoint": 4.0})  # far more support needed
    assert _verdict(sentence, POTASSIUM, strict).attribution_verdict != V.fully_grounded


def test_a_doubting_cue_lowers_confidence_instead_of_asserting_contradicted():
    sentence = "Lab results showed potassium at 3.1 mmol/L."
    asserted = _verdict(sentence, POTASSIUM, DEFAULT_CONFIG.with_cue_mode("quantity", "assert"))
    doubted = _verdict(sentence, POTASSIUM, DEFAULT_CONFIG.with_cue_mode("quantity", "doubt"))
    assert asserted.attribution_verdict == V.contradicted and asserted.confidence >= 0.8
    assert doubted.attribution_verdict != V.contradicted
    assert not doubted.contradicting_evidence_ids
    assert doubted.confidence < asserted.confidence - 0.1  # unsure: a cascade sends it on
    assert doubted.grounded_probability < DEFAULT_CONFIG.support_threshold  # still not called grounded
    assert "doubt (quantity): '3.1 mmol/L' but the evidence says '4.2 mmol/L'" in doubted.provenance_notes


def test_replaced_words_doubts_by_default_and_asserts_when_switched():
    sentence = "The museum stole the old painting from the collector in 1990."
    default = _verdict(sentence, PAINTING, DEFAULT_CONFIG)
    asserted = _verdict(sentence, PAINTING, DEFAULT_CONFIG.with_cue_mode("replaced_words", "assert"))
    assert asserted.attribution_verdict == V.contradicted
    assert default.attribution_verdict == V.partially_grounded
    assert default.confidence < asserted.confidence
    assert "doubt (replaced_words)" in default.provenance_notes


def test_a_cue_switched_off_is_not_tried():
    sentence = "Lab results showed potassium at 3.1 mmol/L."
    config = DEFAULT_CONFIG.with_cue_mode("quantity", "off")
    verdict = _verdict(sentence, POTASSIUM, config)
    assert verdict.attribution_verdict != V.contradicted
    assert "'3.1 mmol/L' but the evidence says" not in verdict.provenance_notes


def test_word_weights_come_from_the_config():
    from transforms.text.tokens import tokenize

    tokens = tokenize("The Acme merger significantly expanded")
    assert [DEFAULT_CONFIG.word_weight(t) for t in tokens] == [0.0, 1.5, 1.0, 0.35, 1.2]
    heavier = DEFAULT_CONFIG.model_copy(update={"name_weight": 2.0, "common_word_weight": 0.1})
    assert [heavier.word_weight(t) for t in tokens] == [0.0, 2.0, 1.0, 0.1, 1.2]
