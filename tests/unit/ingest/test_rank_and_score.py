"""The evidence items' optional `rank` and `score`: read when logged, absent in older logs, checked when wrong."""

from __future__ import annotations

import pytest

from tests.support.audit_messages import EVIDENCE, message, raw
from transforms.ingest.parse import ParseError, parse_message


def _ranked(**fields) -> list[dict]:
    return [{**EVIDENCE[0], **fields}, {**EVIDENCE[1], "rank": 2, "score": 0.41}]


def test_rank_and_score_are_read_and_are_not_unknown_fields():
    response = parse_message(raw(message(evidence=_ranked(rank=1, score=12.5))))
    assert [(p.rank, p.score) for p in response.evidence] == [(1, 12.5), (2, 0.41)]
    assert response.unknown_fields() == {}


def test_a_log_without_them_still_parses():
    response = parse_message(raw(message()))
    assert [(p.rank, p.score) for p in response.evidence] == [(None, None), (None, None)]


def test_any_finite_score_is_the_retrievers_own_scale():
    response = parse_message(raw(message(evidence=_ranked(rank=1, score=-3))))
    assert response.evidence[0].score == -3.0


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"rank": 0}, "greater than or equal to 1"),
        ({"rank": 1.5}, "valid integer"),
        ({"rank": "1"}, "valid integer"),
        ({"rank": True}, "valid integer"),
        ({"score": "0.9"}, "valid number"),
        ({"score": True}, "valid number"),
    ],
)
def test_a_wrong_rank_or_score_is_a_dead_letter_naming_the_field(fields, why):
    with pytest.raises(ParseError) as caught:
        parse_message(raw(message(evidence=_ranked(**fields))))
    name = next(iter(fields))
    assert caught.value.reason == "invalid_fields"
    assert f"evidence.0.{name}" in caught.value.message and why in caught.value.message


def test_a_score_that_is_not_finite_is_rejected():
    line = raw(message(evidence=_ranked(rank=1, score=1.0))).replace(b'"score": 1.0', b'"score": NaN', 1)
    with pytest.raises(ParseError) as caught:
        parse_message(line)
    assert "evidence.0.score" in caught.value.message
