"""`groundwatch replay`: ask the judge again about the answers it could not settle, from the judge log.

    groundwatch replay --lake ./groundwatch-lake --status judge_validation_failed [--since 2026-11-29T00:00] \\
        --judge-base-url http://127.0.0.1:8000/v1 --judge-model NAME [--limit 100] [--dry-run]

It reads the `judge_calls` table, keeps the latest record of each (response, task), selects those whose
final status is `--status` (`judge_validation_failed` by default, or `judge_error`), rebuilds the judge
request from the logged `request_json` and runs it through the same harness (validation, at most three
attempts, errors stated to the judge). New `judge_calls` rows are appended; sentence verdicts the judge
now settles are written to `sentences` with `decided_by = "openai"` and a newer `audited_at`, so the lake's
views show them instead of the heuristic fallback. The `responses` rows keep their routing: those
responses already went to review. Requests logged with redaction on are replayed redacted (the judge
then sees the placeholders; the excerpt checks run against the same redacted text).

With `--model-path DIR` (the model stage's flags, as `audit` takes them), the sentences the judge still does not
settle are scored by the local cross-encoder instead, and written with `decided_by = "model"` (their judge log still
says the judge failed, so a later replay with a working judge can settle them better); without a judge endpoint
(no `--judge-base-url`), the model settles them all and the judge is not called::

    groundwatch replay --lake ./groundwatch-lake --status judge_error --model-path ./nli-onnx

Exit codes: 0 when nothing is left unsettled (by the judge or the model), 1 when some items still are, 2 for bad
usage (a model folder that does not load among them).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from dashboards.views import connect_lake
from pipelines.options.common import add_lake_argument, existing_lake, iso_time
from pipelines.options.judge import judge_verifier_config
from pipelines.options.model import add_stage_arguments, model_stage_of, model_verifier_config
from schemas import EvidencePassage
from schemas.lake import SentenceRow
from transforms.verify.judge.client import JudgeClient, JudgeUnavailable
from transforms.verify.judge.harness import failed_outcome
from transforms.verify.judge.schema import JudgeItem, Task
from transforms.verify.judge.verifier import judge_config_from, judge_items_retried
from transforms.verify.model.scorer import ModelRunError

__all__ = ["add_arguments", "main", "replay", "select_failed"]

_STATUSES = ("judge_validation_failed", "judge_error")
_SELECT = """
SELECT response_id, task, request_json, redacted, called_at FROM (
    SELECT *, row_number() OVER (PARTITION BY response_id, task ORDER BY called_at DESC, attempt DESC) AS rank
    FROM judge_calls
) WHERE rank = 1 AND status = ? AND called_at >= ?
ORDER BY called_at, response_id
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_lake_argument(parser)
    parser.add_argument(
        "--status", default="judge_validation_failed", choices=_STATUSES, help="Which failures to replay."
    )
    parser.add_argument(
        "--since",
        type=iso_time,
        default=datetime(1970, 1, 1, tzinfo=UTC),
        help="Only judge calls at or after this ISO 8601 time (UTC if no zone).",
    )
    parser.add_argument("--limit", type=int, help="Replay at most N items (oldest first).")
    parser.add_argument("--dry-run", action="store_true", help="List what would be replayed and stop.")
    add_stage_arguments(parser)


def select_failed(lake: str, status: str, since: datetime, limit: int | None = None) -> list[tuple]:
    """`(response_id, task, request_json, redacted)` of the items whose latest judge status is `status`."""
    rows = connect_lake(lake).execute(_SELECT, [status, since]).fetchall()
    return [row[:4] for row in (rows if limit is None else rows[:limit])]


def _judge(client, task, items, now):
    try:
        return judge_items_retried(client, task, items)
    except JudgeUnavailable as err:  # its message names the endpoint, never the key
        return [failed_outcome(item, client.config, str(err), now, answers_in_call=len(items)) for item in items]


def _sentence_rows(con, settled, now) -> list[dict]:
    """Updated `sentences` rows for `settled` (response id, verdicts, the stage that gave them), on top of the rows
    in the lake."""
    rows = []
    for response_id, verdicts, stage in settled:
        cursor = con.execute("SELECT * FROM sentences WHERE response_id = ?", [response_id])
        names = [d[0] for d in cursor.description]
        existing = {r["sentence_index"]: r for r in (dict(zip(names, row, strict=True)) for row in cursor.fetchall())}
        for verdict in verdicts:
            old = existing.get(verdict.sentence_index)
            if old is None:
                continue
            fields = {k: v for k, v in old.items() if k in SentenceRow.model_fields}
            fields.update(verdict.model_dump(exclude={"sentence_text"}), decided_by=stage, audited_at=now)
            rows.append(SentenceRow.model_validate(fields))
    return rows


