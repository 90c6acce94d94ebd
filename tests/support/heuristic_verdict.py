"""The heuristic verifier's verdict on one sentence against one passage, shared by the heuristic's tests."""

from __future__ import annotations

from schemas import EvidencePassage, SentenceVerdict
from transforms.verify.heuristic.verifier import HeuristicVerifier


def verdict_on(sentence: str, evidence: str, doc_id: str = "e1") -> SentenceVerdict:
    """Verify `sentence` against a single passage `evidence` (id `doc_id`) with the real verifier."""
    [verdict] = HeuristicVerifier().verify([sentence], [EvidencePassage(doc_id=doc_id, content=evidence)]).verdicts
    return verdict
