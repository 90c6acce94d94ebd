"""Checks that agree: where the sentence verdict, the citation audit and the claim check tell different stories.

Three checks look at the same sentence from different sides: the sentence verifier (against all the evidence),
the citation audit (against the one passage cited) and the claim check (a generator-logged claim against the
passages it names). When they disagree, one of them is wrong, and neither may stay silent. The rule:

1. A citation that FAILs as CONTRADICTS on a sentence called `fully_grounded`: the two disagree; the response
   goes to review with `checks_disagree` (a passage the answer cites says otherwise, whatever another passage
   supports).
2. A citation that FAILs as UNRELATED on a sentence called `fully_grounded`:
   - if the sentence's support comes from other passages than the cited one, there is no disagreement: the
     sentence is grounded and the citation points to the wrong passage (its FAIL, `misattributed`, stands in the
     citation audit and routes as citation failures do);
   - if the sentence's support includes the cited passage, the two checks read the same passage both ways:
     `checks_disagree`.
3. A logged claim whose own check (against the passages it names) says `contradicted` while the sentence that
   states it is `fully_grounded`, or the other way round: `checks_disagree`. `ungrounded` against
   `fully_grounded` follows rule 2: a disagreement only when the claim's passages are among the sentence's
   support (otherwise the claim names the wrong source, which its own issues already say). A claim states a
   sentence when, lower-cased and with punctuation dropped, one text contains the other or at least 80% of the
   claim's words are in the sentence (the sentence with most of them).

Partially grounded against either side is not a disagreement: the two checks differ in granularity there. The
same rule holds wherever routing runs (`decide_review`): the pipelines, `serve` and `gate`::

    reasons = disagreements(audited)   # ["checks_disagree: sentence 2 fully_grounded but citation [1] ..."]
"""

from __future__ import annotations

import re

from schemas import AttributionVerdict, AuditedResponse, SentenceVerdict

__all__ = ["CHECKS_DISAGREE", "claim_sentence", "disagreements"]

CHECKS_DISAGREE = "checks_disagree"
"""The review reason's prefix when two checks of one sentence disagree."""
_WORD_SHARE = 0.8
_NOT_GROUNDED = (AttributionVerdict.contradicted, AttributionVerdict.ungrounded)
_WORD = re.compile(r"[^\W_]+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def claim_sentence(claim_text: str, sentences: list[SentenceVerdict]) -> SentenceVerdict | None:
    """The claim sentence that states a logged claim (see the module docstring), or None."""
    claim = _words(claim_text)
    if not claim:
        return None
    joined = " ".join(claim)
    best, best_share = None, 0.0
    for s in sentences:
        words = _words(s.sentence_text)
        if not s.is_claim or not words:
            continue
        text = " ".join(words)
        if joined in text or text in joined:
            return s
        share = len(set(claim) & set(words)) / len(set(claim))
        if share >= _WORD_SHARE and share > best_share:
            best, best_share = s, share
    return best


def _citation_reasons(audited: AuditedResponse, by_index: dict[int, SentenceVerdict]) -> list[str]:
    reasons = []
    for c in audited.citations.audit_results if audited.citations is not None else []:
        s = by_index.get(c.sentence_index) if c.sentence_index is not None else None
        if s is None or s.attribution_verdict is not AttributionVerdict.fully_grounded:
            continue
        if c.overall_verdict.value != "FAIL":
            continue
        level = c.claim_support_level.value
        same_passage = c.doc_id in s.supporting_evidence_ids
        if level == "CONTRADICTS" or (level == "UNRELATED" and same_passage):
            reasons.append(
                f"{CHECKS_DISAGREE}: sentence {s.sentence_index} fully_grounded but citation {c.citation_id} "
                f"(source {c.doc_id or 'none'}) {level}"
            )
    return reasons


def _claim_reasons(audited: AuditedResponse) -> list[str]:
    reasons = []
    claims = audited.claims.claims if audited.claims is not None else []
    for c in claims:
        if c.verified_verdict is None:
            continue
        s = claim_sentence(c.claim_text, audited.report.sentences)
        if s is None:
            continue
        sentence_grounded = s.attribution_verdict is AttributionVerdict.fully_grounded
        claim_grounded = c.verified_verdict is AttributionVerdict.fully_grounded
        same_passages = bool(set(c.source_doc_ids) & set(s.supporting_evidence_ids))
        claim_against = c.verified_verdict is AttributionVerdict.contradicted or (
            c.verified_verdict is AttributionVerdict.ungrounded and same_passages
        )
        if (sentence_grounded and claim_against) or (claim_grounded and s.attribution_verdict in _NOT_GROUNDED):
            reasons.append(
                f"{CHECKS_DISAGREE}: sentence {s.sentence_index} {s.attribution_verdict.value} but claim "
                f"{c.claim_index} checked {c.verified_verdict.value}"
            )
    return reasons


def disagreements(audited: AuditedResponse) -> list[str]:
    """One `checks_disagree` review reason per pair of checks that disagree on a claim sentence."""
    by_index = {s.sentence_index: s for s in audited.report.sentences if s.is_claim}
    return _citation_reasons(audited, by_index) + _claim_reasons(audited)
