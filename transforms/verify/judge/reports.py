"""The judge's citation audit and per-claim check, on top of the offline ones, as a Beam composite.

`JudgeReports(tasks, config)` runs after the offline `AuditCitations` and
`CheckClaimAttribution` steps. For each response in the judge sample it asks
the judge about every citation (task `citations`) and every logged claim
(task `claims`) through the same `RunInference` handler and harness as the
sentence audit, joins the outcomes back per window and merges them:

- citations: the judge settles support level, status, fidelity issues, excerpt and notes; what the
  offline audit establishes by exact checks stays (a missing source is fabricated and FAIL; a
  quote that is not in the passage fails whatever the judge says); the summary is recomputed;
- claims: `verified_verdict` / `verified_confidence` come from the judge, `overconfident` is
  recomputed from the generator's own confidence.

A task the judge could not settle keeps the offline report, and `judge_status` (the worst status
over the response's tasks) sends the response to review.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import apache_beam as beam
from apache_beam import PCollection
from apache_beam.ml.inference.base import RunInference

from schemas import (
    AttributionVerdict,
    AuditedResponse,
    CitationAuditReport,
    ClaimAttributionReport,
    ConfidenceLabel,
    OverallVerdict,
    VerificationStatus,
)
from schemas.base import utc_now
from transforms.verify.judge.config import JudgeConfig
from transforms.verify.judge.handler import JudgeModelHandler
from transforms.verify.judge.pipeline import failed_outcomes
from transforms.verify.judge.schema import CitationInput, ClaimInput, JudgeItem, JudgeOutcome, Passage, Task
from transforms.verify.judge.verifier import judge_sample_point

__all__ = ["JudgeReports", "merge_citations", "merge_claims", "report_items", "worst_status"]

_RANK = {None: 0, "judged": 1, "judge_validation_failed": 2, "judge_error": 3}
_HIGH_CONFIDENCE = 0.85  # as transforms.attribution.claims: a numeric confidence this high claims strong support


def worst_status(statuses: Sequence[str | None]) -> str | None:
    """The status that matters most for review: an error over a failed validation over a success."""
    return max(statuses, key=lambda s: _RANK[s], default=None)


def report_items(audited: AuditedResponse, tasks: Sequence[Task]) -> list[JudgeItem]:
    """The judge items for a response's citations and claims (citation ids become positions: markers repeat)."""
    r = audited.parsed.response
    passages = [Passage(evidence_id=p.doc_id, text=p.content) for p in r.evidence]
    items = []
    if Task.citations in tasks and audited.citations is not None and audited.citations.audit_results:
        citations = [
            CitationInput(citation_id=f"c{i}", cited_evidence_id=c.doc_id, claim_text=c.claim_summary, quote=c.quote)
            for i, c in enumerate(audited.citations.audit_results)
        ]
        items.append(
            JudgeItem(
                task=Task.citations, response_id=r.response_id, answer=r.answer, evidence=passages, citations=citations
            )
        )
    if Task.claims in tasks and audited.claims is not None and audited.claims.claims:
        claims = [
            ClaimInput(claim_index=c.claim_index, claim_text=c.claim_text, source_doc_ids=c.source_doc_ids)
            for c in audited.claims.claims
        ]
        items.append(
            JudgeItem(task=Task.claims, response_id=r.response_id, query=r.query, evidence=passages, claims=claims)
        )
    return items


def merge_citations(report: CitationAuditReport, outcome: JudgeOutcome, judge: str) -> CitationAuditReport:
    """The offline citation report with the judge's findings where the judge settled them."""
    judged = {j.citation_id: j for j in outcome.citation_judgments}
    results = []
    for i, old in enumerate(report.audit_results):
        j = judged.get(f"c{i}")
        if j is None or old.verification_status is VerificationStatus.fabricated:
            results.append(old)
            continue
        quote_failed = old.quote_accurate is False
        verdict = OverallVerdict.FAIL if quote_failed else j.overall_verdict
        issues = list(dict.fromkeys([*old.contextual_fidelity_issues, *j.contextual_fidelity_issues]))
        results.append(
            old.model_copy(
                update={
                    "claim_support_level": j.claim_support_level,
                    "verification_status": j.verification_status,
                    "overall_verdict": verdict,
                    "contextual_fidelity_issues": issues,
                    "source_text_excerpt": j.source_text_excerpt or old.source_text_excerpt,
                    "auditor_notes": f"judge: {j.auditor_notes}"
                    + (" (quote not in the source)" if quote_failed else ""),
                }
            )
        )
    passed = sum(r.overall_verdict is OverallVerdict.PASS for r in results)
    summary = report.summary.model_copy(update={"passed": passed, "failed": len(results) - passed})
    return report.model_copy(update={"audit_results": results, "summary": summary, "verifier": judge})


