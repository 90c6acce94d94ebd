"""The citation audit on a lease record of the project's sample traffic, mutated one way at a time.

`LEASE_ANSWER` is a record like those in `pipelines/data/sample_traffic.jsonl`; each
test changes one thing (a number, a hedge, a quantifier, a negation, an id, a
quote character, the order of two citations) and checks what the audit says.
The verifier is the real offline heuristic; the faithful claims stay close to their passages'
wording, so these tests exercise the citation logic rather than the verifier's handling of paraphrase.
"""

import pytest

from schemas import (
    ClaimSupportLevel,
    LoggedResponse,
    OverallVerdict,
    QuoteMatch,
    VerificationStatus,
)
from transforms.attribution.citations import audit_citations, validate_citation_report
from transforms.attribution.fidelity import fidelity_issues
from transforms.attribution.markers import parse_citations, resolve_citation
from transforms.text.quotes import find_quotes, match_quote
from transforms.verify.registry import make_verifier

ALPHA = "This clause survives termination of the agreement. The lease term is 24 months, beginning on October 2, 2025."
BETA = (
    "Disputes under the contract are governed by the laws of Delaware. "
    "This clause survives termination of the agreement."
)
GAMMA = "The tenant paid a security deposit of $3,000 at signing. This clause survives termination of the agreement."
DELTA = "A late payment may incur a penalty of 5 percent of the outstanding balance."
EPSILON = "Some obligations survive the end of the lease. Subletting is not allowed without the landlord's consent."
LEASE_ANSWER = (
    "The lease term is 24 months, beginning on October 2, 2025 [doc_alpha]. "
    "A security deposit of $3,000 was paid at signing [doc_gamma]. "
    "The contract is governed by the laws of Delaware [doc_beta]."
)


@pytest.fixture(scope="module")
def verifier():
    return make_verifier("heuristic")


def lease(answer=LEASE_ANSWER, *, evidence=None, citations=None, ids=None):
    contents = evidence or [ALPHA, BETA, GAMMA, DELTA, EPSILON]
    ids = ids or ["doc_alpha", "doc_beta", "doc_gamma", "doc_delta", "doc_epsilon"]
    return LoggedResponse(
        response_id="leg-000000-ab1031",
        timestamp="2026-11-29T09:00:00Z",
        answer=answer,
        evidence=[{"doc_id": d, "content": c} for d, c in zip(ids, contents, strict=False)],
        citations=citations,
        metadata={"tenant": "civicdocs", "risk_level": "high"},
    )


def only(report):
    (result,) = report.audit_results
    return result


def test_faithful_citations_pass(verifier):
    report = audit_citations(lease(), verifier)
    assert [r.citation_id for r in report.audit_results] == ["[doc_alpha]", "[doc_gamma]", "[doc_beta]"]
    assert [r.sentence_index for r in report.audit_results] == [0, 1, 2]
    assert all(r.source_exists and r.overall_verdict is OverallVerdict.PASS for r in report.audit_results)
    assert report.summary.model_dump() == {
        "total_citations": 3,
        "passed": 3,
        "failed": 0,
        "critical_failures": [],
        "note": "",
    }
    gamma = report.audit_results[1]
    assert gamma.verification_status is VerificationStatus.accurate
    assert gamma.claim_support_level is ClaimSupportLevel.SUPPORTS
    assert gamma.source_text_excerpt in GAMMA and gamma.doc_id == "doc_gamma"


def test_changed_number_is_a_contradiction_and_fails(verifier):
    result = only(audit_citations(lease("A security deposit of $4,000 was paid at signing [doc_gamma]."), verifier))
    assert result.overall_verdict is OverallVerdict.FAIL
    assert result.claim_support_level is ClaimSupportLevel.CONTRADICTS
    assert any("$4,000" in i and "$3,000" in i for i in result.contextual_fidelity_issues)


