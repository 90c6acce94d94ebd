"""`groundwatch demo`: audit the sample traffic that ships with the package and summarize the lake.

    groundwatch demo [--lake ./groundwatch-lake] [Beam options]

Runs the audit pipeline over `pipelines/data/sample_traffic.jsonl` (a few
hundred synthetic responses from clinical, legal and financial tenants, the
traffic of a healthy system, with a handful of malformed lines), and over a short
retriever-regression scenario an hour later, into the same lake; prints tables
queried from the lake with the SQL files in `dashboards/queries/`; then runs drift
detection over the lake and prints the incident and its alerts
(`pipelines.reporting.drift_demo`). Re-running overwrites the same files.
`groundwatch report --lake <lake>` and `groundwatch ui --lake <lake>` show it all.
A stage that adds figures to the demo appends `(title, sql file)` to `SUMMARIES`.
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources

from dashboards.lake_sql import QueryError, format_rows, run_query
from pipelines.options.common import add_lake_argument
from pipelines.reporting.drift_demo import audit_regression, regression_demo
from pipelines.runner.bounded import run_audit
from pipelines.runner.counts import AuditCounts

__all__ = ["ACCEPTS_PIPELINE_ARGS", "SUMMARIES", "add_arguments", "main", "sample_traffic_path", "summarize"]

ACCEPTS_PIPELINE_ARGS = True

SUMMARIES: list[tuple[str, str]] = [
    ("Sentence verdicts", "verdict_counts.sql"),
    ("By tenant and retriever", "slices.sql"),
    ("Citations", "citation_status.sql"),
    ("Generator claims", "claim_figures.sql"),
    ("Dead letters", "dead_letters.sql"),
]


def sample_traffic_path() -> str:
    """The shipped sample traffic (package data)."""
    return str(resources.files("pipelines") / "data" / "sample_traffic.jsonl")


def query_text(name: str) -> str:
    """A SQL file of the query library `dashboards/queries/`."""
    return (resources.files("dashboards") / "queries" / name).read_text(encoding="utf-8")


def summarize(lake: str, counts: AuditCounts | None = None) -> str:
    """The demo's summary tables, queried from the lake."""
    parts = []
    for title, sql_file in SUMMARIES:
        columns, rows = run_query(lake, query_text(sql_file))
        parts.append(f"== {title} ==\n{format_rows(columns, rows, 'table')}")
    _, review = run_query(lake, "SELECT count(*) FILTER (WHERE needs_review), count(*) FROM responses")
    _, by_version = run_query(
        lake,
        "SELECT retriever_version, count(*) FILTER (WHERE needs_review), count(*) FROM responses GROUP BY 1 ORDER BY 1",
    )
    _, by_file = run_query(
        lake, "SELECT regexp_extract(origin_source, '[^/]+$'), count(*) FROM responses GROUP BY 1 ORDER BY 2"
    )
    shares = ", ".join(f"{v}: {n} of {total} ({n / total:.0%})" for v, n, total in by_version if total)
    parts.append(
        f"== Review ==\n{review[0][0]} of {review[0][1]} audited responses need human review"
        f" (by retriever_version: {shares})\n"
        f"The lake's {review[0][1]} responses: " + ", ".join(f"{n} from {name}" for name, n in by_file)
    )
    review_sql = resources.files("dashboards") / "queries" / "review_queue.sql"
    parts.append(
        f'Explore: groundwatch query --lake {lake} "SELECT * FROM responses LIMIT 5"\n'
        f"   or:  groundwatch query --lake {lake} --file {review_sql}\n"
        f"Review: groundwatch review --lake {lake}   (the review queue in a browser, http://127.0.0.1:8300)"
    )
    return "\n\n".join(parts)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_lake_argument(parser)


def main(args: argparse.Namespace) -> int:
    argv = [f"--input={sample_traffic_path()}", f"--lake={args.lake}", *(getattr(args, "extra_args", None) or [])]
    print(f"Auditing the sample traffic {sample_traffic_path()}\n")
    try:
        counts = run_audit(argv, progress="demo")
        print("\nAuditing a retriever-regression scenario into the same lake")
        audit_regression(args.lake, getattr(args, "extra_args", None) or [])
        print()
        print(summarize(args.lake, counts))
        print()
        regression_demo(args.lake)
    except (ValueError, QueryError) as e:
        print(f"groundwatch demo: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"groundwatch demo: {e}", file=sys.stderr)
        return 1
    return 0
