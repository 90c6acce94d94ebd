"""Reviews are data: `review label` and `review import` append rows, the latest label wins, bad input writes
nothing and exits 2 with one line; `review export` writes a golden file that `calibrate --golden` reads."""

from __future__ import annotations

import json
import shutil

import pytest

from dashboards.views import connect_lake
from pipelines.cli import main
from pipelines.reviewing.store import create_latest_view
from tests.support.audit_messages import message
from tests.support.review_lake import GOOD, HIGH, LOW, build_lake
from transforms.evaluation.golden import load_golden


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_lake(str(tmp_path_factory.mktemp("review") / "lake"))


@pytest.fixture
def lake(built, tmp_path):
    return shutil.copytree(built, tmp_path / "lake")


def _reviews(lake):
    con = connect_lake(str(lake))
    create_latest_view(con)
    every = con.sql("SELECT response_id, sentence_index, label, reviewer, note, verifier_verdict, source FROM reviews")
    latest = con.sql("SELECT response_id, sentence_index, label FROM reviews_latest ORDER BY ALL")
    return sorted(every.fetchall()), latest.fetchall()


def _label(lake, *extra):
    args = ["review", "label", "--lake", str(lake), "--response-id", "r-high", "--sentence", "0"]
    return main([*args, *extra])


def test_a_label_is_a_row_with_the_verifier_verdict_of_the_time(lake, capsys):
    assert _label(lake, "--label", "contradicted", "--reviewer", "ana", "--note", "80 mg, not 50") == 0
    [(rid, idx, label, reviewer, note, verdict, source)] = _reviews(lake)[0]
    assert (rid, idx, label, reviewer, note, source) == ("r-high", 0, "contradicted", "ana", "80 mg, not 50", "cli")
    assert verdict == "contradicted"
    assert "recorded 1 review" in capsys.readouterr().out


def test_a_later_label_supersedes_the_earlier_and_both_rows_stay(lake):
    assert _label(lake, "--label", "fully_grounded", "--reviewer", "ana") == 0
    assert _label(lake, "--label", "partially_grounded", "--reviewer", "bo") == 0
    every, latest = _reviews(lake)
    assert sorted(r[2] for r in every) == ["fully_grounded", "partially_grounded"]
    assert latest == [("r-high", 0, "partially_grounded")]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--label", "wrong", "--reviewer", "ana"], "unknown label 'wrong'"),
        (["--label", "ungrounded", "--reviewer", " "], "no reviewer"),
    ],
)
def test_bad_labels_are_one_line_exit_2_and_nothing_written(lake, capsys, extra, says):
    assert _label(lake, *extra) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1
    assert not (lake / "reviews").exists()


def test_an_unknown_response_or_sentence_is_refused(lake, capsys):
    args = ["review", "label", "--lake", str(lake), "--label", "ungrounded", "--reviewer", "ana"]
    assert main([*args, "--response-id", "r-nope", "--sentence", "0"]) == 2
    assert "unknown response 'r-nope'" in capsys.readouterr().err
    assert main([*args, "--response-id", "r-high", "--sentence", "9"]) == 2
    assert "has no sentence 9 (its sentences are 0..1)" in capsys.readouterr().err
    assert not (lake / "reviews").exists()


def test_import_records_all_lines_or_none(lake, tmp_path, capsys):
    good = {"response_id": "r-low", "sentence_index": 1, "label": "ungrounded"}
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "sentence_index": 7}) + "\n")
    assert main(["review", "import", "--lake", str(lake), str(path), "--reviewer", "cy"]) == 2
    assert "line 2: response 'r-low' has no sentence 7" in capsys.readouterr().err
    assert not (lake / "reviews").exists()
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({**good, "sentence_index": 0, "reviewer": "di"}) + "\n")
    assert main(["review", "import", "--lake", str(lake), str(path), "--reviewer", "cy"]) == 0
    every, _ = _reviews(lake)
    assert [(r[1], r[3], r[6]) for r in every] == [(0, "di", "import"), (1, "cy", "import")]