def test_dropped_hedge_is_a_fidelity_issue(verifier):
    claim = "A late payment will incur a penalty of 5 percent of the outstanding balance [doc_delta]."
    result = only(audit_citations(lease(claim), verifier))
    assert result.overall_verdict is OverallVerdict.FAIL
    assert any(i.startswith("hedge dropped") and '"may incur"' in i for i in result.contextual_fidelity_issues)
    assert result.claim_support_level is not ClaimSupportLevel.SUPPORTS


def test_widened_scope_and_flipped_negation_are_fidelity_issues(verifier):
    widened = only(audit_citations(lease("All obligations survive the end of the lease [doc_epsilon]."), verifier))
    assert any(i.startswith("scope widened") for i in widened.contextual_fidelity_issues)
    assert widened.overall_verdict is OverallVerdict.FAIL
    flipped = only(
        audit_citations(lease("Subletting is allowed without the landlord's consent [doc_epsilon]."), verifier)
    )
    assert any(i.startswith("negation flipped") for i in flipped.contextual_fidelity_issues)
    assert flipped.claim_support_level is ClaimSupportLevel.CONTRADICTS
    assert flipped.overall_verdict is OverallVerdict.FAIL


def test_nonexistent_id_is_fabricated_and_critical(verifier):
    answer = LEASE_ANSWER.replace("[doc_beta]", "[doc_zeta]")
    report = audit_citations(lease(answer), verifier)
    zeta = report.audit_results[2]
    assert (zeta.citation_id, zeta.source_exists, zeta.verification_status) == (
        "[doc_zeta]",
        False,
        VerificationStatus.fabricated,
    )
    assert zeta.overall_verdict is OverallVerdict.FAIL
    assert report.summary.critical_failures == ["[doc_zeta]"]
    assert (report.summary.passed, report.summary.failed) == (2, 1)
    numbered = audit_citations(lease("The lease term is 24 months [7].", ids=["1", "2", "3"]), verifier)
    assert only(numbered).verification_status is VerificationStatus.fabricated


def test_quote_must_match_exactly_with_offsets(verifier):
    exact = only(audit_citations(lease('The lease says "The lease term is 24 months," [doc_alpha]'), verifier))
    start = ALPHA.index("The lease term is 24 months,")
    assert (exact.quote_match, exact.quote_accurate) == (QuoteMatch.exact, True)
    assert (exact.quote_start, exact.quote_end) == (start, start + len("The lease term is 24 months,"))
    assert exact.overall_verdict is OverallVerdict.PASS
    assert exact.verification_status is VerificationStatus.accurate  # "The lease says" only introduces the quote

    # One character changed ("," -> ";"): not the source's words, though the closest text is found.
    changed = only(audit_citations(lease('The lease says "The lease term is 24 months;" [doc_alpha]'), verifier))
    assert (changed.quote_match, changed.quote_accurate) == (QuoteMatch.none, False)
    assert (changed.quote_start, changed.quote_end) == (start, start + len("The lease term is 24 months,"))
    assert changed.overall_verdict is OverallVerdict.FAIL
    assert changed.verification_status is VerificationStatus.partial_match  # a near miss of the real text
    assert ALPHA[changed.quote_start : changed.quote_end] == changed.source_text_excerpt

    spaced = only(
        audit_citations(lease("The lease says \u201cthe lease term is  24 months,\u201d [doc_alpha]"), verifier)
    )
    assert (spaced.quote_match, spaced.quote_accurate) == (QuoteMatch.normalized, False)
    assert spaced.quote_start == start


def test_quote_matching_helpers():
    assert [q.text for q in find_quotes('He said "it may work" and \u201cso it did\u201d.')] == [
        "it may work",
        "so it did",
    ]
    found = match_quote("penalty of 6 percent", DELTA)
    assert found.match is QuoteMatch.none and DELTA[found.start : found.end] == "penalty of 5 percent"
    assert match_quote("PENALTY  of 5 percent", DELTA).match is QuoteMatch.normalized


