"""The audit lake as the drift stage and the report read it: pandas frames grouped by window.

`load_lake_frames(lake_dir)` reads, through the lake's one reader (`transforms.io.lake.reader`, on an
in-memory DuckDB connection, so it never locks a database file another process uses), one row per key of:

- `window_metrics`: the windows and slices to check, with their rates;
- `responses`: one faithfulness score and mean confidence per response, with its slices, review decision and
  retrieval figures (`RETRIEVAL_COLUMNS`, when the lake has them);
- `sentences`: one confidence and grounded probability per sentence, joined to its response's slices (the
  per-response mean of the latter is the response's `mean_attribution_confidence`);
- `reviews`: per response, its reviewed sentences and those the reviewer agreed with (`review_counts`);
- `drift_checks` and `alerts`: what earlier `groundwatch drift` runs concluded (their memory).

Which row of a key is kept is the reader's rule, the same as the DuckDB views': for `window_metrics`, the
row of the most responses (the newest among equals). Missing tables read as empty frames, so a fresh lake
is not an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

import duckdb
import pandas as pd

from schemas import TABLES
from transforms.io.lake.reader import read_table, table_sql
from transforms.monitoring.review_agreement import REVIEW_COLUMNS, review_counts
from transforms.monitoring.window_metrics import UNKNOWN_SLICE

__all__ = ["RETRIEVAL_COLUMNS", "LakeFrames", "load_lake_frames"]

_SLICE_COLUMNS = ("tenant", "retriever_version", "generator_model")
RETRIEVAL_COLUMNS = ("mean_context_relevance", "empty_retrieval", "passages_used_share")
"""The `responses` columns of retrieval quality that the drift checks and incidents read."""


def _utc(frame: pd.DataFrame, *columns: str) -> pd.DataFrame:
    for column in columns:
        if column in frame and len(frame):
            frame[column] = pd.to_datetime(frame[column], utc=True)
    return frame


@dataclass
class LakeFrames:
    """The lake as the drift stage needs it: window metrics, and per-window response and sentence frames."""

    window_metrics: pd.DataFrame
    responses: pd.DataFrame
    sentences: pd.DataFrame
    drift_checks: pd.DataFrame
    alerts: pd.DataFrame
    incidents: pd.DataFrame = field(default_factory=pd.DataFrame)
    problems: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Per response_id: citation and claim problems (`misattributed_citations`, `uncited_claims`, ...)."""
    _responses_by_window: dict = field(default_factory=dict, repr=False)
    _sentences_by_window: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self._responses_by_window = (
            {w: f for w, f in self.responses.groupby("window_start")} if len(self.responses) else {}
        )
        self._sentences_by_window = (
            {w: f for w, f in self.sentences.groupby("window_start")} if len(self.sentences) else {}
        )

    @cached_property  # the frames are never changed after loading; the incidents look this up on every test
    def windows(self) -> list[tuple[datetime, datetime]]:
        """Every window with metrics, in time order, as (start, end)."""
        if not len(self.window_metrics):
            return []
        bounds = self.window_metrics[["window_start", "window_end"]].drop_duplicates().sort_values("window_start")
        return [(s.to_pydatetime(), e.to_pydatetime()) for s, e in bounds.itertuples(index=False)]

    def responses_in(self, window_start) -> pd.DataFrame:
        return self._responses_by_window.get(pd.Timestamp(window_start), self.responses.iloc[0:0])

    def sentences_in(self, window_start) -> pd.DataFrame:
        return self._sentences_by_window.get(pd.Timestamp(window_start), self.sentences.iloc[0:0])

    def responses_over(self, first_window, last_window) -> pd.DataFrame:
        """The responses of the windows starting from `first_window` to `last_window`, both included."""
        if pd.Timestamp(first_window) == pd.Timestamp(last_window):
            return self.responses_in(last_window)
        starts = self.responses["window_start"]
        return self.responses[(starts >= pd.Timestamp(first_window)) & (starts <= pd.Timestamp(last_window))]

    def sentences_over(self, first_window, last_window) -> pd.DataFrame:
        """The sentences of the windows starting from `first_window` to `last_window`, both included."""
        if pd.Timestamp(first_window) == pd.Timestamp(last_window):
            return self.sentences_in(last_window)
        starts = self.sentences["window_start"]
        return self.sentences[(starts >= pd.Timestamp(first_window)) & (starts <= pd.Timestamp(last_window))]

    def metrics_in(self, window_start) -> pd.DataFrame:
        wm = self.window_metrics
        return wm[wm["window_start"] == pd.Timestamp(window_start)]