def _model_settles(model, items, counts) -> list[tuple]:
    """(response id, verdicts, "model") of the sentence items the model scores; one it fails on stays unsettled."""
    settled = []
    for item in items:
        texts = {s.sentence_index: s.text for s in item.sentences}
        sentences = [texts.get(i, "") for i in range(max(texts, default=-1) + 1)]
        evidence = [EvidencePassage(doc_id=p.evidence_id, content=p.text) for p in item.evidence]
        try:
            verdicts = model.verdicts(sentences, evidence, sorted(texts))
        except ModelRunError:
            counts["model_failed"] += 1
            continue
        counts["model_settled"] += 1
        settled.append((item.response_id, [verdicts[i] for i in sorted(verdicts)], "model"))
    return settled


def replay(
    lake: str, status: str, since: datetime, config, *, limit: int | None = None, model=None, out=print
) -> dict[str, int]:
    """Re-judge the selected items (with `config`; None: no judge), let `model` (a `ModelStage`, or None) settle
    the sentence items the judge still does not, append the new log and settled verdicts; returns counts."""
    from transforms.io.lake.writer import write_table  # kept lazy: start-up (loads Beam; --dry-run never writes)

    selected = select_failed(lake, status, since, limit)
    items = [JudgeItem.model_validate_json(request) for _, _, request, _ in selected]
    if any(redacted for *_, redacted in selected):
        out("note: some requests were logged redacted; the judge sees them with placeholders")
    counts = {"selected": len(items), "judged": 0, "judge_validation_failed": 0, "judge_error": 0}
    if model is not None:
        counts.update(model_settled=0, model_failed=0)
    if not items:
        return counts
    now, outcomes = datetime.now(UTC), []
    if config is not None:
        client = JudgeClient(config)
        try:
            for task in Task:
                group = [i for i in items if i.task is task]
                if group:
                    outcomes += _judge(client, task, group, now)
        finally:
            client.close()
        for outcome in outcomes:
            counts[outcome.status] += 1
        calls = [row for o in outcomes for row in o.calls]
        write_table(lake, "judge_calls", calls, name=f"replay-{now:%Y%m%dT%H%M%S%f}")
    settled = [
        (o.response_id, o.sentence_verdicts, "openai")
        for o in outcomes
        if o.status == "judged" and o.task is Task.sentences
    ]
    if model is not None:
        done = {response_id for response_id, _, _ in settled}
        open_ = [i for i in items if i.task is Task.sentences and i.response_id not in done]
        settled += _model_settles(model, open_, counts)
    sentence_rows = _sentence_rows(connect_lake(lake), settled, now)
    if sentence_rows:
        write_table(lake, "sentences", sentence_rows, name=f"replay-{now:%Y%m%dT%H%M%S%f}")
    counts["sentences_updated"] = len(sentence_rows)
    return counts


def main(args: argparse.Namespace) -> int:
    try:
        existing_lake(args.lake)
        since = args.since
        if args.limit is not None and args.limit < 1:
            raise ValueError(f"--limit must be a positive integer, got {args.limit}")
        if args.dry_run:
            for response_id, task, _, _ in select_failed(args.lake, args.status, since, args.limit):
                print(f"{task}\t{response_id}")
            return 0
        model = model_stage_of(model_verifier_config(args))
        options = judge_verifier_config(args)
        options.pop("band", None)
        config = None
        if model is None or options.get("base_url"):  # the model alone needs no endpoint
            config = judge_config_from(options.pop("base_url", None), options.pop("model", None), **options)
    except ValueError as err:
        print(f"groundwatch replay: {err}", file=sys.stderr)
        return 2
    counts = replay(args.lake, args.status, since, config, limit=args.limit, model=model)
    model_text = "" if model is None else f", settled by the model {counts['model_settled']}"
    print(
        f"replayed {counts['selected']} ({args.status}): judged {counts['judged']}, "
        f"still failing validation {counts['judge_validation_failed']}, endpoint errors {counts['judge_error']}"
        f"{model_text}, sentence verdicts updated {counts.get('sentences_updated', 0)}"
    )
    return 0 if counts["judged"] + counts.get("model_settled", 0) == counts["selected"] else 1
