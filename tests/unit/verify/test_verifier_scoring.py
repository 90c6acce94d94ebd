"""The scoring every verifier shares: faithfulness, critical flags, INSUFFICIENT_EVIDENCE."""

from datetime import date

from schemas import INSUFFICIENT_EVIDENCE, EvidencePassage, SentenceVerdict
from transforms.verify.base import (
    VerificationResult,
    Verifier,
    audit_sentences,
    build_report,
    critical_flags,
    faithfulness_score,
)


def verdict(index, kind, confidence):
    return SentenceVerdict(
        sentence_index=index, sentence_text=f"s{index}", attribution_verdict=kind, confidence=confidence
    )


VERDICTS = [
    verdict(0, "fully_grounded", 0.95),
    verdict(1, "partially_grounded", 0.6),
    verdict(2, "contradicted", 0.9),
    verdict(3, "ungrounded", 0.8),
]


def test_faithfulness_weights_partial_support_by_half():
    assert faithfulness_score(VERDICTS) == (1 + 0.5 + 0 + 0) / 4
    assert faithfulness_score([]) == 0.0


def test_critical_flags_name_each_bad_or_unsure_sentence():
    assert critical_flags(VERDICTS, 0.7) == [
        "sentence 1: confidence 0.60 below 0.70",
        "sentence 2: contradicted",
        "sentence 3: ungrounded",
    ]
    assert critical_flags(VERDICTS, 0.5) == ["sentence 2: contradicted", "sentence 3: ungrounded"]


def test_report_for_empty_evidence_has_no_sentences_and_the_flag():
    report = build_report("a", [], threshold=0.7, verification_date=date(2026, 11, 29), evidence_empty=True)
    assert report.sentences == [] and report.critical_flags == [INSUFFICIENT_EVIDENCE]


class EverythingUngrounded(Verifier):
    """A verifier that counts its calls, to show blank evidence never reaches a verifier."""

    name = "counting"

    def __init__(self):
        self.calls = 0

    def verify(self, sentences, evidence):
        self.calls += 1
        return VerificationResult.decided(self.name, [verdict(i, "ungrounded", 0.9) for i, _ in enumerate(sentences)])


def test_blank_evidence_short_circuits_and_sentences_are_split_otherwise():
    verifier = EverythingUngrounded()
    blank = [EvidencePassage(doc_id="1", content="   ")]
    report, result = audit_sentences("a", "One. Two.", blank, verifier, verification_date=date(2026, 1, 1))
    assert (report.critical_flags, result.decided_by, verifier.calls) == ([INSUFFICIENT_EVIDENCE], (), 0)

    real = [EvidencePassage(doc_id="1", content="text")]
    report, result = audit_sentences("a", "One. Two.", real, verifier, verification_date=date(2026, 1, 1))
    assert [s.sentence_index for s in report.sentences] == [0, 1]
    assert result.decided_by == ("counting", "counting")
    assert report.overall_faithfulness_score == 0.0
