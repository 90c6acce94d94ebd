"""The review app in process (Starlette's TestClient): the queue, a response page, submitting labels, the token."""

from __future__ import annotations

import re
import shutil
import time

import pytest
from starlette.testclient import TestClient

from dashboards.views import connect_lake
from pipelines.cli import main
from pipelines.reviewing.app import ReviewConfig, review_app
from pipelines.reviewing.queries import LakeSession, QueueFilters, queue
from pipelines.reviewing.serve import TOKEN_VARIABLE, app_token
from pipelines.reviewing.store import ReviewInputError
from tests.support.audit_messages import message
from tests.support.review_lake import EVIDENCE, HIGH, build_lake


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_lake(str(tmp_path_factory.mktemp("app") / "lake"))


@pytest.fixture
def lake(built, tmp_path):
    return str(shutil.copytree(built, tmp_path / "lake"))


@pytest.fixture
def client(lake):
    return TestClient(review_app(ReviewConfig(lake, reviewer="ana")))


def _queue_ids(html: str) -> list[str]:
    return re.findall(r'<td><a href="/response/([^"?]+)\?', html)


def test_the_queue_lists_responses_in_review_high_risk_first_with_counts(client):
    page = client.get("/queue")
    assert page.status_code == 200
    ids = _queue_ids(page.text)
    assert ids[0] == "r-high" and "r-low" in ids and "r-good" not in ids
    assert "clinic (1)" in page.text and "legal (1)" in page.text
    assert "flagged (2)" in page.text and "risk (1)" in page.text


def test_the_queue_filters_by_tenant_risk_reason_version_and_time(client):
    assert _queue_ids(client.get("/queue?tenant=legal").text) == ["r-low"]
    assert _queue_ids(client.get("/queue?risk=high").text) == ["r-high"]
    assert _queue_ids(client.get("/queue?reason=risk").text) == ["r-high"]
    assert _queue_ids(client.get("/queue?since=2026-11-29T10:00Z").text) == ["r-low"]
    assert _queue_ids(client.get("/queue?until=2026-11-29T10:00Z").text) == ["r-high"]
    assert _queue_ids(client.get("/queue?verifier_version=nope").text) == []
    answer = client.get("/queue?since=garbage")  # said, not dropped: a dropped bound would show every response
    assert answer.status_code == 400 and answer.text.startswith("since='garbage' is not a time: give one such as ")
    assert client.get("/queue?until=2026-13-01").status_code == 400


def test_a_response_page_shows_query_sentences_evidence_in_passage_citations_and_why(client):
    page = client.get("/response/r-high").text
    assert "What was prescribed?" in page
    assert "contradicted by evidence" in page  # why in review
    assert 'class="badge v-contradicted"' in page
    # the contradicting excerpt highlighted inside the whole passage, with the passage's text around it
    assert re.search(r"Background\. <mark class=\"contradicts\">[^<]*50 mg[^<]*</mark>[^<]*Recheck\.", page)
    assert "Citation audit" in page and "kb-1" in page
    assert 'name="label-0"' in page and 'value="contradicted" checked' in page


