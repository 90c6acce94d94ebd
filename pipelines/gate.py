"""`groundwatch gate`: a release gate for CI over a JSONL file of responses.

    groundwatch gate --input answers.jsonl                      # the default policy, the checks on stdout
    groundwatch gate --input answers.jsonl [--max-review-share 0.2] [--min-mean-confidence 0.75] \\
        [--no-fail-on-contradicted] [--no-fail-on-fabricated] [--no-fail-on-high-risk-citations] \\
        [--baseline last-release.jsonl|LAKE_DIR --max-drop 0.05] [--junit gate.xml] [--summary gate.md] \\
        [--verifier heuristic|model|cascade] [--calibration cal.json] [judge and model flags]

The default policy (`DEFAULT_POLICY`): the gate fails on any contradicted sentence, any fabricated citation
and any failed citation in high-risk traffic; each has a `--no-...` flag to loosen it, and the threshold
flags tighten it.

Every line is audited in process by the same stage function as the audit pipeline
(`transforms.audit.stages.audit_response` through `pipelines.runner.inline`): no runner and no lake are
needed, and each response's verdict comes back for its JUnit test case. Lines that are not valid logged
responses, and repeated response ids (the pipeline dead-letters them too), are test errors and fail the
gate. `--baseline` is a JSONL file (audited the same way) or an audit lake (its `sentences` view), in a folder or
in object storage (`s3://bucket/lake`);
`--max-drop` is the largest allowed fall of the mean faithfulness score (the supported share of each
answer) below it.

Prints the checks as a table; writes the JUnit XML and the Markdown summary when asked to. Exit codes: 0 every check
passed, 1 a threshold was breached (or a line could not be audited), 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
import sys

from pipelines.options.audit import add_calibration_argument, load_calibration
from pipelines.options.model import add_stage_arguments, stage_verifier_config
from pipelines.reporting.gate_report import (
    GateFigures,
    GateLimits,
    LineOutcome,
    decided_by_line,
    format_table,
    gate_checks,
    gate_figures,
    write_junit,
    write_markdown,
)
from pipelines.runner.inline import InlineAuditor
from transforms.ingest.parse import ParseError
from transforms.io.lake import filesystem as lakefs
from transforms.verify.base import DEFAULT_CONFIDENCE_THRESHOLD
from transforms.verify.registry import available_verifiers

__all__ = ["DEFAULT_POLICY", "add_arguments", "audit_file", "lake_figures", "main"]

DEFAULT_POLICY = (
    "Default policy: fail on any contradicted sentence, any fabricated citation (a source id not in the evidence) "
    "and any failed citation in high-risk traffic; --no-fail-on-... loosens each, the threshold flags tighten it. "
    "Exit 0 passed, 1 a check failed, 2 bad usage."
)


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = DEFAULT_POLICY
    parser.add_argument("--input", required=True, help="JSONL file of logged responses (one JSON object per line).")
    parser.add_argument(
        "--baseline",
        metavar="LAKE_OR_FILE",
        help="A JSONL file, or an audit lake (a folder or a URI, s3://bucket/lake), to compare with.",
    )
    parser.add_argument("--max-review-share", type=_fraction, help="Fail above this share needing review, in [0, 1].")
    on = argparse.BooleanOptionalAction
    parser.add_argument(
        "--fail-on-contradicted", action=on, default=True, help="Fail if any sentence is contradicted. Default on."
    )
    parser.add_argument(
        "--fail-on-fabricated", action=on, default=True, help="Fail if any citation names no passage. Default on."
    )
    parser.add_argument(
        "--fail-on-high-risk-citations",
        action=on,
        default=True,
        help="Fail if any citation of a high-risk response fails its audit. Default on.",
    )
    parser.add_argument("--min-mean-confidence", type=_fraction, help="Fail below this mean confidence of the claims.")
    parser.add_argument("--max-drop", type=_fraction, help="Fail if mean faithfulness drops more than this.")
    parser.add_argument("--junit", metavar="OUT.xml", help="Also write the JUnit XML report here. Optional.")
    parser.add_argument("--summary", metavar="OUT.md", help="Also write the Markdown summary here. Optional.")
    parser.add_argument("--verifier", default="heuristic", help=f"One of: {', '.join(available_verifiers())}.")
    parser.add_argument(
        "--confidence-threshold",
        type=_fraction,
        default=DEFAULT_CONFIDENCE_THRESHOLD,
        help=f"Sentences under this confidence need review. Default {DEFAULT_CONFIDENCE_THRESHOLD}.",
    )
    add_calibration_argument(parser)
    add_stage_arguments(parser)


def audit_file(path: str, auditor) -> list[LineOutcome]:
    """Every non-blank line of `path` audited (or the reason it could not be), in order; lines count from 1."""
    outcomes: list[LineOutcome] = []
    seen: dict[str, int] = {}  # response id -> the line that first held it
    with open(path, "rb") as lines:
        for number, line in enumerate(lines, start=1):
            line = line.rstrip(b"\r\n")
            if not line.strip():
                continue
            try:
                parsed = auditor.parse(line, offset=number)
            except ParseError as e:
                outcomes.append(LineOutcome(number, error=f"{e.reason}: {e.message}"))
                continue
            response_id = parsed.response.response_id
            if response_id in seen:
                error = f"duplicate_response_id: {response_id!r} was already read at line {seen[response_id]}"
                outcomes.append(LineOutcome(number, error=error))
                continue
            seen[response_id] = number
            try:
                outcomes.append(LineOutcome(number, audited=auditor.audit(parsed)))
            except Exception as e:  # one response's failure is its test error, as a dead letter in the pipeline
                outcomes.append(LineOutcome(number, error=" ".join(f"audit_failed: {type(e).__name__}: {e}".split())))
    return outcomes


def lake_figures(lake_dir: str) -> GateFigures:
    """The baseline figures of an audit lake: mean confidence, mean faithfulness and review counts."""
    from dashboards.views import connect_lake  # kept lazy: start-up (only with a baseline lake)

    con = connect_lake(lake_dir)
    try:
        sentences, mean = con.execute(
            "SELECT count(*), avg(confidence) FROM sentences WHERE coalesce(claim_kind, 'claim') = 'claim'"
        ).fetchone()
        # Answers that claim nothing have no faithfulness: null, or 1 in a lake written before the null.
        audited, review, faithfulness = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE needs_review), avg(overall_faithfulness_score) FILTER ("
            "WHERE sentence_count = 0 OR response_id IN "
            "(SELECT response_id FROM sentences WHERE coalesce(claim_kind, 'claim') = 'claim')) FROM responses"
        ).fetchone()
    except Exception as e:
        why = " ".join(str(e).split())[:200]
        raise ValueError(f"--baseline {lake_dir!r} is not a readable audit lake: {why}") from None
    finally:
        con.close()
    return GateFigures(
        audited=audited, needs_review=review, sentences=sentences, mean_confidence=mean, mean_faithfulness=faithfulness
    )


def _baseline_figures(path: str, auditor) -> GateFigures:
    """The figures of a JSONL baseline. Lines that cannot be audited are said on stderr (they would otherwise
    move the baseline unseen); a baseline with none that can is a usage error, not a comparison with nothing."""
    outcomes = audit_file(path, auditor)
    if not outcomes:
        raise ValueError(f"--baseline {path!r} holds no responses (no line that is not blank)")
    failed = [o for o in outcomes if o.error is not None]
    if failed:
        first = f"the first, line {failed[0].line}: {failed[0].error}"
        if len(failed) == len(outcomes):
            raise ValueError(f"--baseline {path!r}: none of its {len(outcomes)} lines could be audited ({first})")
        print(
            f"groundwatch gate: --baseline {path!r}: {len(failed)} of {len(outcomes)} lines could not be audited "
            f"and are left out of the baseline ({first})",
            file=sys.stderr,
        )
    return gate_figures(outcomes)


def _check_usage(args: argparse.Namespace) -> None:
    if not os.path.isfile(args.input):
        raise ValueError(f"--input {args.input!r} is not a file")
    if args.max_drop is not None and not args.baseline:
        raise ValueError("--max-drop needs --baseline (a JSONL file or an audit lake folder)")
    if args.baseline and lakefs.is_remote(args.baseline):
        lakefs.check_location(args.baseline)  # ValueError on one line, without secrets
        if not lakefs.is_dir(lakefs.normalize(args.baseline)):
            raise ValueError(f"--baseline {args.baseline!r}: no audit lake there (no object under that prefix)")
    elif args.baseline and not os.path.exists(args.baseline):
        raise ValueError(f"--baseline {args.baseline!r} does not exist")
    for flag in ("junit", "summary"):
        if getattr(args, flag) is None:
            continue
        folder = os.path.dirname(os.path.abspath(getattr(args, flag)))
        if not os.path.isdir(folder):
            raise ValueError(f"--{flag}: folder {folder!r} does not exist")


def main(args: argparse.Namespace) -> int:
    try:
        _check_usage(args)
        config = stage_verifier_config(args)
        if args.calibration:
            config["calibration"] = load_calibration(args)
        auditor = InlineAuditor(
            args.verifier, threshold=args.confidence_threshold, verifier_config=config, source=f"file:{args.input}"
        )
        baseline = None
        if args.baseline:
            if lakefs.is_remote(args.baseline) or os.path.isdir(args.baseline):
                baseline = lake_figures(args.baseline)
            else:
                baseline = _baseline_figures(args.baseline, auditor)
    except (ValueError, OSError) as e:
        print(f"groundwatch gate: {e}", file=sys.stderr)
        return 2
    outcomes = audit_file(args.input, auditor)
    figures = gate_figures(outcomes)
    limits = GateLimits(
        max_review_share=args.max_review_share,
        fail_on_contradicted=args.fail_on_contradicted,
        fail_on_fabricated=args.fail_on_fabricated,
        fail_on_high_risk_citations=args.fail_on_high_risk_citations,
        min_mean_confidence=args.min_mean_confidence,
        max_drop=args.max_drop,
    )
    checks = gate_checks(figures, limits, baseline)
    passed = all(c.passed for c in checks)
    title = f"`{args.input}`: {figures.audited} responses, verifier {args.verifier}" + (
        f", baseline `{args.baseline}`" if args.baseline else ""
    )
    if args.junit:
        write_junit(args.junit, outcomes, checks, source=args.input)
    if args.summary:
        write_markdown(args.summary, figures, checks, outcomes, title=title)
    print(format_table(checks))
    if figures.decided_by:
        print(decided_by_line(figures.decided_by))
    outputs = [f"{name} {path}" for name, path in (("JUnit", args.junit), ("summary", args.summary)) if path]
    verdict = "passed" if passed else "FAILED"
    print(f"gate {verdict}: {title.replace('`', '')}" + (f"; {', '.join(outputs)}" if outputs else ""))
    return 0 if passed else 1
