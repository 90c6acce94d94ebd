"""`groundwatch serve`: the service's ASGI app in process (Starlette's TestClient, no port: the fast tier), and the
real service on uvicorn (thread or subprocess) called over HTTP with httpx (`server`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from starlette.testclient import TestClient

from pipelines.runner.inline import InlineAuditor, undetermined
from pipelines.serving.app import API_KEY_ENV, ServeConfig, VerifyApp
from pipelines.serving.documents import MAX_BATCH_ITEMS, MAX_BODY_BYTES
from tests.support.audit_messages import BAD_MESSAGES, message, raw
from tests.support.openai_server import OpenAIServer, Scripted, data_document, grounded_reply
from tests.support.serve_fixtures import free_port, running_service, verdict_message, wait_until_healthy
from transforms.ingest.parse import parse_message


@pytest.fixture(scope="module")
def service():
    """The app in process: the same requests and replies, without a server listening on a port."""
    with TestClient(VerifyApp(ServeConfig())) as client:
        yield client


@pytest.fixture(scope="module")
def served():
    """The app on uvicorn, over HTTP: for what only a real server shows (streamed bodies, concurrent calls)."""
    with running_service(ServeConfig()) as base_url, httpx.Client(base_url=base_url, timeout=30) as client:
        yield client


@pytest.mark.parametrize("kind", ["fully_grounded", "contradicted", "ungrounded"])
def test_each_verdict_comes_back_with_its_routing(service, kind):
    reply = service.post("/v1/verify", json=verdict_message(kind))
    assert reply.status_code == 200, reply.text
    result = reply.json()
    assert result["response_id"] == f"resp-{kind}" and result["status"] == "determined"
    [sentence] = result["report"]["sentences"]
    assert sentence["attribution_verdict"] == kind
    assert set(result["report"]) >= {"answer_id", "sentences", "overall_faithfulness_score", "critical_flags"}
    assert result["citations"]["summary"]["total_citations"] == (0 if kind == "ungrounded" else 1)
    assert result["review"]["needs_review"] is (kind != "fully_grounded")
    if kind == "contradicted":
        assert result["review"]["reasons"][0] == "sentence 0 contradicted by evidence 1"
    if kind == "ungrounded":
        assert "sentence 0 ungrounded (no supporting evidence)" in result["review"]["reasons"]


def test_a_fabricated_citation_is_a_citation_critical_failure(service):
    result = service.post("/v1/verify", json=verdict_message("fabricated")).json()
    assert result["citations"]["summary"]["critical_failures"] == ["[7]"]
    assert any("fabricated" in r for r in result["review"]["reasons"])


def test_logged_claims_get_their_claim_checks(service):
    claims = [{"claim_text": "Metoprolol 50 mg twice daily was prescribed.", "source_doc_ids": ["1"]}]
    result = service.post("/v1/verify", json=message("with-claims", claims=claims)).json()
    assert [c["claim_index"] for c in result["claims"]["claims"]] == [0]


def test_a_batch_answers_every_item_and_the_counts_add_up(service):
    items = [verdict_message("fully_grounded", "b-1"), {"answer": "no id"}, verdict_message("contradicted", "b-3")]
    reply = service.post("/v1/verify/batch", json={"responses": items})
    assert reply.status_code == 200
    batch = reply.json()
    assert (batch["received"], batch["verified"], batch["rejected"]) == (3, 2, 1)
    assert batch["indexes"] == [0, 2]
    assert [r["response_id"] for r in batch["results"]] == ["b-1", "b-3"]
    assert [(e["index"], e["error"]) for e in batch["errors"]] == [(1, "missing_field")]


def test_a_response_id_twice_in_a_batch_is_audited_once(service):
    """As the pipeline dead-letters a repeat and gate fails it: the second copy is an item error."""
    items = [verdict_message("fully_grounded", "b-1"), verdict_message("contradicted", "b-1")]
    batch = service.post("/v1/verify/batch", json={"responses": items}).json()
    assert (batch["received"], batch["verified"], batch["rejected"], batch["indexes"]) == (2, 1, 1, [0])
    [error] = batch["errors"]
    assert error == {"index": 1, "error": "duplicate_response_id", "message": "'b-1' was already given at index 0"}


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        (BAD_MESSAGES["malformed_json"], 400, "malformed_json"),
        (BAD_MESSAGES["not_utf8"], 400, "not_utf8"),
        (raw(message("lone", answer="\ud800 alone")), 400, "invalid_unicode"),  # json.dumps escapes it
        (BAD_MESSAGES["not_an_object"], 422, "not_an_object"),
        (BAD_MESSAGES["invalid_fields"], 422, "invalid_fields"),
        (BAD_MESSAGES["missing_field"], 422, "missing_field"),
        (BAD_MESSAGES["unknown_schema_version"], 422, "unknown_schema_version"),
        (raw(message("late", timestamp="2301-01-01T00:00:00Z")), 422, "timestamp_out_of_range"),
    ],
)
def test_bad_requests_get_a_4xx_with_a_one_line_reason(service, body, status, error):
    reply = service.post("/v1/verify", content=body, headers={"content-type": "application/json"})
    assert reply.status_code == status
    document = reply.json()
    assert document["error"] == error
    assert document["message"] and "\n" not in document["message"]


@pytest.mark.server
def test_bodies_over_the_size_limit_are_413(served):
    big = raw(message("big", answer="word " * (MAX_BODY_BYTES // 5)))
    assert len(big) > MAX_BODY_BYTES
    reply = served.post("/v1/verify", content=big)
    assert (reply.status_code, reply.json()["error"]) == (413, "body_too_large")

    def chunks():  # no content-length: the limit holds while the body streams in
        for i in range(0, len(big), 65536):
            yield big[i : i + 65536]

    reply = served.post("/v1/verify", content=chunks())
    assert (reply.status_code, reply.json()["error"]) == (413, "body_too_large")
    padding = {"doc_id": "pad", "content": "filler " * ((MAX_BODY_BYTES - 2000) // 7)}
    just_under = raw(message("fits", evidence=[*message()["evidence"], padding]))
    assert len(just_under) <= MAX_BODY_BYTES
    assert served.post("/v1/verify", content=just_under).status_code == 200


def test_bad_batches_and_routes(service):
    assert service.post("/v1/verify/batch", content=b"[1,").json()["error"] == "malformed_json"
    reply = service.post("/v1/verify/batch", json=[message()])
    assert (reply.status_code, reply.json()["error"]) == (422, "invalid_fields")
    too_many = {"responses": [message(f"m-{i}") for i in range(MAX_BATCH_ITEMS + 1)]}
    reply = service.post("/v1/verify/batch", json=too_many)
    assert (reply.status_code, reply.json()["error"]) == (413, "too_many_items")
    assert service.get("/v1/verify").status_code == 405
    assert service.get("/nowhere").status_code == 404


def test_health_and_openapi(service):
    health = service.get("/healthz").json()
    assert health["status"] == "ok" and health["verifier"] == "heuristic"
    document = service.get("/openapi.json").json()
    assert document["openapi"].startswith("3.1")
    assert set(document["paths"]) == {"/v1/verify", "/v1/verify/batch", "/healthz"}
    schemas = document["components"]["schemas"]
    assert {"LoggedResponse", "VerifyResult", "BatchResult", "ErrorBody"} <= set(schemas)
    assert "evidence" in schemas["LoggedResponse"]["required"]


@pytest.mark.server
def test_concurrent_requests_each_get_their_own_answer(served):
    kinds = ["fully_grounded", "contradicted", "ungrounded"] * 8

    def call(i):
        return served.post("/v1/verify", json=verdict_message(kinds[i], f"c-{i}")).json()

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(call, range(len(kinds))))
    assert [r["response_id"] for r in results] == [f"c-{i}" for i in range(len(kinds))]
    assert [r["report"]["sentences"][0]["attribution_verdict"] for r in results] == kinds


@pytest.mark.server
def test_the_api_key_is_required_when_set():
    with running_service(ServeConfig(), api_key="s3cret-key") as base_url, httpx.Client(base_url=base_url) as client:
        missing = client.post("/v1/verify", json=message())
        assert (missing.status_code, missing.json()["error"]) == (401, "missing_api_key")
        wrong = client.post("/v1/verify", json=message(), headers={"authorization": "Bearer s3cret-kez"})
        assert (wrong.status_code, wrong.json()["error"]) == (403, "invalid_api_key")
        assert client.post("/v1/verify", json=message(), headers={"x-api-key": "wrong"}).status_code == 403
        right = client.post("/v1/verify", json=message(), headers={"authorization": "Bearer s3cret-key"})
        assert right.status_code == 200
        assert client.post("/v1/verify/batch", json={"responses": []}, headers={"x-api-key": "s3cret-key"}).is_success
        assert client.get("/healthz").status_code == 200  # liveness stays open for load balancers
        assert "s3cret-key" not in client.get("/openapi.json").text


def _cascade(judge_url: str, timeout_s: float, **options) -> ServeConfig:
    judge = {"base_url": judge_url, "model": "judge-model", "band": "0,1", "num_retries": 0, "timeout_s": 5}
    return ServeConfig(verifier="cascade", verifier_config={**judge, **options}, judge_timeout_s=timeout_s)


def _closed_judge_url() -> str:
    """A judge nobody serves: a port of 127.0.0.1 free a moment ago, so the connection is refused."""
    return f"http://127.0.0.1:{free_port()}/v1"


def _high_risk(kind: str, response_id: str) -> dict:
    """`verdict_message(kind)` in high-risk traffic: a contradicted one is routed `flagged` and `risk`."""
    msg = verdict_message(kind, response_id)
    return {**msg, "metadata": {**msg["metadata"], "risk_level": "high"}}


def _refused_reason(judge_url: str) -> str:
    return (
        f"judge_error: the judge at {judge_url} refused the connection (nothing listens there?); "
        "offline verdicts kept (see judge_calls)"
    )


def test_a_refused_judge_is_said_in_the_reply_at_once_not_as_a_timeout():
    url = _closed_judge_url()
    with TestClient(VerifyApp(_cascade(url, 5.0, num_retries=3))) as client:
        results = [client.post("/v1/verify", json=_high_risk("contradicted", f"refused-{i}")).json() for i in range(2)]
    # judge_error, not judge_timeout: retried, a refused connection would outlast the 5 s deadline (Beam's backoff
    # waits 2.5 s and more before each of the 3 retries).
    assert [r["judge_status"] for r in results] == ["judge_error"] * 2
    result = results[1]
    assert result["status"] == "determined" and result["judge_status"] == "judge_error"
    assert result["verifier"] == "cascade" and result["decided_by"] == ["heuristic"]
    assert result["report"]["sentences"][0]["attribution_verdict"] == "contradicted"
    assert result["review"]["needs_review"] is True and _refused_reason(url) in result["review"]["reasons"]
    assert result["review"]["routes"] == ["flagged", "risk"]


def test_an_undetermined_result_keeps_the_routes_of_the_offline_audit():
    auditor = InlineAuditor("heuristic")
    cases = [(_high_risk("contradicted", "u-1"), ["flagged", "risk"]), (verdict_message("fully_grounded"), [])]
    for msg, found in cases:
        offline = auditor.audit(auditor.parse(raw(msg)))
        assert offline.review is not None and offline.review.routes == found
        review = undetermined(offline, verifier="cascade", timeout_s=5).review
        assert review is not None and review.needs_review
        # what the offline audit found, plus `flagged` for the judge that gave no verdict (as judge_error is routed)
        assert review.routes == ["flagged", *(r for r in found if r != "flagged")]


@pytest.mark.server
def test_a_judge_that_answers_in_time_decides():
    with OpenAIServer() as judge, running_service(_cascade(judge.base_url, 10.0)) as base_url:
        result = httpx.post(f"{base_url}/v1/verify", json=verdict_message("fully_grounded"), timeout=30).json()
    assert result["status"] == "determined"
    assert result["decided_by"] == ["openai"] and result["judge_status"] == "judged"


@pytest.mark.server
def test_a_judge_timeout_is_undetermined_and_needs_review_never_a_pass():
    with OpenAIServer() as judge, running_service(_cascade(judge.base_url, 0.5)) as base_url:
        judge.script(Scripted(delay_s=3.0))
        reply = httpx.post(f"{base_url}/v1/verify", json=verdict_message("fully_grounded"), timeout=30)
        assert reply.status_code == 200
        result = reply.json()
        assert result["status"] == "undetermined" and result["judge_status"] == "judge_timeout"
        assert result["verifier"] == "heuristic" and result["decided_by"] == ["heuristic"]
        # the offline verdict is grounded, yet the response goes to review, with the reason first
        assert result["report"]["sentences"][0]["attribution_verdict"] == "fully_grounded"
        assert result["review"]["needs_review"] is True
        first_reason = result["review"]["reasons"][0]
        assert first_reason.startswith("judge_timeout: the cascade judge gave no verdict within 0.5 s")
        assert result["review"]["routes"] == ["flagged"]
        assert httpx.get(f"{base_url}/healthz").json()["undetermined"] == 1
        assert len(judge.requests) == 1


@pytest.mark.server
def test_a_judge_timeout_keeps_the_routes_the_offline_audit_found():
    answer = _high_risk("contradicted", "late-1")
    with TestClient(VerifyApp(ServeConfig())) as offline:
        found = offline.post("/v1/verify", json=answer).json()["review"]["routes"]
    with OpenAIServer() as judge, running_service(_cascade(judge.base_url, 0.5)) as base_url:
        judge.script(Scripted(delay_s=3.0))
        result = httpx.post(f"{base_url}/v1/verify", json=answer, timeout=30).json()
    assert result["status"] == "undetermined" and result["judge_status"] == "judge_timeout"
    assert found == ["flagged", "risk"] and result["review"]["routes"] == found


def _judge_refusing_the_cafeteria(request) -> str:
    """Valid verdicts, except for answers about the cafeteria: those get a reply that fails validation."""
    document = data_document(request)
    if any("cafeteria" in s["sentence_text"] for a in document["answers"] for s in a.get("sentences", [])):
        return "not json"
    return grounded_reply(request)


@pytest.mark.server
def test_concurrent_judged_requests_do_not_mix_their_verdicts():
    # Half the answers are settled by the judge, half fall back to the heuristic after failed validation:
    # a verifier shared by the pool's threads would hand one request's decided_by or status to another.
    kinds = ["fully_grounded", "ungrounded"] * 6
    with (
        OpenAIServer(_judge_refusing_the_cafeteria, latency_s=0.02) as judge,
        running_service(_cascade(judge.base_url, 30.0)) as base_url,
        httpx.Client(base_url=base_url, timeout=60) as client,
        ThreadPoolExecutor(8) as pool,
    ):
        results = list(
            pool.map(lambda i: client.post("/v1/verify", json=verdict_message(kinds[i], f"j-{i}")).json(), range(12))
        )
    assert [r["response_id"] for r in results] == [f"j-{i}" for i in range(12)]
    texts = [r["report"]["sentences"][0]["sentence_text"] for r in results]
    assert texts == [verdict_message(k)["answer"] for k in kinds]
    expected = [
        ("judged", ["openai"]) if k == "fully_grounded" else ("judge_validation_failed", ["heuristic"]) for k in kinds
    ]
    assert [(r["judge_status"], r["decided_by"]) for r in results] == expected
    assert all(r["status"] == "determined" for r in results)


@pytest.mark.server
def test_verified_responses_are_published_to_a_jsonl_file(tmp_path):
    out = tmp_path / "verified.jsonl"
    with running_service(ServeConfig(publish_jsonl=str(out))) as base_url, httpx.Client(base_url=base_url) as client:
        pretty = json.dumps(message("p-1"), indent=2).encode()  # several lines in, one line out
        assert client.post("/v1/verify", content=pretty).status_code == 200
        assert client.post("/v1/verify", content=BAD_MESSAGES["missing_field"]).status_code == 422
        client.post("/v1/verify/batch", json={"responses": [message("p-2"), {"bad": 1}, message("p-3")]})
        assert client.get("/healthz").json()["published"] == 3
    lines = out.read_bytes().splitlines()
    assert [parse_message(line).response_id for line in lines] == ["p-1", "p-2", "p-3"]


@pytest.mark.kafka
def test_verified_responses_are_published_to_kafka(kafka_bootstrap, new_topic):
    from tests.support.kafka_fixtures import consume_all

    topic = new_topic()
    config = ServeConfig(publish_kafka_topic=topic, kafka_bootstrap=kafka_bootstrap)
    with running_service(config) as base_url, httpx.Client(base_url=base_url) as client:
        for kind in ("fully_grounded", "contradicted"):
            assert client.post("/v1/verify", json=verdict_message(kind)).status_code == 200
    records = consume_all(kafka_bootstrap, topic)
    assert sorted(r.key for r in records) == [b"resp-contradicted", b"resp-fully_grounded"]
    assert {parse_message(r.value).response_id for r in records} == {"resp-contradicted", "resp-fully_grounded"}


@pytest.mark.kafka
def test_a_response_too_large_to_publish_is_a_failure_counted_not_a_failed_request(kafka_bootstrap, new_topic):
    """A batch may carry a response over Kafka's largest request (1 MiB): the producer refuses it before sending.
    Before, that refusal escaped the handler, and the batch's reply was a 500 with every verdict lost."""
    import copy

    from tests.support.kafka_fixtures import consume_all

    topic = new_topic()
    big = copy.deepcopy(message("big-1"))
    big["evidence"][0]["text"] = "Plain words. " * 90_000  # 1.17 MB
    config = ServeConfig(publish_kafka_topic=topic, kafka_bootstrap=kafka_bootstrap)
    with running_service(config) as base_url, httpx.Client(base_url=base_url, timeout=120) as client:
        reply = client.post("/v1/verify/batch", json={"responses": [message("small-1"), big]})
        assert reply.status_code == 200
        assert [r["response_id"] for r in reply.json()["results"]] == ["small-1", "big-1"]
        assert client.post("/v1/verify", json=message("after")).status_code == 200
        health = client.get("/healthz").json()
    assert health["publish_failures"] == 1
    assert sorted(r.key for r in consume_all(kafka_bootstrap, topic)) == [b"after", b"small-1"]