def test_swapped_citations_are_misattributed_and_name_the_right_passage(verifier):
    answer = (
        "The lease term is 24 months, beginning on October 2, 2025 [doc_gamma]. "
        "A security deposit of $3,000 was paid at signing [doc_alpha]."
    )
    first, second = audit_citations(lease(answer), verifier).audit_results
    assert first.verification_status is VerificationStatus.misattributed
    assert first.supporting_doc_id == "doc_alpha" and "'doc_alpha'" in first.auditor_notes
    assert second.verification_status is VerificationStatus.misattributed
    assert second.supporting_doc_id == "doc_gamma" and "'doc_gamma'" in second.auditor_notes
    assert first.overall_verdict is OverallVerdict.FAIL and second.overall_verdict is OverallVerdict.FAIL


def test_quote_from_another_passage_is_misattributed(verifier):
    answer = 'The agreement states "The tenant paid a security deposit of $3,000 at signing." [doc_beta]'
    result = only(audit_citations(lease(answer), verifier))
    assert result.verification_status is VerificationStatus.misattributed
    assert result.supporting_doc_id == "doc_gamma" and result.quote_accurate is False


def test_markers_are_tied_to_their_sentence_or_clause():
    answer = (
        "The lease term is 24 months [doc_alpha], and the deposit was $3,000 [doc_gamma]. "
        "Disputes follow Delaware law. [doc_beta] Payment is due monthly [doc_beta, doc_delta]. "
        "See [the terms](https://example.com) [sic]."
    )
    refs = parse_citations(lease(answer))
    got = [(r.citation_id, r.sentence_index, r.claim, r.group) for r in refs]
    assert got == [
        ("[doc_alpha]", 0, "The lease term is 24 months", ()),
        ("[doc_gamma]", 0, "the deposit was $3,000", ()),
        ("[doc_beta]", 1, "Disputes follow Delaware law.", ()),
        ("[doc_beta]", 2, "Payment is due monthly.", ("doc_delta",)),
        ("[doc_delta]", 2, "Payment is due monthly.", ("doc_beta",)),
    ]


def test_numeric_markers_ranges_and_explicit_citations():
    response = lease("The lease term is 24 months [2-3]. Late fees apply [^1].", ids=["a", "b", "c", "d", "e"])
    refs = parse_citations(response)
    assert [r.citation_id for r in refs] == ["[2]", "[3]", "[1]"]
    assert refs[2].claim == "Late fees apply."
    passage, how = resolve_citation(refs[0], response)
    assert passage.doc_id == "b" and "number 2" in how

    explicit = lease(
        "No markers in this answer.",
        citations=[{"citation_id": "c1", "doc_id": "doc_gamma", "quote": "security deposit of $3,000"}],
    )
    (ref,) = parse_citations(explicit)
    assert (ref.citation_id, ref.quotes) == ("c1", ("security deposit of $3,000",))
    assert resolve_citation(ref, explicit)[0].doc_id == "doc_gamma"


def test_no_citations_gives_an_empty_report_with_a_note(verifier):
    report = audit_citations(lease("The lease term is 24 months."), verifier)
    assert report.audit_results == [] and report.summary.total_citations == 0
    assert report.summary.note == "no citations found in the response"


def test_reports_follow_the_harness_rules_on_the_sample_traffic(verifier):
    from importlib import resources

    lines = (resources.files("pipelines") / "data" / "sample_traffic.jsonl").read_bytes().splitlines()
    checked = 0
    for line in lines:
        try:
            response = LoggedResponse.model_validate_json(line)
        except ValueError:
            continue  # the sample's deliberately malformed lines
        report = audit_citations(response, verifier)
        assert validate_citation_report(report, response) == [], response.response_id
        checked += 1
    assert checked > 250


def test_validator_catches_a_tampered_report(verifier):
    response = lease()
    report = audit_citations(response, verifier)
    first = report.audit_results[0].model_copy(update={"source_text_excerpt": "The lease is 99 years."})
    tampered = report.model_copy(update={"audit_results": [first, *report.audit_results[1:2]]})
    errors = validate_citation_report(tampered, response)
    assert any("do not match" in e for e in errors)
    assert any("[doc_alpha]: source_text_excerpt is not a substring" in e for e in errors)


