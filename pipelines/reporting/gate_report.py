"""The gate's figures, checks and reports: a plain table, JUnit XML and a Markdown summary.

    figures = gate_figures(outcomes)                 # from the audited responses and the lines not audited
    checks = gate_checks(figures, limits, baseline)  # one Check per threshold asked for, plus "every line audited"
    write_junit(path, outcomes, checks); write_markdown(path, figures, checks, outcomes, title=...)

JUnit: a `responses` suite with one test case per input line (a `failure` listing the review reasons when
the response needs review, an `error` when the line could not be audited) and a `thresholds` suite with one
test case per check. CI systems (GitLab, Jenkins, GitHub actions that read JUnit) show both.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field

from schemas import AttributionVerdict, AuditedResponse, OverallVerdict, RiskLevel, SentenceVerdict

__all__ = [
    "Check",
    "GateFigures",
    "GateLimits",
    "LineOutcome",
    "decided_by_line",
    "finding_details",
    "format_table",
    "gate_checks",
    "gate_figures",
    "write_junit",
    "write_markdown",
]


@dataclass
class LineOutcome:
    """One input line: its audit, or why it could not be audited."""

    line: int
    audited: AuditedResponse | None = None
    error: str | None = None

    @property
    def name(self) -> str:
        if self.audited is not None:
            return self.audited.parsed.response.response_id
        return f"line {self.line}"


@dataclass
class GateFigures:
    """What the thresholds are measured on."""

    audited: int = 0
    not_audited: int = 0
    needs_review: int = 0
    contradicted_responses: int = 0
    fabricated_responses: int = 0
    high_risk_citation_failures: int = 0
    """High-risk responses with at least one citation whose verdict is FAIL."""
    sentences: int = 0
    """Claims: the sentences that state something (not refusals, greetings or lead-ins)."""
    mean_confidence: float | None = None
    """Mean confidence of those claims."""
    mean_faithfulness: float | None = None
    """Mean `overall_faithfulness_score` of the responses that claim something (share of each answer supported by
    its evidence; `SentenceAuditReport.scored_faithfulness`)."""
    decided_by: dict[str, int] = field(default_factory=dict)
    """Sentences per stage that decided them (`heuristic`, `model`, `openai`): what a cascade sent where."""

    @property
    def review_share(self) -> float | None:
        return self.needs_review / self.audited if self.audited else None


@dataclass
class GateLimits:
    """The thresholds asked for; None (or False) leaves a check out. The defaults are the default policy."""

    max_review_share: float | None = None
    fail_on_contradicted: bool = True
    fail_on_fabricated: bool = True
    fail_on_high_risk_citations: bool = True
    min_mean_confidence: float | None = None
    max_drop: float | None = None


@dataclass
class Check:
    """One threshold against its figure."""

    name: str
    value: str
    limit: str
    passed: bool
    detail: str = ""


def _contradicted(a: AuditedResponse) -> bool:
    return any(s.attribution_verdict is AttributionVerdict.contradicted for s in a.report.sentences)


def _fabricated(a: AuditedResponse) -> bool:
    return a.citations is not None and bool(a.citations.summary.critical_failures)


def _high_risk_citation_failed(a: AuditedResponse) -> bool:
    if a.citations is None or a.parsed.response.metadata.risk_level is not RiskLevel.high:
        return False
    return any(c.overall_verdict is OverallVerdict.FAIL for c in a.citations.audit_results)


def gate_figures(outcomes: list[LineOutcome]) -> GateFigures:
    """The figures of a gate run (or of a baseline file audited the same way)."""
    figures = GateFigures()
    confidences: list[float] = []
    faithfulness: list[float] = []
    for o in outcomes:
        a = o.audited
        if a is None:
            figures.not_audited += 1
            continue
        figures.audited += 1
        figures.needs_review += bool(a.review and a.review.needs_review)
        figures.contradicted_responses += _contradicted(a)
        figures.fabricated_responses += _fabricated(a)
        figures.high_risk_citation_failures += _high_risk_citation_failed(a)
        # Refusals, greetings and lead-ins state nothing: no part of the confidence or the faithfulness figures.
        confidences.extend(s.confidence for s in a.report.sentences if s.is_claim)
        if (score := a.report.scored_faithfulness) is not None:
            faithfulness.append(score)
        for stage in a.decided_by:
            figures.decided_by[stage] = figures.decided_by.get(stage, 0) + 1
    figures.sentences = len(confidences)
    figures.mean_confidence = sum(confidences) / len(confidences) if confidences else None
    figures.mean_faithfulness = sum(faithfulness) / len(faithfulness) if faithfulness else None
    return figures


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def gate_checks(figures: GateFigures, limits: GateLimits, baseline: GateFigures | None = None) -> list[Check]:
    """Every check asked for, in a fixed order; a line that could not be audited always fails the gate."""
    checks = [
        Check(
            "every line audited",
            str(figures.not_audited),
            "0 not audited",
            figures.not_audited == 0 and figures.audited > 0,
            "no response in the input" if figures.audited == 0 else "",
        )
    ]
    if limits.max_review_share is not None:
        share = figures.review_share
        ok = share is not None and share <= limits.max_review_share
        checks.append(Check("share needing review", _num(share), f"<= {limits.max_review_share:g}", ok))
    if limits.fail_on_contradicted:
        n = figures.contradicted_responses
        checks.append(Check("responses with a contradicted sentence", str(n), "0", n == 0))
    if limits.fail_on_fabricated:
        n = figures.fabricated_responses
        checks.append(Check("responses with a fabricated citation", str(n), "0", n == 0))
    if limits.fail_on_high_risk_citations:
        n = figures.high_risk_citation_failures
        checks.append(Check("high-risk responses with a failed citation", str(n), "0", n == 0))
    if limits.min_mean_confidence is not None:
        mean = figures.mean_confidence
        ok = mean is not None and mean >= limits.min_mean_confidence
        checks.append(Check("mean sentence confidence", _num(mean), f">= {limits.min_mean_confidence:g}", ok))
    if limits.max_drop is not None:
        # Faithfulness, not confidence: a verdict of "ungrounded" can be very confident.
        before = baseline.mean_faithfulness if baseline is not None else None
        now = figures.mean_faithfulness
        drop = before - now if before is not None and now is not None else None
        ok = drop is not None and drop <= limits.max_drop
        detail = f"baseline {_num(before)}, now {_num(now)}"
        checks.append(Check("drop in mean faithfulness vs baseline", _num(drop), f"<= {limits.max_drop:g}", ok, detail))
    return checks


def format_table(checks: list[Check]) -> str:
    """The checks as a plain text table, for the terminal."""
    rows = [("check", "value", "limit", "result")] + [
        (c.name, c.value, c.limit, "pass" if c.passed else "FAIL") for c in checks
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def _quote(text: str, limit: int = 240) -> str:
    text = " ".join(text.split())
    return f'"{text[:limit]}..."' if len(text) > limit else f'"{text}"'


def _evidence(ids: list[str], excerpts: list[str]) -> str:
    if not excerpts:
        return f"evidence {', '.join(dict.fromkeys(ids)) or 'none'}"
    # Excerpts run parallel to ids; a verifier may list fewer ids than excerpts, so name what is there.
    named = [f"evidence {ids[i] if i < len(ids) else '?'} {_quote(x)}" for i, x in enumerate(excerpts)]
    return "; ".join(named)


def _sentence_detail(s: SentenceVerdict) -> str | None:
    text = _quote(s.sentence_text)
    if s.attribution_verdict is AttributionVerdict.contradicted:
        where = _evidence(s.contradicting_evidence_ids, s.contradicting_evidence_excerpts)
        return f"sentence {s.sentence_index} {text} contradicted by {where}"
    if s.attribution_verdict is AttributionVerdict.ungrounded:
        return f"sentence {s.sentence_index} {text} ungrounded: no passage of the evidence supports it"
    return None


def finding_details(a: AuditedResponse) -> list[str]:
    """What a reader of a CI page needs: each contradicted or ungrounded sentence and each failed citation,
    with the sentence's text and the evidence excerpt it was checked against."""
    details = [d for s in a.report.sentences if s.is_claim and (d := _sentence_detail(s))]
    if a.citations is None:
        return details
    texts = {s.sentence_index: s.sentence_text for s in a.report.sentences}
    for c in a.citations.audit_results:
        if c.overall_verdict is not OverallVerdict.FAIL:
            continue
        said = texts.get(c.sentence_index) if c.sentence_index is not None else c.claim_summary
        source = f"source {c.doc_id} {_quote(c.source_text_excerpt)}" if c.source_text_excerpt else "no source passage"
        claim = f" in {_quote(said)}" if said else ""
        why = " ".join(c.auditor_notes.split())[:200] or c.verification_status.value
        details.append(f"citation {c.citation_id}{claim} failed ({why}): {source}")
    return details


