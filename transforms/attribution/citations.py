"""The citation audit (spec 002): every citation in an answer checked against the passage it names.

Citations and their claims come from `transforms.attribution.markers`. Each one is
audited offline and deterministically:

- the cited id must name a passage of the evidence, or the citation is `fabricated` (FAIL, critical);
- a quoted span must occur in the cited passage character for character (`transforms.text.quotes`);
- the claim's support is judged by the verifier against the cited passage alone;
- when the cited passage does not support the claim but another retrieved passage does,
  the citation is `misattributed` and the note names the passage that does;
- contextual fidelity (`transforms.attribution.fidelity`): dropped hedges, widened scope, flipped negation,
  changed numbers.

    report = audit_citations(response, make_verifier("heuristic"))
    report.summary.failed, report.summary.critical_failures

`verification_status`: `accurate` (supports, quotes exact, no distortion); `partial_match`
(partly supports, a quote that matches only after normalising or nearly, or a distortion of
a source that is on topic); `misattributed` (another passage supports the claim or holds the
quote, the source contradicts the claim, or the quote is not in it at all); `fabricated` (no
such source); `unverifiable` (no retrieved passage supports the claim, or the passage is empty).
A citation passes when it is accurate or a partial match of a claim the source supports in part
(a warning, as spec 002's escalation tiers have it) or quotes after normalisation; it fails when
fabricated, misattributed or unverifiable, when it distorts the source, or when its quote is not there.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from schemas import (
    AttributionVerdict,
    AuditedResponse,
    CitationAuditReport,
    CitationAuditResult,
    CitationAuditSummary,
    ClaimSupportLevel,
    EvidencePassage,
    LoggedResponse,
    OverallVerdict,
    QuoteMatch,
    SentenceVerdict,
    VerificationStatus,
)
from transforms.attribution.fidelity import align, fidelity_issues
from transforms.attribution.markers import CitationRef, parse_citations, resolve_citation
from transforms.text.quotes import QuoteFound, match_quote
from transforms.text.tokens import tokenize
from transforms.verify.base import VerificationResult, Verifier
from transforms.verify.registry import make_verifier

__all__ = [
    "SUPPORT_FOR_VERDICT",
    "AuditCitationsStep",
    "CitationReportInvalid",
    "audit_citation",
    "audit_citations",
    "judge_support",
    "validate_citation_report",
]

SUPPORT_FOR_VERDICT = {
    AttributionVerdict.fully_grounded: ClaimSupportLevel.SUPPORTS,
    AttributionVerdict.partially_grounded: ClaimSupportLevel.PARTIALLY_SUPPORTS,
    AttributionVerdict.contradicted: ClaimSupportLevel.CONTRADICTS,
    AttributionVerdict.ungrounded: ClaimSupportLevel.UNRELATED,
}
"""A claim the cited passage fully grounds is SUPPORTS; one it says nothing about is UNRELATED."""

NEAR_QUOTE = 0.8
"""A quote at least this similar to some passage text is a near miss (partial_match), not a misattribution."""
_ALTERNATIVES_CHECKED = 3
_EXCERPT_CHARS = 300
_QUOTE_RANK = {QuoteMatch.exact: 0, QuoteMatch.normalized: 1, QuoteMatch.none: 2}
_CONTRADICTING_ISSUES = frozenset({"number_changed", "negation_flipped"})
_LEAD_IN_WORDS = 4


def judge_support(
    claim: str, passages: Sequence[EvidencePassage], verifier: Verifier
) -> tuple[ClaimSupportLevel, SentenceVerdict]:
    """How the given passage(s) support one claim, judged as one sentence by the verifier."""
    verdict = verifier.verify([claim], list(passages)).verdicts[0]
    return SUPPORT_FOR_VERDICT[verdict.attribution_verdict], verdict


def _excerpt(passage: EvidencePassage, verdict: SentenceVerdict | None, claim: str) -> str:
    """A real substring of the passage that shows what it says about the claim."""
    text = passage.content
    if verdict is not None:
        for candidate in (*verdict.supporting_evidence_excerpts, *verdict.contradicting_evidence_excerpts):
            if candidate and candidate in text:
                return candidate[:_EXCERPT_CHARS]
    sentence, _ = align(claim, text)
    return (sentence if sentence and sentence in text else text)[:_EXCERPT_CHARS]


def _worst_quote(quotes: Sequence[str], passage: str) -> tuple[str, QuoteFound] | None:
    matches = [(q, match_quote(q, passage)) for q in quotes if q and q.strip()]
    if not matches:
        return None
    return max(matches, key=lambda qm: (_QUOTE_RANK[qm[1].match], -qm[1].similarity))


def _quote_carries_claim(ref: CitationRef, quote: tuple[str, QuoteFound] | None) -> bool:
    """An exact quote with only a short lead-in around it ('The filing states "..."'): the quote is the claim."""
    if quote is None or quote[1].match is not QuoteMatch.exact:
        return False
    rest = ref.claim
    for q in ref.quotes:
        rest = rest.replace(q, " ")
    return sum(not t.stop for t in tokenize(rest)) <= _LEAD_IN_WORDS


@lru_cache(maxsize=1024)
def _content_stems(text: str) -> frozenset[str]:
    """The content-word stems of a text (remembered: each passage of a response is ranked against several claims)."""
    return frozenset(t.stem for t in tokenize(text) if not t.stop)


def _other_support(
    claim: str,
    quote: str | None,
    cited: set[str],
    response: LoggedResponse,
    verifier: Verifier,
    *,
    accept_partial: bool = False,
) -> tuple[EvidencePassage, bool] | None:
    """A retrieved passage, not among the cited ones, that holds the quote or supports the claim.

    With `accept_partial` (the cited passage is unrelated to the claim), a passage that supports
    the claim in part also counts, when none supports it fully: it is still the better source.
    Returns the passage and whether its support is only partial.
    """
    others = [p for p in response.evidence if p.doc_id not in cited and p.content.strip()]
    if quote:
        for p in others:
            if match_quote(quote, p.content).match is not QuoteMatch.none:
                return p, False
        return None
    words = _content_stems(claim)
    # Only the few passages sharing most words with the claim are worth a verifier call, and one that shares
    # none cannot be the better source: the verifier would find it unrelated (measured: 1,429 of 1,429 such calls).
    shared = [(len(words & _content_stems(p.content)), p) for p in others]
    ranked = [p for n, p in sorted(shared, key=lambda np: -np[0]) if n]
    partial = None
    for p in ranked[:_ALTERNATIVES_CHECKED]:
        level = judge_support(claim, [p], verifier)[0]
        if level is ClaimSupportLevel.SUPPORTS:
            return p, False
        if accept_partial and partial is None and level is ClaimSupportLevel.PARTIALLY_SUPPORTS:
            partial = p, True
    return partial


def _result(ref: CitationRef, **fields) -> CitationAuditResult:
    return CitationAuditResult(
        citation_id=ref.citation_id,
        claim_summary=ref.claim[:_EXCERPT_CHARS],
        sentence_index=ref.sentence_index,
        **fields,
    )


def _missing_or_empty(ref: CitationRef, response: LoggedResponse, passage, how: str) -> CitationAuditResult | None:
    """The result for a citation whose source does not exist (fabricated) or is empty; None otherwise."""
    if passage is None:
        cited = ref.explicit.doc_id if ref.explicit is not None else ref.ref
        ids = ", ".join(p.doc_id for p in response.evidence) or "none"
        return _result(
            ref,
            source_exists=False,
            claim_support_level=ClaimSupportLevel.UNRELATED,
            overall_verdict=OverallVerdict.FAIL,
            verification_status=VerificationStatus.fabricated,
            auditor_notes=f"cited source {cited!r} is not in the evidence (ids: {ids}); fabricated reference",
            doc_id=cited,
        )
    if not passage.content.strip():
        return _result(
            ref,
            source_exists=True,
            claim_support_level=ClaimSupportLevel.UNRELATED,
            overall_verdict=OverallVerdict.FAIL,
            verification_status=VerificationStatus.unverifiable,
            auditor_notes="; ".join([how] * bool(how) + ["the cited passage is empty"]),
            doc_id=passage.doc_id,
        )
    return None


def _support(ref: CitationRef, passage: EvidencePassage, quote, verifier: Verifier, notes: list[str]):
    """The support level of the cited passage, adjusted for an exact quote and for distortions, and the issues."""
    level, verdict = judge_support(ref.claim, [passage], verifier)
    if level is ClaimSupportLevel.PARTIALLY_SUPPORTS and _quote_carries_claim(ref, quote):
        level = ClaimSupportLevel.SUPPORTS
        notes.append("the quote is exact and the rest of the claim only introduces it")
    issues = fidelity_issues(ref.claim, passage.content) if level is not ClaimSupportLevel.UNRELATED else []
    kinds = {i.kind for i in issues}
    if kinds & _CONTRADICTING_ISSUES and level in (ClaimSupportLevel.SUPPORTS, ClaimSupportLevel.PARTIALLY_SUPPORTS):
        level = ClaimSupportLevel.CONTRADICTS
    elif kinds and level is ClaimSupportLevel.SUPPORTS:
        level = ClaimSupportLevel.PARTIALLY_SUPPORTS  # overstated: the source supports a weaker claim
    return level, verdict, issues


def _better_source(ref, response, verifier, *, group, level, quote_failed, quote, jointly):
    """A passage that supports the claim (or holds the quote) while the cited one does not, or None."""
    group_ids = {p.doc_id for p in group}
    if quote_failed:
        return _other_support(ref.claim, quote[0], group_ids, response, verifier)
    if level is ClaimSupportLevel.SUPPORTS or jointly:
        return None
    # A co-cited passage that supports the claim alone also makes this citation a misattribution.
    words = _content_stems(ref.claim)
    for sibling in group[1:]:
        if words & _content_stems(sibling.content) and (
            judge_support(ref.claim, [sibling], verifier)[0] is ClaimSupportLevel.SUPPORTS
        ):
            return sibling, False
    unrelated = level is ClaimSupportLevel.UNRELATED
    return _other_support(ref.claim, None, group_ids, response, verifier, accept_partial=unrelated)


def audit_citation(ref: CitationRef, response: LoggedResponse, verifier: Verifier) -> CitationAuditResult:
    """The audit of one citation (the rules are in the module docstring)."""
    passage, how = resolve_citation(ref, response)
    early = _missing_or_empty(ref, response, passage, how)
    if early is not None:
        return early
    notes = [how] if how else []
    quote = _worst_quote(ref.quotes, passage.content)
    level, verdict, issues = _support(ref, passage, quote, verifier, notes)

    group = [passage] + [p for r in ref.group if (p := resolve_citation(_as_ref(ref, r), response)[0])]
    jointly = False
    if level is ClaimSupportLevel.PARTIALLY_SUPPORTS and len(group) > 1 and not issues:
        jointly = judge_support(ref.claim, group, verifier)[0] is ClaimSupportLevel.SUPPORTS
        if jointly:
            notes.append(f"supports the claim together with {', '.join(f'[{r}]' for r in ref.group)}")
    quote_failed = quote is not None and quote[1].match is QuoteMatch.none
    found = _better_source(
        ref, response, verifier, group=group, level=level, quote_failed=quote_failed, quote=quote, jointly=jointly
    )
    elsewhere, only_partly = found if found is not None else (None, False)

    status, verdict_ok = VerificationStatus.accurate, True
    if elsewhere is not None:
        status, verdict_ok = VerificationStatus.misattributed, False
        what = "the quoted text" if quote_failed else "the claim"
        alongside = " (cited alongside it)" if elsewhere in group else ""
        notes.append(
            f"misattributed: {what} is {'partly ' if only_partly else ''}supported by passage "
            f"{elsewhere.doc_id!r}{alongside}, not by the cited {passage.doc_id!r}"
        )
    elif quote_failed:
        status = (
            VerificationStatus.partial_match if quote[1].similarity >= NEAR_QUOTE else VerificationStatus.misattributed
        )
        verdict_ok = False
        notes.append(
            f'quote "{quote[0]}" is not in the cited passage; closest text "{quote[1].excerpt(passage.content)}" '
            f"at {quote[1].start}-{quote[1].end} (similarity {quote[1].similarity:.2f})"
            if quote[1].start is not None
            else f'quote "{quote[0]}" is not in the cited passage'
        )
    elif level is ClaimSupportLevel.CONTRADICTS:
        status, verdict_ok = VerificationStatus.misattributed, False
        notes.append("the cited passage contradicts the claim")
    elif level is ClaimSupportLevel.UNRELATED:
        status, verdict_ok = VerificationStatus.unverifiable, False
        notes.append("the cited passage does not address the claim and no other retrieved passage supports it")
    elif level is ClaimSupportLevel.PARTIALLY_SUPPORTS:
        # Partial support is a warning, not a failure (spec 002's tiers: partial_match is surfaced, not blocked).
        status = VerificationStatus.partial_match
        if not jointly and not issues:
            spans = ", ".join(f'"{s}"' for s in verdict.unsupported_spans) or "part of the claim"
            notes.append(f"the cited passage supports the claim only in part; not found: {spans}")
    if quote is not None and quote[1].match is QuoteMatch.normalized:
        notes.append(
            f'quote "{quote[0]}" matches the passage only after normalising white space, quote marks or case '
            f"(at {quote[1].start}-{quote[1].end})"
        )
        status = VerificationStatus.partial_match if status is VerificationStatus.accurate else status
    if issues:
        verdict_ok = False
        notes.extend(i.note for i in issues)
        status = VerificationStatus.partial_match if status is VerificationStatus.accurate else status
    if status is VerificationStatus.accurate:
        notes.append("the cited passage supports the claim")
    return _result(
        ref,
        source_exists=True,
        quote_accurate=None if quote is None else quote[1].match is QuoteMatch.exact,
        claim_support_level=level,
        contextual_fidelity_issues=[i.note for i in issues],
        overall_verdict=OverallVerdict.PASS if verdict_ok else OverallVerdict.FAIL,
        auditor_notes="; ".join(notes),
        verification_status=status,
        source_text_excerpt=quote[1].excerpt(passage.content)
        if quote is not None and quote[1].start is not None
        else _excerpt(passage, verdict, ref.claim),
        doc_id=passage.doc_id,
        quote=None if quote is None else quote[0],
        quote_match=None if quote is None else quote[1].match,
        quote_start=None if quote is None else quote[1].start,
        quote_end=None if quote is None else quote[1].end,
        supporting_doc_id=elsewhere.doc_id if elsewhere is not None else None,
    )


def _as_ref(ref: CitationRef, other: str) -> CitationRef:
    return CitationRef(citation_id=f"[{other}]", ref=other, claim=ref.claim, sentence_index=ref.sentence_index)


class _RememberedVerdicts:
    """The verifier, remembering its one-claim verdicts for one response: its citations often put the same
    claim to the same passage twice (the cited passage of one is the alternative or co-cited one of another)."""

    def __init__(self, verifier: Verifier):
        self._verifier, self._seen = verifier, {}

    def verify(self, sentences: Sequence[str], evidence: Sequence[EvidencePassage]) -> VerificationResult:
        if len(sentences) != 1:
            return self._verifier.verify(sentences, evidence)
        key = (sentences[0], tuple((p.doc_id, p.content) for p in evidence))
        if key not in self._seen:
            self._seen[key] = self._verifier.verify(sentences, evidence)
        return self._seen[key]


def audit_citations(
    response: LoggedResponse, verifier: Verifier, *, refs: Sequence[CitationRef] | None = None
) -> CitationAuditReport:
    """The citation audit of one response, with the spec's summary (fabricated citations are critical);
    `refs` are the response's `parse_citations`, when the caller has them already."""
    remembered = _RememberedVerdicts(verifier)
    refs = parse_citations(response) if refs is None else refs
    results = [audit_citation(ref, response, remembered) for ref in refs]
    passed = sum(r.overall_verdict is OverallVerdict.PASS for r in results)
    critical = [r.citation_id for r in results if r.verification_status is VerificationStatus.fabricated]
    return CitationAuditReport(
        audit_results=results,
        summary=CitationAuditSummary(
            total_citations=len(results),
            passed=passed,
            failed=len(results) - passed,
            critical_failures=list(dict.fromkeys(critical)),
            note="" if results else "no citations found in the response",
        ),
        verifier=verifier.name,
        verifier_version=str(verifier.version),
    )


