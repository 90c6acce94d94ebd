"""One value, one meaning: the verifier's probability that a sentence is fully grounded is derived in one place.

The spec's `confidence` is confidence in the verdict given; the grounded probability is its other reading
(`schemas.reports.grounded_probability`, `SentenceVerdict.grounded_probability`, and for lake files written
before the `sentences` table stored it, `GROUNDED_PROBABILITY_SQL`, which the lake's reader applies). Every
other module reads the value: no Python or SQL of the product flips a confidence back by itself, and the
helpers that used to (under five names) stay gone.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from schemas import AttributionVerdict, SentenceVerdict, grounded_probability, verdict_confidence

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("schemas", "transforms", "pipelines", "dashboards", "scripts")
THE_ONE_PLACE = Path("schemas/reports.py")

FLIPS = {
    "a confidence complemented": re.compile(r"\b1(?:\.0*)?\s*-\s*(?:\w+\.)*confidence\b", re.IGNORECASE),
    "a CASE on the verdict choosing confidence": re.compile(
        r"THEN\s+(?:\w+\.)?confidence\s+ELSE", re.IGNORECASE | re.DOTALL
    ),
    "a retired name of the grounded probability": re.compile(
        r"\b(?:grounded_score|positive_score|attribution_confidence\s*\(|attribution_confidences)\b"
    ),
}


def _sources() -> list[Path]:
    files = [p for folder in SOURCES for ext in ("*.py", "*.sql") for p in (ROOT / folder).rglob(ext)]
    return sorted(p for p in files if "__pycache__" not in p.parts)


def test_no_module_but_the_one_place_flips_a_confidence():
    found = []
    for path in _sources():
        relative = path.relative_to(ROOT)
        if relative == THE_ONE_PLACE:
            continue
        text = path.read_text(encoding="utf-8")
        for what, pattern in FLIPS.items():
            found += [f"{relative}:{text.count(chr(10), 0, m.start()) + 1}: {what}" for m in pattern.finditer(text)]
    assert not found, "read `grounded_probability` instead:\n" + "\n".join(found)


def test_the_patterns_catch_the_flips_they_name():
    flips = [
        "p = 1.0 - verdict.confidence",
        "ELSE 1 - s.confidence END",
        "CASE WHEN attribution_verdict = 'fully_grounded' THEN confidence ELSE 1 - confidence END",
        "from transforms.verify.calibration import grounded_score",
    ]
    assert all(any(p.search(text) for p in FLIPS.values()) for text in flips)
    assert not any(p.search("threshold = mean * (1 - config.max_confidence_drop)") for p in FLIPS.values())


@pytest.mark.parametrize("verdict", list(AttributionVerdict))
def test_the_grounded_probability_of_each_verdict(verdict):
    v = SentenceVerdict(sentence_index=0, sentence_text="x", attribution_verdict=verdict, confidence=0.8)
    expected = 0.8 if verdict is AttributionVerdict.fully_grounded else pytest.approx(0.2)
    assert v.grounded_probability == expected == grounded_probability(verdict.value, 0.8)
    assert verdict_confidence(verdict, v.grounded_probability) == pytest.approx(0.8)
    assert "grounded_probability" not in v.model_dump()  # the spec's verdict keeps the spec's fields
