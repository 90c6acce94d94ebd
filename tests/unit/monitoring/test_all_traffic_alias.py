"""`another_name_for_all_traffic`: the slices never named an incident's cause, on hand-made lake frames."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd

from transforms.monitoring.incidents import another_name_for_all_traffic
from transforms.monitoring.lake_frames import LakeFrames

T0 = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def _frames(per_window: list[list[tuple[str, str]]]) -> LakeFrames:
    """Windows of one minute from T0, each with responses of (retriever_version, generator_model)."""
    rows, metrics = [], []
    for w, responses in enumerate(per_window):
        start = pd.Timestamp(T0 + w * MINUTE)
        metrics.append({"window_start": start, "window_end": start + MINUTE})
        rows += [
            {"response_id": f"r{w}-{i}", "window_start": start, "retriever_version": r, "generator_model": g,
             "tenant": "t1" if i % 2 else "t2"}
            for i, (r, g) in enumerate(responses)
        ]  # fmt: skip
    empty = pd.DataFrame()
    return LakeFrames(pd.DataFrame(metrics), pd.DataFrame(rows), empty, empty, empty)


def test_the_one_model_is_all_traffic_the_retriever_that_took_over_is_not():
    before = [[("r3", "only")] * 8] * 6  # six reference windows, one model, one retriever
    after = [[("r4", "only")] * 8]  # r4 serves everything from here
    frames = _frames(before + after)
    alias = another_name_for_all_traffic(frames, T0 + 6 * MINUTE)
    assert ("generator_model", "only") in alias and ("retriever_version", "r3") in alias
    assert ("retriever_version", "r4") not in alias  # new since the reference: the change itself
    assert ("tenant", "t1") not in alias  # half the traffic


def test_a_handful_outside_a_slice_does_not_make_it_a_cause_but_a_small_reference_excludes_nothing():
    before = [[("r3", "only")] * 7 + [("r3", "tried-once")]] * 4 + [[("r3", "only")] * 8] * 2  # 4 of 48 outside
    assert ("generator_model", "only") in another_name_for_all_traffic(_frames(before), T0 + 6 * MINUTE)
    tiny = [[("r3", "only")] * 3] * 6  # 18 responses before: too few to tell a slice from all traffic
    assert another_name_for_all_traffic(_frames(tiny), T0 + 6 * MINUTE) == frozenset()
    assert another_name_for_all_traffic(_frames(before), T0) == frozenset()  # no window before