def _reasons(a: AuditedResponse) -> list[str]:
    return list(a.review.reasons) if a.review else []


def write_junit(path: str, outcomes: list[LineOutcome], checks: list[Check], *, source: str = "") -> None:
    """The JUnit XML report: a `responses` suite (one case per line) and a `thresholds` suite (one per check)."""
    root = ET.Element("testsuites", name="groundwatch gate")
    responses = ET.SubElement(root, "testsuite", name="responses")
    failures = errors = 0
    for o in outcomes:
        case = ET.SubElement(responses, "testcase", classname="groundwatch.gate.responses", name=o.name)
        case.set("file", source)
        case.set("line", str(o.line))
        if o.audited is None:
            errors += 1
            ET.SubElement(case, "error", type="not_audited", message=o.error or "not audited").text = o.error
        elif o.audited.review and o.audited.review.needs_review:
            failures += 1
            reasons = _reasons(o.audited)
            details = finding_details(o.audited)
            message = details[0] if details else (reasons[0] if reasons else "")
            failure = ET.SubElement(case, "failure", type="needs_review", message=message)
            failure.text = "\n".join([*details, *(["review reasons:"] if details else []), *reasons])
    responses.set("tests", str(len(outcomes)))
    responses.set("failures", str(failures))
    responses.set("errors", str(errors))
    thresholds = ET.SubElement(root, "testsuite", name="thresholds", tests=str(len(checks)))
    thresholds.set("failures", str(sum(not c.passed for c in checks)))
    thresholds.set("errors", "0")
    for c in checks:
        case = ET.SubElement(thresholds, "testcase", classname="groundwatch.gate.thresholds", name=c.name)
        if not c.passed:
            message = f"{c.value} (limit {c.limit})" + (f"; {c.detail}" if c.detail else "")
            ET.SubElement(case, "failure", type="threshold", message=message).text = message
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def decided_by_line(decided_by: Mapping[str, int]) -> str:
    """`sentences decided by: heuristic 3, model 2`: which stage settled how many sentences."""
    return "sentences decided by: " + ", ".join(f"{k} {v}" for k, v in sorted(decided_by.items()))


