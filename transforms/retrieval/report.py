"""The audit's retrieval step: one response's `RetrievalReport`, from what the sentence audit already found.

    audited = score_retrieval_step(audited)     # the AuditedResponse with `retrieval` filled
    audited.retrieval.mean_context_relevance, audited.retrieval.empty_retrieval

It runs after the sentence audit, because evidence use needs its verdicts (which passages each supported
sentence drew on), and reuses its split of the answer: the answer relevance is computed on the claim
sentences the verifier kept, not on a second split. Ranks count only when every passage logged one: a
partly ranked list has no reliable top passage.
"""

from __future__ import annotations

from schemas import AuditedResponse
from schemas.responses import EvidencePassage
from schemas.retrieval import PassageRetrieval, RetrievalReport
from transforms.retrieval.evidence_use import passages_used_share, sentence_supports, top_passage_support_share
from transforms.retrieval.relevance import DEFAULT_CONFIG, RelevanceConfig, score_retrieval

__all__ = ["logged_ranks", "retrieval_report", "score_retrieval_step"]


def logged_ranks(evidence: list[EvidencePassage]) -> dict[str, int] | None:
    """Each passage's logged rank by doc_id, or None unless every passage logged one."""
    if not evidence or any(p.rank is None for p in evidence):
        return None
    return {p.doc_id: p.rank for p in evidence if p.rank is not None}


def retrieval_report(audited: AuditedResponse, config: RelevanceConfig = DEFAULT_CONFIG) -> RetrievalReport:
    """The retrieval scores of one audited response (its sentence audit done)."""
    response = audited.parsed.response
    claims = [v.sentence_text for v in audited.report.sentences if v.is_claim]
    scores = score_retrieval(
        response.query,
        {p.doc_id: p.content for p in response.evidence},
        response.answer,
        config,
        claim_sentences=claims,
    )
    supports = sentence_supports(audited.report.sentences)
    used = {pid for supported, ids in supports if supported for pid in ids}
    passages = [
        PassageRetrieval(
            passage_index=i,
            doc_id=p.doc_id,
            rank=p.rank,
            retriever_score=p.score,
            context_relevance=scores.passage_relevance[p.doc_id],
            used=p.doc_id in used,
        )
        for i, p in enumerate(response.evidence)
    ]
    return RetrievalReport(
        passages=passages,
        mean_context_relevance=scores.mean_context_relevance,
        max_context_relevance=scores.max_context_relevance,
        answer_relevance=scores.answer_relevance,
        empty_retrieval=scores.empty_retrieval,
        passages_used_share=passages_used_share(supports, [p.doc_id for p in response.evidence]),
        top_passage_support_share=top_passage_support_share(supports, logged_ranks(response.evidence)),
    )


def score_retrieval_step(audited: AuditedResponse) -> AuditedResponse:
    """The audited response with its retrieval report: an audit step (`transforms.audit.stages.AuditStep`)."""
    return audited.model_copy(update={"retrieval": retrieval_report(audited)})
