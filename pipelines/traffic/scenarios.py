"""Traffic scenarios for drift detection: hours of ordinary traffic, with or without a retriever regression.

    python -m pipelines.traffic.scenarios --scenario retriever-regression --windows 60 --seed 3 --out traffic.jsonl
    groundwatch audit --input traffic.jsonl --lake ./lake && groundwatch drift --lake ./lake

- `stable`: `windows` windows of normal traffic with the noise real traffic has: the volume swells
  and ebbs (a slow cycle plus random spread), the tenant and domain mix varies, answer quality
  wobbles a little from window to window, and about one response in twenty arrives late.
- `retriever-regression`: the same, until `change_at` (a fraction of the run, default 0.6); from
  then on the traffic the main retriever (`r7`) served is served by a new version (`r9`) that
  returns a share of irrelevant passages (another domain's text) and stale ones (numbers and dates
  out of date), so its answers lose support and the verifier's confidence falls. The canary
  retriever `r8` keeps serving its share unchanged, so the alert has to name the right version.
  With `recover_at`, `r7` comes back at that point (a rollback), so alerts can be seen clearing.
- `two-causes`: the retriever regression, and later (`misquote_at`, default 0.8 of the run) a second,
  independent cause: the generator model `gen-small-1` starts misquoting the numbers of its evidence
  on every retriever, so its answers are contradicted where r9's are unsupported.
- `off-topic-retriever`: from `change_at`, `r9` serves what `r7` served and, for `off_topic_share` of its
  responses, returns passages about another domain altogether; the generator answers anyway, from what it
  knows. The retrieval checks should see it, and the incident name retrieval.
- `generator-regression`: from `change_at`, a new generator model (`gen-large-3`) answers `generator_share`
  of the traffic and ignores its good passages in `ignore_share` of its sentences (claims they do not hold).
  Retrieval holds; the incident should name generation.

Every scenario's query asks for the fact its answer opens with (`Fact.question`), as in traffic whose
retriever works, so that ordinary traffic's passages are about its queries.

Ordinary traffic logs claims as a healthy attributed-answer generator would (sourced, rarely
low-confidence: inside spec 004's limits); the regressed retriever's answers keep the generic
generator's claims, which cite less and hedge more.

Responses are the input contract of `pipelines.traffic.synthetic`, built by its generator; this module only
decides when they happen, which retriever served them, and how the retriever damaged the evidence.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from pipelines.traffic import synthetic as traffic
from pipelines.traffic.facts import DOMAINS
from schemas import LoggedResponse, Origin, ParsedResponse
from transforms.io.lake.rows import to_lake_rows

__all__ = [
    "SCENARIO_NAMES",
    "ScenarioSpec",
    "audit_into_lake",
    "change_time",
    "misquote_time",
    "recovery_time",
    "scenario_jsonl",
    "scenario_responses",
]

SCENARIO_NAMES = ("stable", "retriever-regression", "two-causes", "off-topic-retriever", "generator-regression")
RETRIEVER_SCENARIOS = frozenset({"retriever-regression", "two-causes", "off-topic-retriever"})
"""The scenarios in which r9 takes over r7's traffic at `change_at`."""
OLD_RETRIEVER, CANARY_RETRIEVER, NEW_RETRIEVER = "r7", "r8", "r9"
MISQUOTING_MODEL = "gen-small-1"
NEW_GENERATOR = "gen-large-3"


