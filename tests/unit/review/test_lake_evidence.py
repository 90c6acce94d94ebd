"""The lake keeps what a reviewer needs: query, answer, whole passages once by hash, excerpt offsets, redaction."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from dashboards.views import connect_lake
from pipelines.runner.inline import InlineAuditor
from tests.support.audit_messages import message
from transforms.io.lake.evidence import locate, passage_sha256
from transforms.io.lake.redact import MASK, redact
from transforms.io.lake.rows import to_lake_rows
from transforms.io.lake.writer import write_table

SHARED = {"doc_id": "kb-1", "content": "Metoprolol 50 mg twice daily was prescribed on March 3, 2024."}
PII = {
    "doc_id": "kb-2",
    "content": "Contact Dr. Ann Lee at ann.lee@clinic.example or +1 (555) 010-7788; patient MRN-0048812.",
}
ANSWER = (
    "The patient was prescribed 50 mg of metoprolol twice daily on March 3, 2024 [1]. Write to ann.lee@clinic.example."
)


@pytest.fixture(scope="module")
def audited():
    auditor = InlineAuditor()
    messages = [
        message(f"r-{i}", answer=ANSWER, query="Reach me at bob@example.com", evidence=[SHARED, PII]) for i in range(3)
    ]
    return [auditor.audit(auditor.parse(json.dumps(m).encode())) for m in messages]


def _rows(audited, *, redact_text=False):
    tables = defaultdict(list)
    for a in audited:
        for table, row in to_lake_rows(a, redact=redact_text):
            tables[table].append(row)
    return tables


def test_redaction_masks_personal_data_with_masks_of_the_same_length():
    text = "Mail ann@example.org, call 555-010-7788, SSN 123-45-6789, card 4111 1111 1111 1111, id AB1234567."
    masked = redact(text)
    assert len(masked) == len(text)
    for secret in ("ann@example.org", "555-010-7788", "123-45-6789", "4111 1111 1111 1111", "AB1234567"):
        assert secret not in masked
        start = text.index(secret)
        assert masked[start : start + len(secret)] == MASK * len(secret)
    assert redact(masked) == masked


def test_redaction_keeps_dates_doses_years_and_amounts():
    text = "On March 3, 2024 (2024-03-03) 150 patients took 2000 mg; the fund holds $1,250,000 and 12.5%."
    assert redact(text) == text


def test_responses_keep_query_answer_and_name_their_passages(audited):
    tables = _rows(audited)
    row = tables["responses"][0]
    assert row["query_text"] == "Reach me at bob@example.com"
    assert row["answer_text"] == ANSWER
    assert row["evidence_doc_ids"] == ["kb-1", "kb-2"]
    assert row["evidence_sha256"] == [passage_sha256(SHARED["content"]), passage_sha256(PII["content"])]


def test_a_passage_retrieved_by_many_responses_is_stored_once(tmp_path, audited):
    tables = _rows(audited)
    for table, rows in tables.items():
        write_table(str(tmp_path), table, rows)
    con = connect_lake(str(tmp_path))
    stored = con.sql("SELECT passage_sha256, content FROM passages ORDER BY content").fetchall()
    assert sorted(c for _, c in stored) == sorted([SHARED["content"], PII["content"]])
    assert all(h == passage_sha256(c) for h, c in stored)


def test_sentence_offsets_point_at_the_excerpt_inside_the_whole_passage(audited):
    tables = _rows(audited)
    passages = {r["passage_sha256"]: r["content"] for r in tables["passages"]}
    located = 0
    for s in tables["sentences"]:
        for i, excerpt in enumerate(s["supporting_evidence_excerpts"]):
            start, end = s["supporting_starts"][i], s["supporting_ends"][i]
            if start >= 0:
                assert passages[s["supporting_passage_sha256"][i]][start:end] == excerpt
                located += 1
    assert located >= 1


def test_redact_masks_all_stored_text_and_offsets_still_hold(audited):
    tables = _rows(audited, redact_text=True)
    for table, rows in tables.items():
        for row in rows:
            assert "ann.lee@clinic.example" not in json.dumps(row, default=str), table
            assert "bob@example.com" not in json.dumps(row, default=str), table
    response = tables["responses"][0]
    assert len(response["answer_text"]) == len(ANSWER) and MASK in response["answer_text"]
    passages = {r["passage_sha256"]: r["content"] for r in tables["passages"]}
    assert set(response["evidence_sha256"]) == set(passages)
    assert all(passage_sha256(c) == h for h, c in passages.items())
    assert any("MRN" not in c and MASK in c for c in passages.values())


def test_locate_finds_verbatim_then_caseless_and_reports_a_paraphrase():
    passage = "The lease term is 24 months."
    assert locate("24 months", passage) == (18, 27)
    assert locate("THE LEASE", passage) == (0, 9)
    assert locate("two years", passage) == (-1, -1)


def test_audit_redact_flag_masks_the_lake_it_writes(tmp_path):
    from pipelines.cli import main

    source = tmp_path / "in.jsonl"
    lines = [
        message(f"r-{i}", answer=ANSWER, query="Reach me at bob@example.com", evidence=[SHARED, PII]) for i in range(2)
    ]
    source.write_text("\n".join(json.dumps(m) for m in lines) + "\n")
    lake = tmp_path / "lake"
    assert main(["audit", "--input", str(source), "--lake", str(lake), "--redact", "--runner=FnApiRunner"]) == 0
    con = connect_lake(str(lake))
    [(query, answer)] = con.sql("SELECT DISTINCT query_text, answer_text FROM responses").fetchall()
    assert "bob@example.com" not in query and len(query) == len("Reach me at bob@example.com")
    assert "ann.lee@clinic.example" not in answer and len(answer) == len(ANSWER)
    contents = [c for (c,) in con.sql("SELECT content FROM passages").fetchall()]
    assert len(contents) == 2 and not any("ann.lee@clinic.example" in c for c in contents)