def test_fidelity_cues_must_bear_on_the_shared_content():
    # A hedge elsewhere in the source sentence is not this claim's hedge.
    assert fidelity_issues("The museum opens at 9 am.", "The museum opens at 9 am, and visitors may bring food.") == []
    assert fidelity_issues("The museum opens at 9 am.", "Could a museum open at 9 am?")[0].kind == "hedge_dropped"
    # The negated occurrence of a word that also appears plainly earlier is the one reported.
    (flip,) = fidelity_issues("Aspirin helps, but aspirin does not help children.", "Aspirin helps children.")
    assert flip.kind == "negation_flipped" and '"not ... help"' in flip.note
    assert fidelity_issues("The trial enrolled 120 patients.", "The trial enrolled 120 patients in May.") == []
    # A negation the claim shares with the source is no flip; "May" the month is no hedge.
    assert fidelity_issues("Alcohol is not allowed.", "Pets are welcome. Alcohol is not allowed on site.") == []
    assert fidelity_issues("The final was played in 1986.", "The final was played in May 1986.") == []
    assert fidelity_issues("Either party can terminate with notice.", "Either party may terminate with notice.") == []
    # A "No," answering the question negates nothing; "No sick leave" does.
    source = "Sick leave does not carry over and is not paid out at termination."
    assert fidelity_issues("No, unused sick leave does not carry over.", source) == []
    assert [i.kind for i in fidelity_issues("Sick leave is paid out at termination.", source)] == ["negation_flipped"]


_ATOMS = ["[1]", "[2, 3]", "[doc_a]", "[9]", "[sic]", "[", "]", '"', "\u201c", "\u201d", "May", "not", "all", "some"]
_ATOMS += ["50 mg", "March 3, 2024", ". ", "\n- ", ";", "[1-3]", "[x](http://a)", "patient", "\u00ab", "[[1]]", "?"]


def test_odd_answers_never_crash_the_audit_and_always_give_valid_reports(verifier):
    import random

    rng = random.Random(4)

    def text(n):
        return "".join(rng.choice(_ATOMS) + (" " if rng.random() < 0.6 else "") for _ in range(n))

    for i in range(300):
        ids = rng.choice([["1", "2", "3"], ["doc_a", "doc_b"], ["a"], []])
        citations = None
        if rng.random() < 0.3:
            cited = rng.choice([*ids, "zz"])
            citations = [{"citation_id": rng.choice(["[1]", "c1"]), "doc_id": cited, "quote": text(3)}]
        response = LoggedResponse(
            response_id=f"odd-{i}",
            timestamp="2026-11-29T09:00:00Z",
            answer=text(rng.randint(0, 40)),
            evidence=[{"doc_id": d, "content": text(rng.randint(0, 30))} for d in ids],
            citations=citations,
        )
        assert validate_citation_report(audit_citations(response, verifier), response) == [], response.answer


def test_an_exact_quote_with_a_short_lead_in_supports_its_claim(verifier):
    # The verifier alone calls this partial: "The discharge summary states" is not in the passage.
    answer = 'The discharge summary states "The chart lists an allergy to penicillin." [1]'
    chart = "Follow-up was arranged with primary care. The chart lists an allergy to penicillin."
    result = only(audit_citations(lease(answer, evidence=[chart], ids=["1"]), verifier))
    assert result.claim_support_level is ClaimSupportLevel.SUPPORTS
    assert result.verification_status is VerificationStatus.accurate and result.quote_accurate


def test_a_footnote_marker_in_the_passage_is_not_a_number():
    # "[2]" refers to a source: it neither states the claim's 2 nor hides that the passage says 120.
    (issue,) = fidelity_issues("The trial enrolled 2 patients.", "The trial enrolled 120 patients.[2]")
    assert issue.kind == "number_changed"
    assert '"2"' in issue.note and '"120"' in issue.note