@dataclass(frozen=True)
class ScenarioSpec:
    """The shape of one generated scenario run."""

    name: str = "stable"
    windows: int = 60
    window_seconds: int = 60
    per_window: int = 40
    """Mean responses per window (the volume cycles around it)."""
    change_at: float = 0.6
    """Where in the run the regression starts, as a fraction of the windows (regression only)."""
    recover_at: float | None = None
    """Where the old retriever comes back, as a fraction of the windows (regression only; None: never)."""
    damaged_share: float = 0.3
    """Share of passages the regressed retriever returns irrelevant or stale."""
    canary_share: float = 0.3
    misquote_at: float | None = None
    """Where `gen-small-1` starts misquoting numbers, as a fraction of the windows (None: 0.8 in `two-causes`,
    never otherwise)."""
    misquote_share: float = 0.6
    """Share of that model's answers with a misquoted number from then on."""
    off_topic_share: float = 0.4
    """Share of r9's responses whose passages are all about another domain (`off-topic-retriever`)."""
    generator_share: float = 0.5
    """Share of the traffic the new generator answers from `change_at` (`generator-regression`)."""
    ignore_share: float = 0.6
    """Share of the new generator's sentences that ignore the passages (`generator-regression`)."""
    seed: int = 7
    start: datetime = traffic.DEFAULT_START
    flaw_rate: float | None = None
    """Share of flawed sentences in ordinary traffic (`synthetic.HEALTHY_FLAW_RATE` for a healthy system); None
    keeps the ~28% the drift benchmarks and tests were measured on."""

    def __post_init__(self):
        if self.name not in SCENARIO_NAMES:
            raise ValueError(f"unknown scenario {self.name!r}; choose one of: {', '.join(SCENARIO_NAMES)}")
        if self.windows < 1 or self.per_window < 1 or self.window_seconds < 1:
            raise ValueError("windows, per_window and window_seconds must be positive")
        shares = (self.change_at, self.damaged_share, self.off_topic_share, self.generator_share, self.ignore_share)
        if not all(0 <= share <= 1 for share in shares):
            raise ValueError("change_at and the scenario's shares must be in [0, 1]")
        if self.flaw_rate is not None and not 0 <= self.flaw_rate <= 1:
            raise ValueError(f"flaw_rate must be in [0, 1], got {self.flaw_rate}")


def recovery_time(spec: ScenarioSpec) -> datetime | None:
    """When the old retriever is back (a window boundary), or None."""
    if spec.name == "stable" or spec.recover_at is None:
        return None
    return spec.start + timedelta(seconds=round(spec.windows * spec.recover_at) * spec.window_seconds)