def validate_citation_report(
    report: CitationAuditReport, response: LoggedResponse, *, refs: Sequence[CitationRef] | None = None
) -> list[str]:
    """What is wrong with a citation report, by spec 002's harness rules; empty when it is valid.

    Every cited id of the response is reported and nothing else; every excerpt of an existing source is
    a non-empty substring of that passage (enums and the summary's arithmetic are checked by the models).
    """
    errors = []
    expected = sorted(r.citation_id for r in (parse_citations(response) if refs is None else refs))
    got = sorted(r.citation_id for r in report.audit_results)
    if got != expected:
        errors.append(f"citation ids {got} do not match the response's citations {expected}")
    passages = response.passages_by_id
    for r in report.audit_results:
        if r.source_exists != (r.doc_id in passages):
            errors.append(f"{r.citation_id}: source_exists={r.source_exists} but doc_id {r.doc_id!r} says otherwise")
        if r.source_exists and passages.get(r.doc_id) and passages[r.doc_id].content.strip():
            if not r.source_text_excerpt or r.source_text_excerpt not in passages[r.doc_id].content:
                errors.append(f"{r.citation_id}: source_text_excerpt is not a substring of passage {r.doc_id!r}")
        if r.verification_status is VerificationStatus.fabricated and r.overall_verdict is not OverallVerdict.FAIL:
            errors.append(f"{r.citation_id}: a fabricated citation must FAIL")
    fabricated = {r.citation_id for r in report.audit_results if r.verification_status is VerificationStatus.fabricated}
    if fabricated != set(report.summary.critical_failures):
        errors.append(f"critical_failures {report.summary.critical_failures} must be the fabricated citations")
    return errors


class CitationReportInvalid(ValueError):
    """A citation report broke the harness rules; the response goes to the dead letters with the reasons."""


class AuditCitationsStep:
    """The pipeline's audit step: adds the citation audit to an AuditedResponse.

    Picklable (it carries the verifier's name and config, not the verifier); the
    verifier is built on first use in each worker. The citation audit uses its own
    verifier, offline by default, so a judge-backed sentence audit does not pay
    an LLM call per citation.
    """

    def __init__(self, verifier: str = "heuristic", **config):
        self._name, self._config = verifier, config
        self._verifier: Verifier | None = None

    def __getstate__(self):
        return {"_name": self._name, "_config": self._config, "_verifier": None}

    def __call__(self, audited: AuditedResponse) -> AuditedResponse:
        if self._verifier is None:
            self._verifier = make_verifier(self._name, **self._config)
        refs = parse_citations(audited.parsed.response)  # parsed once for the audit and its validation
        report = audit_citations(audited.parsed.response, self._verifier, refs=refs)
        errors = validate_citation_report(report, audited.parsed.response, refs=refs)
        if errors:
            raise CitationReportInvalid("; ".join(errors))
        return audited.model_copy(update={"citations": report})