def write_markdown(
    path: str, figures: GateFigures, checks: list[Check], outcomes: list[LineOutcome], *, title: str, limit: int = 50
) -> None:
    """The Markdown summary: verdict, the checks, the counts, and the responses needing review (first `limit`)."""
    passed = all(c.passed for c in checks)
    lines = [f"## groundwatch gate: {'passed' if passed else 'FAILED'}", "", title, ""]
    lines += ["| check | value | limit | result |", "|---|---|---|---|"]
    lines += [f"| {c.name} | {c.value} | {c.limit} | {'pass' if c.passed else '**FAIL**'} |" for c in checks]
    lines += [
        "",
        f"{figures.audited} responses audited ({figures.sentences} claims), {figures.not_audited} lines not "
        f"audited; {figures.needs_review} need review, {figures.contradicted_responses} with a contradicted "
        f"sentence, {figures.fabricated_responses} with a fabricated citation.",
    ]
    if figures.decided_by:
        lines += ["", decided_by_line(figures.decided_by)]
    flagged = [o for o in outcomes if o.audited is None or (o.audited.review and o.audited.review.needs_review)]
    if flagged:
        lines += ["", f"### Needing review or not audited ({len(flagged)})", ""]
        lines += ["| line | response | why |", "|---|---|---|"]
        for o in flagged[:limit]:
            why = o.error if o.audited is None else "; ".join(_reasons(o.audited))
            lines.append(f"| {o.line} | {_cell(o.name)} | {_cell(why or '')[:500]} |")
        if len(flagged) > limit:
            lines.append(f"| | ... | {len(flagged) - limit} more in the JUnit report |")
    with open(path, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
