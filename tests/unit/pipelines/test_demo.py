"""The README's first command and `groundwatch audit`, end to end through the CLI, checked by reading the lake."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from pathlib import Path

from dashboards.lake_sql import run_query
from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from pipelines.demo import query_text, sample_traffic_path
from pipelines.reporting.drift_demo import DEMO_SPEC
from pipelines.runner.bounded import run_audit
from pipelines.traffic.synthetic import generate_jsonl


def test_demo_audits_the_sample_traffic_and_prints_a_summary(demo_lake):
    lake, out = demo_lake.lake, demo_lake.out  # `groundwatch demo --lake LAKE`, run once per session
    for heading in ("Sentence verdicts", "By tenant and retriever", "Dead letters", "need human review"):
        assert heading in out

    with open(sample_traffic_path(), "rb") as f:
        messages = sum(1 for line in f if line.strip())
    con = connect_lake(lake)
    # The regression scenario shares the lake (an hour later): the sample traffic is what came before it.
    sample = f"window_start < TIMESTAMPTZ '{DEMO_SPEC.start.isoformat()}'"
    audited = con.execute(f"SELECT count(*) FROM responses WHERE {sample}").fetchone()[0]
    dead = con.execute("SELECT count(*) FROM dead_letters").fetchone()[0]
    assert audited + dead == messages and dead >= 6  # no sampling in the demo: everything is audited or dead
    # Healthy traffic: most of the sample's answers stay out of the review queue (73% went to review at 30% flaws).
    in_review = con.execute(f"SELECT count(*) FILTER (WHERE needs_review) FROM responses WHERE {sample}").fetchone()[0]
    assert in_review / audited < 0.5
    # ... and the demo's alerts and incident are in the same lake, naming the regressed retriever.
    causes = con.execute("SELECT cause_value, cause, retrieval_moved FROM incidents WHERE status = 'firing'").fetchall()
    assert causes == [("r9", "retrieval", True)]  # the retrieval scores moved: retrieval, not generation
    assert "INCIDENT retriever_version=r9" in out
    verdicts = {v for (v,) in con.execute("SELECT DISTINCT attribution_verdict FROM sentences").fetchall()}
    assert verdicts == {"fully_grounded", "partially_grounded", "ungrounded", "contradicted"}
    assert con.execute("SELECT count(DISTINCT tenant) FROM responses").fetchone()[0] >= 5
    read_line = next(line for line in out.splitlines() if line.startswith("read "))
    assert int(read_line.split()[1]) == messages


def test_auditing_the_sample_again_overwrites_instead_of_duplicating(tmp_path):
    lake = str(tmp_path / "lake")
    traffic = tmp_path / "sample.jsonl"  # the sample's first 40 lines: good answers and broken lines
    with open(sample_traffic_path(), "rb") as sample:
        traffic.write_bytes(b"".join(itertools.islice(sample, 40)))
    argv = ["audit", "--input", str(traffic), "--lake", lake]
    assert groundwatch(argv) == 0
    con = connect_lake(lake)
    every_file = f"SELECT count(*) FROM read_parquet('{lake}/*/**/*.parquet', union_by_name = true)"
    before = con.execute(every_file).fetchone()[0]
    assert groundwatch(argv) == 0
    assert con.execute(every_file).fetchone()[0] == before > 0


def test_audit_command_from_the_shell(tmp_path):
    traffic = tmp_path / "traffic.jsonl"
    lines = generate_jsonl(40, seed=3)
    traffic.write_bytes(b"\n".join(lines) + b"\n")
    lake = tmp_path / "lake"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipelines.cli",
            "audit",
            "--input",
            str(traffic),
            "--lake",
            str(lake),
            "--sample-rate",
            "0.5",
            "--window-seconds",
            "120",
            "--confidence-threshold",
            "0.6",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    counts = {}
    for line in result.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] in ("read", "audited", "sampled", "dead-lettered"):
            counts[parts[0]] = int(parts[2] if parts[0] == "sampled" else parts[1])
    assert counts["read"] == len(lines)
    assert counts["read"] == counts["audited"] + counts["sampled"] + counts["dead-lettered"]
    assert counts["sampled"] > 0
    con = connect_lake(str(lake))
    assert con.execute("SELECT count(*) FROM responses").fetchone()[0] == counts["audited"]
    assert con.execute("SELECT count(*) FROM dead_letters").fetchone()[0] == counts["dead-lettered"]
    windows = con.execute("SELECT DISTINCT epoch(window_end) - epoch(window_start) FROM responses").fetchall()
    assert windows == [(120.0,)]


def test_audit_command_with_a_missing_input_exits_2(tmp_path):
    code = groundwatch(["audit", "--input", str(tmp_path / "nothing*.jsonl"), "--lake", str(tmp_path / "lake")])
    assert code == 2


def test_the_demo_says_where_its_responses_came_from(demo_lake):
    lake, out = demo_lake.lake, demo_lake.out
    total = connect_lake(lake).execute("SELECT count(*) FROM responses").fetchone()[0]
    line = next(line for line in out.splitlines() if line.startswith("The lake's "))
    assert line.startswith(f"The lake's {total} responses: ")
    assert "from sample_traffic.jsonl" in line and "from regression.jsonl" in line
    assert sum(int(part.split()[0]) for part in line.split(": ", 1)[1].split(", ")) == total


def test_the_readme_counts_the_sample_traffic_as_the_audit_does_and_dead_letters_have_a_reason(tmp_path):
    lake = str(tmp_path / "lake")
    counts = run_audit([f"--input={sample_traffic_path()}", f"--lake={lake}"], out=lambda _: None)
    readme = (Path(__file__).parents[3] / "README.md").read_text()
    lines, responses, broken = map(int, re.search(SAMPLE_SENTENCE, " ".join(readme.split())).groups())
    assert (lines, responses, broken) == (counts.read, counts.audited, counts.dead_lettered)
    # The demo's table of dead letters and a query of the lake name the same reasons, from one column.
    by_query = dict(connect_lake(lake).execute("SELECT reason, count(*) FROM dead_letters GROUP BY 1").fetchall())
    columns, rows = run_query(lake, query_text("dead_letters.sql"))
    by_demo = {}
    for row in rows:
        reason, messages = row[columns.index("reason")], row[columns.index("messages")]
        by_demo[reason] = by_demo.get(reason, 0) + messages
    assert by_query == by_demo and sum(by_query.values()) == counts.dead_lettered
    assert "malformed_json" in by_query and "" not in by_query


SAMPLE_SENTENCE = r"\((\d+) lines: (\d+) responses .*?, and (\d+) lines that break the contract"
"""How the README counts the sample traffic (collapsed to one line): what the audit must count alike."""