def _claims_high(label: ConfidenceLabel | None, score: float | None) -> bool:
    return label is ConfidenceLabel.HIGH if label is not None else score is not None and score >= _HIGH_CONFIDENCE


def merge_claims(report: ClaimAttributionReport, outcome: JudgeOutcome, judge: str) -> ClaimAttributionReport:
    """The offline claim checks with the judge's verdict on each claim."""
    judged = {j.claim_index: j for j in outcome.claim_judgments}
    checks = []
    for check in report.claims:
        j = judged.get(check.claim_index)
        if j is None:
            checks.append(check)
            continue
        over = _claims_high(check.confidence_label, check.confidence_score) and (
            j.attribution_verdict is not AttributionVerdict.fully_grounded
        )
        issues = [i for i in check.issues if not i.startswith("overconfident")]
        if over:
            issues.append(f"overconfident: the judge finds {j.attribution_verdict.value} ({j.notes})")
        checks.append(
            check.model_copy(
                update={
                    "verified_verdict": j.attribution_verdict,
                    "verified_confidence": j.confidence,
                    "overconfident": over,
                    "issues": issues,
                }
            )
        )
    return report.model_copy(update={"claims": checks, "verifier": judge})


class _PlanDoFn(beam.DoFn):
    def __init__(self, tasks: Sequence[Task], sample_rate: float) -> None:
        self._tasks, self._rate = tasks, sample_rate

    def process(self, audited: AuditedResponse) -> Iterator[Any]:
        """Yields (response id, the response) and, tagged "items", its judge items if it is in the sample."""
        rid = audited.parsed.response.response_id
        yield rid, audited
        if judge_sample_point(rid) < self._rate:
            for item in report_items(audited, self._tasks):
                yield beam.pvalue.TaggedOutput("items", item)


class _MergeDoFn(beam.DoFn):
    def __init__(self, judge: str) -> None:
        self._judge = judge

    def process(self, element: tuple[str, Mapping[str, Iterable[Any]]]) -> Iterator[AuditedResponse]:
        """One response id's audited responses with the judge's outcomes merged in."""
        _, grouped = element
        judged: Iterable[JudgeOutcome] = grouped["outcome"]
        responses: Iterable[AuditedResponse] = grouped["audited"]
        outcomes = {o.task: o for o in judged}
        for audited in responses:
            update: dict[str, object] = {}  # field name -> merged value, for model_copy
            citations, claims = outcomes.get(Task.citations), outcomes.get(Task.claims)
            if citations is not None and citations.status == "judged" and audited.citations is not None:
                update["citations"] = merge_citations(audited.citations, citations, self._judge)
            if claims is not None and claims.status == "judged" and audited.claims is not None:
                update["claims"] = merge_claims(audited.claims, claims, self._judge)
            if outcomes:
                update["judge_status"] = worst_status([audited.judge_status, *(o.status for o in outcomes.values())])
                update["judge_calls"] = [*audited.judge_calls, *(c for o in outcomes.values() for c in o.calls)]
                outcomes = {}  # a duplicate response id in the window logs the calls once
            yield audited.model_copy(update=update)


class JudgeReports(beam.PTransform):
    """Let the judge audit citations and/or check claims of already audited responses; returns them updated."""

    def __init__(
        self, tasks: Sequence[Task | str], config: JudgeConfig, *, clock: Callable[[], datetime] | None = None
    ) -> None:
        super().__init__()
        checked = [Task(t) for t in tasks]
        if not checked or Task.sentences in checked:
            raise ValueError("JudgeReports judges citations and claims; sentences go through JudgeSentences")
        self._tasks, self._config, self._clock = checked, config, clock or utc_now

    def expand(self, audited: PCollection) -> PCollection:
        config, clock = self._config, self._clock
        planned = audited | "PlanReportJudging" >> beam.ParDo(_PlanDoFn(self._tasks, config.sample_rate)).with_outputs(
            "items", main="audited"
        )
        judged, failed = (
            planned["items"] | "RunReportJudge" >> RunInference(JudgeModelHandler(config)).with_exception_handling()
        )
        outcomes = (
            judged | "ReportOutcomeByResponse" >> beam.Map(lambda r: (r.example.response_id, r.inference)),
            failed.failed_inferences
            | "FailedReportJudgeCalls" >> beam.FlatMap(lambda failure: failed_outcomes(failure, config, clock())),
        ) | "FlattenReportOutcomes" >> beam.Flatten()
        return (
            {"audited": planned["audited"], "outcome": outcomes}
            | "JoinReportOutcomes" >> beam.CoGroupByKey()
            | "MergeReportVerdicts" >> beam.ParDo(_MergeDoFn(f"openai:{config.model}"))
        )
