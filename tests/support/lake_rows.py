"""The lake's rows as sets, by table, to check that two ways of running an audit write the same lake; and a
dead letter row, the smallest row a lake can hold, for tests of the readers.

`lake_rows` keeps a few columns per table that say what was audited (no floats compared loosely, no order).
To compare every column of two runs on different runners or filesystems, floats within a tolerance, use
`tests/support/lake_compare.assert_same_tables` (its `table_rows` reads one table so) instead.
"""

from __future__ import annotations

from datetime import UTC, datetime

from dashboards.views import connect_lake

QUERIES = {
    "responses": "SELECT response_id, overall_faithfulness_score, needs_review, citation_failed FROM responses",
    "sentences": "SELECT response_id, sentence_index, attribution_verdict, confidence FROM sentences",
    "citations": "SELECT response_id, citation_index, verification_status FROM citations",
    "claims": "SELECT response_id, claim_index, verified_verdict FROM claims",
    "dead_letters": "SELECT origin_source, origin_offset, error FROM dead_letters",
    "window_metrics": "SELECT window_start, slice_dimension, slice_value, responses FROM window_metrics",
}


def lake_rows(lake: str) -> dict[str, set]:
    """Every table's rows (the columns that say what was audited, not when), as the views show them."""
    con = connect_lake(lake)
    return {table: set(con.execute(sql).fetchall()) for table, sql in QUERIES.items()}


def dead_letter_row(i: int, reason: str = "malformed_json") -> dict:
    """The `dead_letters` row of the i-th malformed line of a file, received at 09:i on 2026-11-29."""
    return {
        "dead_letter_id": f"dl-{i}",
        "received_at": datetime(2026, 11, 29, 9, i, tzinfo=UTC),
        "stage": "parse",
        "error": f"{reason}: because",
        "raw_payload": b"{oops",
        "origin_source": "file:/t.jsonl",
        "origin_offset": i + 1,
    }
