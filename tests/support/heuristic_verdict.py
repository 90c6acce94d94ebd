"""The heuristic verifier's verdict on one sentence against one passage, shared by the heuristic's tests."""

from __future__ import annotations

from schemas import EvidencePassage, SentenceVerdict
from transforms.verify.heuristic.config import HeuristicConfig
from transforms.verify.heuristic.verifier import HeuristicVerifier


def verdict_on(
    sentence: str, evidence: str, doc_id: str = "e1", *, config: HeuristicConfig | None = None
) -> SentenceVerdict:
    """Verify `sentence` against a single passage `evidence` (id `doc_id`) with the real verifier."""
    verifier = HeuristicVerifier(config=config)
    [verdict] = verifier.verify([sentence], [EvidencePassage(doc_id=doc_id, content=evidence)]).verdicts
    return verdict
