"""`scripts/bench_audit.py --against CHECKOUT --whole-pipeline` runs each checkout's `groundwatch audit` and reads
the counts the command prints at its end: the summary of today's command must read back as the counts it shows."""

from __future__ import annotations

from pipelines.runner.counts import AuditCounts, format_counts
from tests.support.scripts import load_script

bench = load_script("bench_audit")


def test_the_printed_summary_reads_back_as_its_counts():
    counts = AuditCounts(
        read=5003,
        audited=4990,
        sampled_out=6,
        dead_lettered=7,
        needs_review=4187,
        dead_letter_reasons={"invalid_json": 4, "schema_violation": 3},
        skipped_blank=2,
        with_unknown_fields=11,
    )
    printed = bench.printed_counts(format_counts(counts, "/data/lake 2026"))
    assert printed == {
        "read": 5003,
        "skipped blank": 2,
        "audited": 4990,
        "sampled out": 6,
        "dead-lettered": 7,
        "unknown fields": 11,
    }


def test_the_lake_line_is_not_a_count_even_with_digits_in_its_path():
    counts = AuditCounts(read=3, audited=3, sampled_out=0, dead_lettered=0, needs_review=0, dead_letter_reasons={})
    assert "lake" not in bench.printed_counts(format_counts(counts, "/tmp/2026/lake"))


def test_the_rest_is_the_run_less_its_stages_and_says_so_when_they_were_not_measured():
    assert bench._split(7.31, 5.32) == "stages 5.32, the rest 1.99"
    assert "not measured" in bench._split(7.31, None)
