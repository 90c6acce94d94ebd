"""Deterministic synthetic RAG traffic: realistic logged responses for demos, tests and benchmarks.

    for message in generate_responses(300, seed=7, scenario="mixed"):   # dicts, the input contract
        ...
    lines = generate_jsonl(300, seed=7)                                 # JSONL bytes, with malformed lines

Regenerate the shipped sample (`pipelines/data/sample_traffic.jsonl`) with:

    python -m pipelines.traffic.synthetic --count 300 --seed 7 --out pipelines/data/sample_traffic.jsonl

(`--flaw-rate 0.3` gives the flawed traffic of `FLAWED_FLAW_RATE`.)

Responses come from three domains (clinical, legal, financial) and several
tenants, retriever versions and risk levels. Each answer is built sentence by
sentence from facts placed in the evidence, with a verdict drawn per sentence:
restated facts (grounded), facts with an unsupported addition (partially
grounded), claims absent from the evidence (ungrounded) and facts with a
changed number or date (contradicted). Answers carry citation markers
(`[1]`, `[doc_alpha]`, `[2, 3]`, now and then a fabricated one), some quote
their source, and attributed-answer generators log claims with HIGH / MEDIUM /
LOW / UNSUPPORTED labels or 0-1 scores.

A scenario decides, for each response, the mix of verdicts and the retriever
version: `SCENARIOS[name](index, count) -> Profile`. Add one by registering a
function (e.g. a retriever regression that degrades grounding after a point).

`flaw_rate` is the share of sentences drawn flawed (partial, ungrounded or contradicted, in the
proportions 12 : 10 : 8) and scales the citation flaws with it (fabricated ids, a second passage
cited beside the one that supports the sentence). The default,
`HEALTHY_FLAW_RATE` (3%), is traffic of a healthy production system: about nine answers in ten
fully supported. `FLAWED_FLAW_RATE` (30%) is the traffic tests of the verifier and the audit want,
full of problems to find; with it the generator draws exactly what it drew before the default changed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pipelines.traffic.facts import DOMAINS, Fact

__all__ = [
    "FLAWED_FLAW_RATE",
    "HEALTHY_FLAW_RATE",
    "SCENARIOS",
    "Profile",
    "flawed_weights",
    "generate_jsonl",
    "generate_responses",
    "malformed_lines",
    "register_scenario",
    "write_jsonl",
]

VERDICTS = ("grounded", "partial", "ungrounded", "contradicted")
DEFAULT_START = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)

FLAWED_FLAW_RATE = 0.30
"""Three sentences in ten flawed: traffic full of problems, for the tests of the verifier and the audit."""
HEALTHY_FLAW_RATE = 0.03
"""Three sentences in a hundred flawed: a healthy production system, about nine answers in ten fully supported.
Published hallucination rates of current generators on grounded tasks are a few percent of answers; 3% of
sentences (answers of 2 to 5 sentences) leaves about one answer in ten with an unsupported or wrong
sentence, enough for the review queue and the drift checks to have something to show."""
_FLAW_MIX = {"partial": 0.12, "ungrounded": 0.10, "contradicted": 0.08}
_FABRICATED_AT_FLAWED = 0.04
"""Chance that a cited sentence names a passage that does not exist, at `FLAWED_FLAW_RATE`."""
_EXTRA_CITATION_AT_FLAWED = 0.15
"""Chance that a grounded sentence also cites a passage that does not support it, at `FLAWED_FLAW_RATE`."""


def flawed_weights(flaw_rate: float) -> dict[str, float]:
    """Verdict weights with `flaw_rate` of the sentences flawed, in the proportions of `_FLAW_MIX`."""
    if not 0.0 <= flaw_rate <= 1.0:
        raise ValueError(f"flaw_rate must be in [0, 1], got {flaw_rate}")
    total = sum(_FLAW_MIX.values())
    return {"grounded": 1.0 - flaw_rate, **{v: flaw_rate * w / total for v, w in _FLAW_MIX.items()}}


@dataclass(frozen=True)
class Profile:
    """How one response is generated: verdict weights per sentence and the retriever that served it."""

    verdict_weights: dict[str, float] = field(default_factory=lambda: flawed_weights(HEALTHY_FLAW_RATE))
    retriever_version: str | None = None
    """None lets the generator pick one of the usual versions."""
    fabricated_citation_rate: float = _FABRICATED_AT_FLAWED
    """Chance that a cited sentence names a passage that is not in the evidence."""
    extra_citation_rate: float = _EXTRA_CITATION_AT_FLAWED
    """Chance that a grounded sentence also cites a second passage, which does not support it (misattributed)."""

    @classmethod
    def with_flaw_rate(cls, flaw_rate: float, **kwargs) -> Profile:
        """A profile with `flaw_rate` of its sentences flawed and citation flaws as rare in proportion."""
        scale = flaw_rate / FLAWED_FLAW_RATE
        return cls(
            verdict_weights=flawed_weights(flaw_rate),
            fabricated_citation_rate=min(1.0, _FABRICATED_AT_FLAWED * scale),
            extra_citation_rate=min(1.0, _EXTRA_CITATION_AT_FLAWED * scale),
            **kwargs,
        )


Scenario = Callable[[int, int, float], Profile]
"""(index, count, flaw_rate) -> the profile of that response."""
SCENARIOS: dict[str, Scenario] = {}


def register_scenario(name: str, scenario: Scenario) -> None:
    """Make `scenario` available as `--scenario name`."""
    SCENARIOS[name] = scenario


register_scenario("mixed", lambda index, count, flaw_rate: Profile.with_flaw_rate(flaw_rate))

_GREEK = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta")
_DOC_STYLES = {
    "numeric": lambda i: str(i + 1),
    "named": lambda i: f"doc_{_GREEK[i]}" if i < len(_GREEK) else f"doc_{i + 1}",
    "kb": lambda i: f"kb-{1040 + 7 * i}",
}


def _pick(rng: random.Random, weights: dict[str, float]) -> str:
    names = list(weights)
    return rng.choices(names, weights=[weights[n] for n in names])[0]


def _timestamp(rng: random.Random, when: datetime) -> str | int:
    style = rng.random()
    if style < 0.1:
        return int(when.timestamp() * 1000)
    if style < 0.2:  # the same instant written in another zone
        return (when + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+01:00"
    return when.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _marker(ids: list[str]) -> str:
    return f" [{', '.join(ids)}]"


def _claim_confidence(rng: random.Random, verdict: str) -> tuple[object, str | None]:
    label = {
        "grounded": rng.choice(["HIGH", "HIGH", "MEDIUM"]),
        "partial": rng.choice(["MEDIUM", "LOW"]),
        "ungrounded": rng.choice(["LOW", "UNSUPPORTED", "HIGH"]),  # HIGH here: an overconfident generator
        "contradicted": rng.choice(["HIGH", "MEDIUM"]),
    }[verdict]
    if rng.random() < 0.3:
        score = {"HIGH": 0.92, "MEDIUM": 0.7, "LOW": 0.4, "UNSUPPORTED": 0.12}[label]
        return round(min(1.0, max(0.0, score + rng.uniform(-0.06, 0.06))), 2), None
    reason = None
    if label in ("LOW", "UNSUPPORTED") and rng.random() < 0.75:  # a quarter omit the reason the spec asks for
        reason = rng.choice(["only one weak source", "source is older than the question", "no passage states this"])
    return label, reason


def _response(
    rng: random.Random,
    index: int,
    when: datetime,
    profile: Profile,
    sentences: int | None,
    passages: int | None,
    attributed: bool = True,
    topical: bool = False,
) -> dict:
    """One logged response. `topical`: the query asks for the fact the answer opens with (`Fact.question`), as
    in traffic whose retrieval works, instead of one of the domain's generic questions."""
    domain = DOMAINS[rng.choice(sorted(DOMAINS))]
    facts: list[Fact] = domain.draw_facts(rng, passages or rng.randint(3, 5))
    n_passages = len(facts)
    doc_style = rng.choice(sorted(_DOC_STYLES))
    doc_ids = [_DOC_STYLES[doc_style](i) for i in range(n_passages)]
    evidence = []
    for i, fact in enumerate(facts):
        filler = domain.filler(rng)
        content = f"{filler} {fact.evidence}" if rng.random() < 0.5 else f"{fact.evidence} {filler}"
        passage = {"doc_id": doc_ids[i], "content": content}
        if rng.random() < 0.6:
            passage["chunk_index"] = rng.randint(0, 40)
            passage["source_uri"] = f"{domain.uri_prefix}/{doc_ids[i]}"
            passage["retrieval_timestamp"] = (when - timedelta(seconds=rng.randint(1, 5))).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            )
        evidence.append(passage)

    n_sentences = sentences or rng.randint(2, 5)
    order = list(range(n_passages))
    rng.shuffle(order)
    answer_parts, unmarked_parts, claims, citations = [], [], [], []
    logs_claims = rng.random() < 0.45  # an attributed-answer generator: claims and its own prompt version
    for s in range(n_sentences):
        verdict = _pick(rng, profile.verdict_weights)
        fact_i = order[s % n_passages]
        fact = facts[fact_i]
        cited = [doc_ids[fact_i]]
        if verdict == "grounded":
            text = fact.answer
            if rng.random() < profile.extra_citation_rate and n_passages > 1:
                other = order[(s + 1) % n_passages]
                cited.append(doc_ids[other])
        elif verdict == "partial":
            text = fact.answer.rstrip(".") + " " + domain.addition(rng) + "."
        elif verdict == "ungrounded":
            text = domain.unsupported(rng)
            cited = [] if rng.random() < 0.5 else cited
        else:
            text = fact.contradiction
        quote = None
        if verdict == "grounded" and rng.random() < 0.12:
            quote = fact.evidence.rstrip(".")
            text = f'{domain.quote_lead} "{quote}."'
        unmarked_parts.append(text)
        if cited and rng.random() < 0.85:
            if rng.random() < profile.fabricated_citation_rate:
                cited = [_DOC_STYLES[doc_style](n_passages + 1)]  # fabricated: not among the passages
            text = text[:-1] + _marker(cited) + text[-1]  # the marker goes before the final period
        answer_parts.append(text)
        if logs_claims:
            confidence, reason = _claim_confidence(rng, verdict)
            claim = {"claim_text": text.split(" [")[0], "source_doc_ids": cited, "confidence": confidence}
            if reason:
                claim["low_confidence_reason"] = reason
            if cited and rng.random() < 0.5:
                claim["attribution_span"] = fact.evidence.split(",")[0]
            claims.append(claim)
        if quote and cited:
            citations.append({"citation_id": f"[{cited[0]}]", "doc_id": cited[0], "quote": quote, "claim_text": text})

    tenant, risk = domain.tenant_and_risk(rng)
    if not attributed:  # the same answers, without the markers, claims and citations drawn for them
        answer_parts, claims, citations = unmarked_parts, [], []
    message = {
        "response_id": f"{domain.name[:3]}-{index:06d}-{rng.getrandbits(24):06x}",
        "timestamp": _timestamp(rng, when),
        "query": _query(domain.query(rng), facts[order[0]], topical),
        "answer": " ".join(answer_parts) if rng.random() < 0.9 else "\n".join(f"- {p}" for p in answer_parts),
        "evidence": evidence,
        "metadata": {
            "tenant": tenant,
            "risk_level": risk,
            "retriever_version": profile.retriever_version or rng.choice(["r7", "r7", "r8"]),
            "generator_model": rng.choice(["gen-large-2", "gen-small-1"]),
            "prompt_version": "attrib-v2" if logs_claims else rng.choice(["p3", "p4"]),
        },
    }
    if rng.random() < 0.5:
        message["schema_version"] = 1
    if claims:
        message["claims"] = claims
    if citations:
        message["citations"] = citations
    return message