def change_time(spec: ScenarioSpec) -> datetime | None:
    """When the regression starts (a window boundary), or None for the stable scenario."""
    if spec.name == "stable":
        return None
    return spec.start + timedelta(seconds=round(spec.windows * spec.change_at) * spec.window_seconds)


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _stale(content: str, rng: random.Random) -> str:
    """The passage as an outdated index holds it: its figures are those of an earlier version."""

    def older(match: re.Match) -> str:
        text = match.group(0)
        if "." in text:
            return f"{float(text) * rng.choice([0.8, 1.25]):.{len(text.split('.')[1])}f}"
        value = int(text)
        return str(value - 1 if 1990 < value < 2100 else value + rng.choice([1, 2, 5]) * max(1, value // 10))

    stale = _NUMBER.sub(older, content)
    return stale if stale != content else content + " This guidance was superseded."


def _damage_evidence(message: dict, share: float, rng: random.Random) -> dict:
    """Replace a share of the passages with irrelevant text (half) or a stale version (half)."""
    others = sorted(DOMAINS)
    evidence = []
    for passage in message["evidence"]:
        passage = dict(passage)
        if rng.random() < share:
            if rng.random() < 0.5:
                domain = DOMAINS[rng.choice(others)]
                passage["content"] = f"{domain.filler(rng)} {domain.filler(rng)}"
            else:
                passage["content"] = _stale(passage["content"], rng)
        evidence.append(passage)
    return {**message, "evidence": evidence}


def _off_topic(message: dict, rng: random.Random) -> dict:
    """Every passage replaced by one about another domain: a fact and a filler of its own, none of the query's."""
    own = message["response_id"][:3]  # responses are named after their domain (`synthetic._response`)
    domain = DOMAINS[rng.choice([name for name in sorted(DOMAINS) if not name.startswith(own)])]
    facts = domain.draw_facts(rng, len(message["evidence"]))  # a domain has more facts than a response passages
    evidence = [
        {**passage, "content": f"{fact.evidence} {domain.filler(rng)}"}
        for passage, fact in zip(message["evidence"], facts, strict=True)
    ]
    return {**message, "evidence": evidence}


def _ignoring(weights: dict[str, float], share: float) -> dict[str, float]:
    """Verdict weights of a generator that ignores its passages in `share` of its sentences (ungrounded)."""
    kept = {verdict: weight * (1 - share) for verdict, weight in weights.items()}
    return {**kept, "ungrounded": kept["ungrounded"] + share}


def _healthy_claims(message: dict, rng: random.Random) -> dict:
    """Claims as a healthy attributed-answer generator logs them: nearly always sourced, rarely low-confidence.

    The generic generator's claims miss the spec's targets (coverage ~93%, low-confidence ~18%), which
    would make ordinary traffic alert all the time; production traffic that is "normal" meets them.
    """
    if not message.get("claims"):
        return message
    doc_ids = [p["doc_id"] for p in message["evidence"]]
    claims = []
    for claim in message["claims"]:
        claim = dict(claim)
        sources = [d for d in claim.get("source_doc_ids", []) if d in doc_ids]
        if not sources and rng.random() < 0.985:
            sources = [rng.choice(doc_ids)]
        claim["source_doc_ids"] = sources
        confidence = claim.get("confidence")
        if confidence in ("LOW", "UNSUPPORTED") and rng.random() < 0.9:
            claim["confidence"] = "MEDIUM"
            claim.pop("low_confidence_reason", None)
        elif isinstance(confidence, float) and confidence < 0.7 and rng.random() < 0.9:
            claim["confidence"] = round(rng.uniform(0.75, 0.9), 2)
            claim.pop("low_confidence_reason", None)
        claims.append(claim)
    return {**message, "claims": claims}


def _misquote(message: dict, rng: random.Random) -> dict:
    """The answer with one of its numbers stated wrong: the evidence has it, the generator misstates it."""
    answer = message["answer"]
    numbers = list(_NUMBER.finditer(answer))
    if not numbers:
        return message
    m = rng.choice(numbers)
    text = m.group(0)
    wrong = f"{float(text) * 1.5:.{len(text.split('.')[1])}f}" if "." in text else str(int(text) * 2 + 3)
    return {**message, "answer": answer[: m.start()] + wrong + answer[m.end() :]}


def misquote_time(spec: ScenarioSpec) -> datetime | None:
    """When `gen-small-1` starts misquoting numbers (a window boundary), or None."""
    at = spec.misquote_at if spec.misquote_at is not None else (0.8 if spec.name == "two-causes" else None)
    if at is None:
        return None
    return spec.start + timedelta(seconds=round(spec.windows * at) * spec.window_seconds)


def _volume(spec: ScenarioSpec, window: int, rng: random.Random) -> int:
    cycle = 1.0 + 0.3 * math.sin(2 * math.pi * window / 30.0)  # a slow swell, like hours of a day
    return max(1, round(spec.per_window * cycle * rng.lognormvariate(0.0, 0.15)))


def _weights(rng: random.Random, flaw_rate: float | None = None) -> dict[str, float]:
    # Answer quality wobbles from window to window (harder questions, other topics), without a trend.
    wobble = rng.uniform(-0.03, 0.03)
    if flaw_rate is not None:  # the same wobble, in proportion to how much is flawed
        return traffic.flawed_weights(min(1.0, max(0.0, flaw_rate * (1 + wobble / 0.28))))
    grounded = 0.72 + wobble
    return {"grounded": grounded, "partial": 0.12, "ungrounded": 0.09, "contradicted": 1.0 - grounded - 0.21}


def scenario_responses(spec: ScenarioSpec) -> Iterator[dict]:
    """The scenario's logged responses (input-contract dicts), in arrival order; same spec, same traffic."""
    rng = random.Random(spec.seed)
    changed_at, recovered_at = change_time(spec), recovery_time(spec)
    misquote_from = misquote_time(spec)
    pending: list[tuple[datetime, dict]] = []
    index = 0
    # Citation flaws as rare as the other flaws when a flaw rate is asked for; as they always were otherwise.
    base = traffic.Profile() if spec.flaw_rate is None else traffic.Profile.with_flaw_rate(spec.flaw_rate)
    citation_flaws = (base.fabricated_citation_rate, base.extra_citation_rate)
    for window in range(spec.windows):
        window_start = spec.start + timedelta(seconds=window * spec.window_seconds)
        weights = _weights(rng, spec.flaw_rate)
        for _ in range(_volume(spec, window, rng)):
            when = window_start + timedelta(seconds=rng.uniform(0, spec.window_seconds))
            canary = rng.random() < spec.canary_share
            changed = changed_at is not None and when >= changed_at and (recovered_at is None or when < recovered_at)
            regressed = changed and spec.name in RETRIEVER_SCENARIOS and not canary
            new_generator = changed and spec.name == "generator-regression" and rng.random() < spec.generator_share
            version = CANARY_RETRIEVER if canary else NEW_RETRIEVER if regressed else OLD_RETRIEVER
            verdicts = _ignoring(weights, spec.ignore_share) if new_generator else weights
            profile = traffic.Profile(verdicts, version, *citation_flaws)
            message = traffic._response(rng, index, when, profile, None, None, topical=True)
            if new_generator:
                message["metadata"]["generator_model"] = NEW_GENERATOR
            if regressed and spec.name == "off-topic-retriever":
                if rng.random() < spec.off_topic_share:
                    message = _off_topic(message, rng)  # its raw claims, as below
                else:
                    message = _healthy_claims(message, rng)
            elif regressed:
                # The generator keeps its raw claims: on weak evidence it hedges and cites less.
                message = _damage_evidence(message, spec.damaged_share, rng)
            else:
                message = _healthy_claims(message, rng)
            misquoting = misquote_from is not None and when >= misquote_from
            if misquoting and message["metadata"].get("generator_model") == MISQUOTING_MODEL:
                if rng.random() < spec.misquote_share:
                    message = _misquote(message, rng)
            # Most messages arrive within seconds; one in twenty is late by a minute or two.
            lag = rng.uniform(30, 120) if rng.random() < 0.05 else rng.expovariate(1 / 3.0)
            pending.append((when + timedelta(seconds=lag), message))
            index += 1
    pending.sort(key=lambda item: item[0])
    for _, message in pending:
        yield message


def scenario_jsonl(spec: ScenarioSpec) -> list[bytes]:
    """The scenario as JSONL lines (without newlines)."""
    return [json.dumps(m).encode() for m in scenario_responses(spec)]


def audit_into_lake(
    messages: list[dict], lake_dir: str, *, window_seconds: int = 60, verifier: str = "heuristic"
) -> int:
    """Audit messages with the pipeline's own plain functions, without Beam, into the lake; returns the count.

    The same verifier, audit steps, lake rows and window metrics as `groundwatch audit`, for drift
    tests and benchmarks that need many windows quickly. Tests of the pipeline itself use the pipeline.
    """
    # kept lazy: start-up (the scenario generator's own command line writes JSONL without Beam or the verifiers)
    from transforms.audit.stages import audit_response
    from transforms.audit.steps import audit_steps
    from transforms.io.lake.writer import write_table
    from transforms.monitoring.window_metrics import compute_window_metrics, stats_from_audited
    from transforms.verify.base import DEFAULT_CONFIDENCE_THRESHOLD
    from transforms.verify.registry import make_verifier

    checker = make_verifier(verifier)
    steps = [step for _, _, step in audit_steps(DEFAULT_CONFIDENCE_THRESHOLD)]
    tables: dict[str, list[dict]] = {}
    stats = []
    for line, message in enumerate(messages):
        response = LoggedResponse.model_validate(message)
        epoch = int(response.timestamp.timestamp()) // window_seconds * window_seconds
        start = datetime.fromtimestamp(epoch, tz=response.timestamp.tzinfo)
        audited = audit_response(
            ParsedResponse(response=response, origin=Origin(source="scenario", offset=line)),
            verifier=checker,
            window_start=start,
            window_end=start + timedelta(seconds=window_seconds),
            now=start + timedelta(seconds=window_seconds),
            steps=steps,
        )
        stats.append(stats_from_audited(audited))
        for table, row in to_lake_rows(audited):
            tables.setdefault(table, []).append(row)
    tables["window_metrics"] = [m.model_dump() for m in compute_window_metrics(stats)]
    for table, rows in tables.items():
        write_table(lake_dir, table, rows)
    return len(messages)


def add_spec_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags that shape a scenario (shared by this module's CLI and the benchmark)."""
    parser.add_argument("--scenario", default="stable", choices=SCENARIO_NAMES, help="Scenario. Default stable.")
    parser.add_argument("--windows", type=int, default=60, help="Windows of traffic. Default 60.")
    parser.add_argument("--window-seconds", type=int, default=60, help="Window size in seconds. Default 60.")
    parser.add_argument("--per-window", type=int, default=40, help="Mean responses per window. Default 40.")
    parser.add_argument(
        "--change-at", type=float, default=0.6, help="Regression start as a fraction of the run. Default 0.6."
    )
    parser.add_argument("--damaged-share", type=float, default=0.3, help="Share of damaged passages. Default 0.3.")
    parser.add_argument("--seed", type=int, default=7, help="Random seed. Default 7.")


def spec_from_args(args: argparse.Namespace) -> ScenarioSpec:
    return ScenarioSpec(
        name=args.scenario,
        windows=args.windows,
        window_seconds=args.window_seconds,
        per_window=args.per_window,
        change_at=args.change_at,
        damaged_share=args.damaged_share,
        seed=args.seed,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipelines.traffic.scenarios", description=__doc__.splitlines()[0])
    add_spec_arguments(parser)
    parser.add_argument("--out", default="-", help="Output JSONL file, or - for stdout. Default -.")
    args = parser.parse_args(argv)
    traffic.write_jsonl(scenario_jsonl(spec_from_args(args)), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