def load_lake_frames(lake_dir: str, *, since: datetime | None = None) -> LakeFrames:
    """Read the tables the drift stage uses; `since` skips responses and sentences of older windows."""
    con = duckdb.connect(":memory:")
    try:
        where, params = ("window_start >= ?", [since]) if since is not None else ("", [])
        wm = _utc(read_table(con, lake_dir, "window_metrics"), "window_start", "window_end", "computed_at")
        responses = _utc(read_table(con, lake_dir, "responses", where, params), "window_start", "window_end")
        sentences = _utc(read_table(con, lake_dir, "sentences", where, params), "window_start")
        citations = _utc(read_table(con, lake_dir, "citations", where, params), "window_start")
        claims = _utc(read_table(con, lake_dir, "claims", where, params), "window_start")
        incidents = _utc(
            read_table(con, lake_dir, "incidents"), "window_start", "started_at", "cleared_at", "updated_at"
        )
        checks = _utc(read_table(con, lake_dir, "drift_checks"), "window_start", "window_end", "checked_at")
        alerts = _utc(
            read_table(con, lake_dir, "alerts"),
            *("window_start", "window_end", "started_at", "cleared_at", "updated_at", "span_start"),
        )
    finally:
        con.close()
    responses = responses.rename(columns={"overall_faithfulness_score": "faithfulness"})
    for column in _SLICE_COLUMNS:
        responses[column] = responses[column].fillna(UNKNOWN_SLICE).astype(str) if len(responses) else responses[column]
    # Sentences carry tenant and retriever_version but not generator_model: take all slices from the response.
    slice_of = responses[["response_id", *_SLICE_COLUMNS]]
    # Lead-ins, greetings and headers state nothing: they are no part of the confidence the checks compare.
    sentences = sentences[sentences["claim_kind"].fillna("claim") == "claim"]
    columns = ["response_id", "window_start", "confidence", "attribution_verdict", "grounded_probability"]
    sentences = sentences[columns].merge(slice_of, on="response_id", how="inner")
    # The examples an alert lists are the responses least supported by their evidence.
    support = sentences.groupby("response_id")["grounded_probability"].mean().rename("mean_attribution_confidence")
    responses = responses.merge(support, left_on="response_id", right_index=True, how="left")
    if len(responses):
        # An answer that claims nothing has no faithfulness: null in the lake, or the spec's 1 in a lake written
        # before the null, which would otherwise count in the reference and not in the windows after it.
        claimed_nothing = responses["mean_attribution_confidence"].isna() & (responses["sentence_count"] > 0)
        responses.loc[claimed_nothing, "faithfulness"] = float("nan")
    keep = ["response_id", "window_start", "window_end", "faithfulness", "mean_attribution_confidence", *_SLICE_COLUMNS]
    keep += [c for c in ("needs_review", "review_reasons") if c in responses]  # the review queue of the report
    keep += [c for c in ("abstention",) if c in responses]  # lakes written before the column have none
    keep += [c for c in RETRIEVAL_COLUMNS if c in responses]  # likewise, lakes written before retrieval scores
    responses = _with_reviews(responses, lake_dir)
    keep += list(REVIEW_COLUMNS)
    problems = _problems(citations, claims)
    return LakeFrames(wm, responses[keep], sentences, checks, alerts, incidents, problems)


def _with_reviews(responses: pd.DataFrame, lake_dir: str) -> pd.DataFrame:
    """`responses` with each one's reviewed and agreed sentence counts (0 where nothing was reviewed)."""
    con = duckdb.connect(":memory:")
    try:
        con.execute(f"CREATE VIEW reviews AS {table_sql(con, TABLES['reviews'], lake_dir)}")
        counts = review_counts(con)
    finally:
        con.close()
    frame = pd.DataFrame([(k, *v) for k, v in counts.items()], columns=["response_id", *REVIEW_COLUMNS]).astype(
        {c: "int64" for c in REVIEW_COLUMNS}
    )
    responses = responses.merge(frame, on="response_id", how="left")
    for column in REVIEW_COLUMNS:
        responses[column] = responses[column].fillna(0).astype("int64")
    return responses


def _problems(citations: pd.DataFrame, claims: pd.DataFrame) -> pd.DataFrame:
    """Per response: misattributed and fabricated citations, inexact quotes, uncited claims (for incidents)."""
    per = []
    if len(citations):
        status = citations["verification_status"].astype(str)
        quote = citations["quote_match"].astype(object)
        per.append(
            pd.DataFrame(
                {
                    "response_id": citations["response_id"],
                    "misattributed_citations": (status == "misattributed").astype(int),
                    "fabricated_citations": (status == "fabricated").astype(int),
                    "inexact_quotes": [int(q is not None and not pd.isna(q) and str(q) != "exact") for q in quote],
                }
            )
        )
    if len(claims):
        per.append(pd.DataFrame({"response_id": claims["response_id"], "uncited_claims": claims["missing_source"]}))
    columns = ["misattributed_citations", "fabricated_citations", "inexact_quotes", "uncited_claims"]
    if not per:
        return pd.DataFrame(columns=["response_id", *columns])
    frame = pd.concat(per, ignore_index=True).fillna(0)
    for column in columns:
        frame[column] = frame[column].astype(int) if column in frame else 0
    return frame.groupby("response_id", as_index=False)[columns].sum()