def test_submitting_appends_one_row_per_sentence_and_goes_on_to_the_next(client, lake):
    form = {"label-0": "partially_grounded", "note-0": "dose unclear", "label-1": "fully_grounded",
            "t": "2026-11-29T09:00:30+00:00", "rank": "0", "then": "next"}  # fmt: skip
    answer = client.post("/response/r-high/review", data=form, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"].startswith("/response/r-low?")
    rows = connect_lake(lake).sql(
        "SELECT sentence_index, label, verifier_verdict, reviewer, note, source FROM reviews ORDER BY 1"
    )
    assert rows.fetchall() == [
        (0, "partially_grounded", "contradicted", "ana", "dose unclear", "web"),
        (1, "fully_grounded", "fully_grounded", "ana", "", "web"),
    ]
    assert _queue_ids(client.get("/queue").text) == ["r-low"]  # reviewed: out of the open queue
    assert _queue_ids(client.get("/queue?status=reviewed").text) == ["r-high"]
    assert 'value="partially_grounded" checked' in client.get("/response/r-high").text
    # The correction counts in its window's agreement at once: agreed on sentence 1, not on sentence 0.
    agreement = connect_lake(lake).sql(
        "SELECT reviewed_sentences, review_agreement FROM window_metrics WHERE slice_value = 'clinic'"
    )
    assert agreement.fetchall() == [(2, 0.5)]


def test_a_bad_submission_writes_nothing(client, lake):
    answer = client.post("/response/r-high/review", data={"label-0": "maybe"})
    assert answer.status_code == 400 and "unknown label 'maybe'" in answer.text
    answer = client.post("/response/r-high/review", data={"label-7": "ungrounded"})
    assert answer.status_code == 400 and "no sentence 7" in answer.text
    anyone = TestClient(review_app(ReviewConfig(lake)))  # the name comes from the page's field
    answer = anyone.post("/response/r-high/review", data={"label-0": "ungrounded", "reviewer": " "})
    assert answer.text == "not recorded: no reviewer: type your name in the reviewer field"
    assert connect_lake(lake).sql("SELECT count(*) FROM reviews").fetchall() == [(0,)]


def test_the_reviewer_comes_from_the_proxy_header_when_configured(lake):
    client = TestClient(review_app(ReviewConfig(lake, reviewer_header="X-Forwarded-User")))
    form = {"label-0": "contradicted", "reviewer": "mallory"}
    answer = client.post("/response/r-high/review", data=form)  # no header: no reviewer
    assert answer.status_code == 400
    said = "not recorded: no reviewer: the request has no X-Forwarded-User header (the proxy in front sets it)"
    assert answer.text == said
    headers = {"X-Forwarded-User": "dana@example.org"}
    assert client.post("/response/r-high/review", data=form, headers=headers, follow_redirects=False).status_code == 303
    assert connect_lake(lake).sql("SELECT reviewer FROM reviews").fetchall() == [("dana@example.org",)]


def test_a_token_guards_every_page(lake):
    client = TestClient(review_app(ReviewConfig(lake, token="s3cret", reviewer="ana")))
    assert client.get("/queue").status_code == 401
    assert client.get("/queue", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert client.get("/login?token=wrong").status_code == 401
    assert client.get("/login?token=s3cret").status_code == 200  # the cookie is set, then the queue
    assert client.get("/response/r-high").status_code == 200


def test_binding_beyond_loopback_needs_the_token_from_the_environment(lake, capsys, monkeypatch):
    with pytest.raises(ReviewInputError, match=TOKEN_VARIABLE):
        app_token("0.0.0.0", {})
    assert app_token("0.0.0.0", {TOKEN_VARIABLE: "t"}) == "t"
    assert app_token("127.0.0.1", {}) is None
    monkeypatch.delenv(TOKEN_VARIABLE, raising=False)
    assert main(["review", "--lake", lake, "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and TOKEN_VARIABLE in err


def test_an_unknown_response_is_404(client):
    assert client.get("/response/r-none").status_code == 404


def test_skip_to_next_opens_the_next_open_response_in_queue_order(client):
    page = client.get("/response/r-high").text
    [link] = re.findall(r'href="(/next\?[^"]+)"', page)
    answer = client.get(link.replace("&amp;", "&"), follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"].startswith("/response/r-low?")
    [last] = re.findall(r'href="(/next\?[^"]+)"', client.get("/response/r-low").text)
    assert client.get(last.replace("&amp;", "&"), follow_redirects=False).headers["location"].startswith("/queue")


def test_a_passage_with_two_excerpts_is_shown_once_with_both_marked():
    from pipelines.reviewing.page import response_view

    passage = "Alpha one. Beta two. Gamma three."
    sentence = {
        "sentence_index": 0, "sentence_text": "Alpha and gamma.", "attribution_verdict": "fully_grounded",
        "supporting_evidence_ids": ["d", "d"], "supporting_passage_sha256": ["h", "h"],
        "supporting_starts": [0, 21], "supporting_ends": [10, 33], "supporting_evidence_excerpts": ["", ""],
    }  # fmt: skip
    view = response_view({"sentences": [sentence], "passages": {"h": passage}, "labels": {}})
    [item] = view["sentences"][0]["evidence"]
    assert [text for text, marked in item["segments"] if marked] == ["Alpha one.", "Gamma three."]


def test_a_submission_with_a_wrong_time_still_finds_its_response(client, lake):
    form = {"label-0": "contradicted", "t": "2020-01-01T00:00:00+00:00"}  # the page's time hint, stale or forged
    assert client.post("/response/r-high/review", data=form, follow_redirects=False).status_code == 303
    assert connect_lake(lake).sql("SELECT response_id, label FROM reviews").fetchall() == [("r-high", "contradicted")]


def test_new_audits_reach_the_queue_through_views_made_again_in_a_thread(lake):
    session = LakeSession(lake, refresh_seconds=0)
    assert "r-new" not in _queue_ids_of(session)
    build_lake(lake, [message("r-new", answer=HIGH["answer"], evidence=EVIDENCE, metadata=HIGH["metadata"])])
    deadline = time.monotonic() + 60
    while "r-new" not in _queue_ids_of(session):  # the first cursor() starts the thread; later ones see its views
        assert time.monotonic() < deadline, "the views were never made again"
        time.sleep(0.05)


def _queue_ids_of(session: LakeSession) -> list[str]:
    return [item["response_id"] for item in queue(session.cursor(), QueueFilters(status="all")).items]
