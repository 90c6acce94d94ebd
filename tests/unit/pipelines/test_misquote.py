"""The traffic generator's misquoting model: one number of the answer stated wrong, and nothing else touched."""

from __future__ import annotations

import random
import re

from pipelines.traffic.scenarios import _misquote

NUMBER = re.compile(r"\d+(?:\.\d+)?")


def test_one_number_of_the_answer_is_stated_wrong_and_its_precision_kept():
    answer = "Revenue was 12.5 million in 2024, up 7 percent."
    for seed in range(20):
        changed = _misquote({"answer": answer, "response_id": "r-1"}, random.Random(seed))
        assert changed["response_id"] == "r-1" and NUMBER.sub("#", changed["answer"]) == NUMBER.sub("#", answer)
        before, after = NUMBER.findall(answer), NUMBER.findall(changed["answer"])
        differ = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
        assert len(differ) == 1 and differ[0][1].count(".") == differ[0][0].count(".")


def test_an_answer_without_numbers_is_left_as_it_is():
    message = {"answer": "The policy covers dental care.", "response_id": "r-2"}
    assert _misquote(message, random.Random(3)) is message