def test_import_refuses_a_line_that_is_not_json(lake, tmp_path, capsys):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"response_id": "r-low", "sentence_index": 0, "label": "ungrounded", "reviewer": "x"}\n{oops\n')
    assert main(["review", "import", "--lake", str(lake), str(path)]) == 2
    assert capsys.readouterr().err.startswith("groundwatch review: line 2: not JSON")


def test_export_writes_a_golden_file_calibrate_reads(lake, tmp_path, capsys):
    assert _label(lake, "--label", "contradicted", "--reviewer", "ana") == 0
    main(["review", "label", "--lake", str(lake), "--response-id", "r-low", "--sentence", "1", "--label",
          "ungrounded", "--reviewer", "ana"])  # fmt: skip
    out = tmp_path / "golden.jsonl"
    assert main(["review", "export", "--lake", str(lake), "--golden", str(out)]) == 0
    records, rejected = load_golden(out)
    assert not rejected
    assert [(r.label, r.source) for r in records] == [
        ("contradicted", "reviews:clinic"),
        ("ungrounded", "reviews:legal"),
    ]
    assert "Metoprolol 50 mg twice daily" in records[0].evidence[0].content
    assert main(["review", "export", "--lake", str(lake), "--golden", str(out), "--tenant", "legal"]) == 0
    assert [r.label for r in load_golden(out)[0]] == ["ungrounded"]


def test_no_lake_is_exit_2(tmp_path, capsys):
    assert main(["review", "export", "--lake", str(tmp_path / "none"), "--golden", str(tmp_path / "g.jsonl")]) == 2
    assert "no lake at" in capsys.readouterr().err


def _agreement(lake):
    """The window metrics the lake's views keep for the whole traffic: (window start, reviewed, agreement)."""
    return (
        connect_lake(str(lake))
        .sql(
            "SELECT window_start, reviewed_sentences, review_agreement FROM window_metrics"
            " WHERE slice_dimension = 'all' ORDER BY 1"
        )
        .fetchall()
    )


def test_a_label_counts_in_its_windows_agreement_at_once(lake):
    assert _agreement(lake) == []  # the lake was written without window metrics
    assert _label(lake, "--label", "contradicted", "--reviewer", "ana") == 0
    [(start, reviewed, agreement)] = _agreement(lake)  # only the labelled response's window is computed
    assert (start.hour, start.minute, reviewed, agreement) == (9, 0, 1, 1.0)
    assert _label(lake, "--label", "fully_grounded", "--reviewer", "bo") == 0  # a correction: the verifier erred
    assert _agreement(lake) == [(start, 1, 0.0)]


REVIEW_FIGURES = (
    "window_start, slice_dimension, slice_value, responses, reviewed_sentences, review_agreement, "
    "sample_reviewed_sentences, sample_review_agreement"
)


def _review_figures(lake):
    """The review figures of every window and slice the lake's views keep."""
    return connect_lake(str(lake)).sql(f"SELECT {REVIEW_FIGURES} FROM window_metrics ORDER BY ALL").fetchall()


def test_an_audit_of_the_same_input_again_keeps_its_windows_reviews(tmp_path, capsys):
    # The audit's own window metrics count no review; with as many responses and newer, the views would keep
    # them over the ones computed when the label was recorded, until the next `groundwatch metrics`.
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_text("".join(json.dumps(m) + "\n" for m in (HIGH, GOOD, LOW)))  # HIGH and GOOD: one window
    lake = tmp_path / "lake"
    audit = ["audit", "--input", str(traffic), "--lake", str(lake)]
    assert main(audit) == 0
    assert "with reviews" not in capsys.readouterr().out  # a lake without reviews: nothing computed again
    assert _label(lake, "--label", "contradicted", "--reviewer", "ana") == 0
    labelled = _review_figures(lake)
    assert [row[3:6] for row in labelled if row[1] == "all" and row[4]] == [(2, 1, 1.0)]

    assert main(audit) == 0
    assert _review_figures(lake) == labelled
    assert "window metrics 1 windows with reviews: computed again from the lake" in capsys.readouterr().out
    assert main(["metrics", "--lake", str(lake)]) == 0
    assert _review_figures(lake) == labelled


def test_a_window_across_two_hours_is_computed_from_both(tmp_path):
    first, second = (
        message(rid, timestamp=when, metadata={"tenant": "clinic", "risk_level": "high"})
        for rid, when in (("r-first", "2026-11-29T10:59:30Z"), ("r-second", "2026-11-29T11:00:30Z"))
    )
    lake = build_lake(str(tmp_path / "lake"), [first, second], window_seconds=7200)  # one window, 10:00-12:00
    assert main(["review", "label", "--lake", lake, "--response-id", "r-second", "--sentence", "0",
                 "--label", "contradicted", "--reviewer", "ana"]) == 0  # fmt: skip
    rows = (
        connect_lake(lake)
        .sql("SELECT window_start, responses, reviewed_sentences FROM window_metrics WHERE slice_dimension = 'all'")
        .fetchall()
    )
    assert [(start.hour, responses, reviewed) for start, responses, reviewed in rows] == [(10, 2, 1)]