def _query(generic: str, opening: Fact, topical: bool) -> str:
    # The generic question is drawn either way, so that topical traffic draws the same random values.
    return opening.question if topical else generic


def generate_responses(
    count: int,
    *,
    seed: int = 7,
    scenario: str = "mixed",
    start: datetime = DEFAULT_START,
    seconds_between: float = 6.0,
    sentences: int | None = None,
    passages: int | None = None,
    attributed: bool = True,
    flaw_rate: float = HEALTHY_FLAW_RATE,
) -> Iterator[dict]:
    """`count` valid logged responses (dicts of the input contract), the same for the same arguments.

    `flaw_rate` is the share of sentences drawn flawed: the healthy default, or `FLAWED_FLAW_RATE` for
    traffic full of problems (what the generator drew by default before; same seed, same traffic).

    Event times advance by about `seconds_between`, about one in ten out of order; `sentences` and
    `passages` fix the answer and evidence sizes (the benchmark uses 5 and 5). With `attributed=False` the
    same answers come without citation markers, explicit citations and generator claims, as a RAG system
    that logs no attribution sends them (the citation and claim audits then have nothing to check).
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; choose one of: {', '.join(sorted(SCENARIOS))}")
    flawed_weights(flaw_rate)  # a bad rate fails here, before anything is generated
    rng = random.Random(seed)
    for index in range(count):
        offset = index * seconds_between + rng.uniform(0, seconds_between)
        if rng.random() < 0.1:
            offset -= rng.uniform(30, 150)  # arrives after responses answered later than it
        when = start + timedelta(seconds=max(0.0, offset))
        profile = SCENARIOS[scenario](index, count, flaw_rate)
        yield _response(rng, index, when, profile, sentences, passages, attributed)


def malformed_lines(valid: list[dict], seed: int = 7) -> list[bytes]:
    """A handful of bad messages: one of each failure the parser must dead-letter, plus one empty evidence."""
    rng = random.Random(seed + 1)
    base = dict(valid[0])
    wrong_types = {**base, "response_id": 12345, "evidence": "see attached"}
    missing = {k: v for k, v in base.items() if k != "answer"}
    missing["response_id"] = "missing-answer-1"
    future = {**base, "response_id": "future-version-1", "schema_version": 3, "answer_segments": ["..."]}
    empty_evidence = {**base, "response_id": "empty-evidence-1", "evidence": []}
    duplicate = valid[rng.randrange(1, len(valid))] if len(valid) > 1 else base
    latin1 = json.dumps({**base, "response_id": "latin1-1"}, ensure_ascii=False).replace("The", "Th\u00e9", 1)
    return [
        json.dumps(base)[: len(json.dumps(base)) // 2].encode(),  # truncated mid-object
        b"{'response_id': 'single-quotes'}",
        json.dumps(wrong_types).encode(),
        json.dumps(missing).encode(),
        json.dumps(future).encode(),
        json.dumps(empty_evidence).encode(),
        json.dumps(duplicate).encode(),
        latin1.encode("latin-1", "replace"),
    ]


def generate_jsonl(
    count: int, *, seed: int = 7, scenario: str = "mixed", malformed: bool = True, **kwargs
) -> list[bytes]:
    """JSONL lines (without newlines): `count` valid responses with the malformed ones spread among them."""
    valid = list(generate_responses(count, seed=seed, scenario=scenario, **kwargs))
    lines = [json.dumps(m).encode() for m in valid]
    if malformed and valid:
        rng = random.Random(seed + 2)
        for bad in malformed_lines(valid, seed):
            lines.insert(rng.randrange(1, len(lines) + 1), bad)
    return lines


def write_jsonl(lines: Iterable[bytes], out: str) -> None:
    """Write encoded JSON lines, one per line, to a file path, or to stdout when `out` is "-"."""
    data = b"".join(line + b"\n" for line in lines)
    if out == "-":
        sys.stdout.buffer.write(data)
        return
    with open(out, "wb") as f:
        f.write(data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipelines.traffic.synthetic", description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300, help="Valid responses to generate. Default 300.")
    parser.add_argument("--seed", type=int, default=7, help="Random seed; same seed, same traffic. Default 7.")
    parser.add_argument("--scenario", default="mixed", help=f"One of: {', '.join(sorted(SCENARIOS))}.")
    parser.add_argument(
        "--flaw-rate",
        type=float,
        default=HEALTHY_FLAW_RATE,
        help=f"Share of sentences drawn flawed, in [0, 1]. Default {HEALTHY_FLAW_RATE} (healthy); "
        f"{FLAWED_FLAW_RATE} for traffic full of problems.",
    )
    parser.add_argument("--no-malformed", action="store_true", help="Leave out the malformed lines.")
    parser.add_argument("--out", default="-", help="Output JSONL file, or - for stdout. Default -.")
    args = parser.parse_args(argv)
    lines = generate_jsonl(
        args.count, seed=args.seed, scenario=args.scenario, malformed=not args.no_malformed, flaw_rate=args.flaw_rate
    )
    write_jsonl(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