@pytest.mark.server
def test_the_command_serves_on_two_workers_and_never_logs_the_key(tmp_path):
    port = free_port()
    env = {**os.environ, API_KEY_ENV: "topsecret-123", "PYTHONPATH": os.getcwd()}
    command = [sys.executable, "-m", "pipelines.cli", "serve", "--port", str(port), "--workers", "2"]
    command += ["--require-api-key", "--access-log", "--publish-jsonl", str(tmp_path / "out.jsonl")]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        base_url = f"http://127.0.0.1:{port}"
        wait_until_healthy(base_url, process)
        headers = {"authorization": "Bearer topsecret-123"}
        for i in range(6):
            reply = httpx.post(f"{base_url}/v1/verify", json=message(f"w-{i}"), headers=headers, timeout=30)
            assert reply.status_code == 200
        assert httpx.post(f"{base_url}/v1/verify", json=message(), headers={"x-api-key": "nope"}).status_code == 403
    finally:
        process.terminate()
        output = process.communicate(timeout=60)[0].decode()
    assert "2 worker(s), API key required" in output
    assert "topsecret" not in output
    assert len((tmp_path / "out.jsonl").read_bytes().splitlines()) == 6


@pytest.mark.server
def test_the_command_says_a_refused_judge_in_the_reply_and_in_one_log_line_without_a_traceback():
    port, judge_url, secret = free_port(), _closed_judge_url(), "sk-judge-secret-42"
    env = {**os.environ, "GROUNDWATCH_JUDGE_API_KEY": secret, "PYTHONPATH": os.getcwd()}
    command = [sys.executable, "-m", "pipelines.cli", "serve", "--port", str(port), "--verifier", "cascade"]
    command += ["--judge-base-url", judge_url, "--judge-model", "m", "--cascade-band", "0,1"]
    command += ["--judge-timeout-per-request", "5"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        base_url = f"http://127.0.0.1:{port}"
        wait_until_healthy(base_url, process)
        replies = [
            httpx.post(f"{base_url}/v1/verify", json=_high_risk("contradicted", f"c-{i}"), timeout=30).text
            for i in range(2)
        ]
    finally:
        process.terminate()
        output = process.communicate(timeout=60)[0].decode()
    for reply in replies:
        result = json.loads(reply)
        assert result["judge_status"] == "judge_error" and _refused_reason(judge_url) in result["review"]["reasons"]
        assert result["review"]["routes"] == ["flagged", "risk"]
    assert output.count(f"the judge at {judge_url} refused the connection") == 2, output  # a line per request
    assert "Traceback" not in output and "Retry with exponential backoff" not in output, output
    assert secret not in output and not any(secret in reply for reply in replies)


@pytest.mark.server
def test_the_command_refuses_bad_usage():
    from pipelines.cli import main

    assert main(["serve", "--verifier", "nope"]) == 2
    assert main(["serve", "--workers", "0"]) == 2
    assert main(["serve", "--publish-jsonl", "a.jsonl", "--publish-kafka-topic", "t"]) == 2
    assert main(["serve", "--verifier", "cascade"]) == 2  # the judge needs an endpoint and a model
