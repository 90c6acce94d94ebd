"""Benchmark the three-stage cascade (heuristic, model, judge): who decides what, at what cost, how accurately.

    python scripts/bench_cascade.py [--golden FILE.jsonl] [--model-path DIR] [--calibration cal.json]
        [--traffic FILE.jsonl] [--cascade-band 0.5,0.8] [--model-band 0,0.8] [--model-top-k 3] [--limit N]

On the demo traffic (or `--traffic`) and, with `--golden`, on a labelled set (each record one sentence), it runs
the cascade's stages one after the other per response and prints: the share of sentences each stage decides;
CPU ms per response of the heuristic and of the model stage (thread CPU time, `time.thread_time`), the model's
CPU ms per scored pair; judge calls and tokens per response against the local scripted server
(`tests/support/openai_server.py`, which answers from word overlap: cost only, never accuracy); and, on the
labelled set, binary balanced accuracy and ROC-AUC (fully grounded or not) of the heuristic alone and of the
heuristic plus the model (the model's verdict on every sentence the heuristic escalated).

With `--pipeline` it measures the pipeline instead: it runs `groundwatch audit --verifier cascade` in process
(the audit command's own argv, options and graph, `build_pipeline`, on Beam's local runner) on
the demo traffic (or `--traffic`) into a temporary lake, with the model stage and the scripted judge configured,
and prints the wall time, the audit's counts, the sentences each stage decided (from the lake's `decided_by`),
and RunInference's own metrics (`num_inferences`, the batch sizes, batch latency, model load time)::

    python scripts/bench_cascade.py --pipeline [--model-path DIR] [--model-batch-size 32] [-- BEAM_OPTIONS...]

Without `--model-path` it builds the tiny test model (`tests/support/tiny_nli.py`, a word-overlap graph, not a
trained model): its costs are those of a very small graph and its accuracy means nothing. Give an exported
model folder (docs/model-stage.md) for real figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pipelines.demo import sample_traffic_path  # noqa: E402
from schemas import AttributionVerdict, LoggedResponse  # noqa: E402
from tests.support.openai_server import OpenAIServer  # noqa: E402
from tests.support.tiny_nli import write_tiny_model  # noqa: E402
from transforms.evaluation.golden import load_golden  # noqa: E402
from transforms.evaluation.metrics import balanced_accuracy, roc_auc  # noqa: E402
from transforms.text.sentences import split_sentences  # noqa: E402
from transforms.verify.heuristic.verifier import HeuristicVerifier  # noqa: E402
from transforms.verify.judge.verifier import DEFAULT_BAND, cascade_stages, parse_band, sentence_item  # noqa: E402

_SCORED = re.compile(r"\((\d+) scored\)")


def traffic_items(path: str, limit: int | None):
    """(sentences, evidence, None) per valid logged response of a JSONL file."""
    items = []
    with open(path, "rb") as f:  # bytes: the demo traffic holds a line that is not UTF-8 on purpose
        for line in f:
            try:
                r = LoggedResponse.model_validate_json(line)
            except ValueError:
                continue  # the demo traffic holds a few malformed lines on purpose
            if any(p.content.strip() for p in r.evidence):
                items.append((split_sentences(r.answer), list(r.evidence), None))
    return items[:limit]


def golden_items(path: str, limit: int | None):
    """([answer], evidence, label) per record of a labelled set (one sentence each, as calibrate judges it)."""
    records, _ = load_golden(path)
    return [([r.answer], list(r.evidence), r.label) for r in records][:limit]


def run(name, items, stages, judge_client):
    from transforms.verify.judge.harness import judge_items
    from transforms.verify.judge.schema import Task

    heuristic_verifier = HeuristicVerifier()
    decided, cpu = Counter(), Counter()
    pairs = calls = tokens = 0
    gold, alone, with_model = [], [], []
    for n, (sentences, evidence, label) in enumerate(items):
        t0 = time.thread_time()
        heuristic = heuristic_verifier.verify(sentences, evidence).verdicts
        t1 = time.thread_time()
        staged = stages.run(heuristic, sentences, evidence)
        t2 = time.thread_time()
        cpu["heuristic"] += t1 - t0
        cpu["model"] += t2 - t1
        pairs += sum(
            int(m.group(1)) for v, who in zip(staged.verdicts, staged.decided_by, strict=True)
            if who == "model" and (m := _SCORED.search(v.provenance_notes))
        )  # fmt: skip
        by = list(staged.decided_by)
        if staged.undecided and judge_client is not None:
            item = sentence_item(f"bench-{n}", " ".join(sentences), "", sentences, staged.undecided, evidence)
            [outcome] = judge_items(judge_client, Task.sentences, [item])
            calls += len(outcome.calls)
            tokens += sum(c.total_tokens or 0 for c in outcome.calls)
            if outcome.status == "judged":
                for i in staged.undecided:
                    by[i] = "openai"
        decided.update(by)
        if label is not None:
            gold.append(label == "fully_grounded")
            alone.append(heuristic[0])
            with_model.append(staged.verdicts[0])
    total = sum(decided.values()) or 1
    responses = len(items) or 1
    print(f"\n== {name}: {len(items)} responses, {total} sentences")
    for stage in ("heuristic", "model", "openai"):
        print(f"  decided by {stage:<9} {decided[stage] / total:6.1%}  ({decided[stage]})")
    print(f"  heuristic CPU     {1000 * cpu['heuristic'] / responses:8.2f} ms/response")
    print(f"  model stage CPU   {1000 * cpu['model'] / responses:8.2f} ms/response, {pairs} pairs scored, "
          f"{1000 * cpu['model'] / max(pairs, 1):.3f} ms/pair (candidates and verdicts included)")  # fmt: skip
    print(f"  judge             {calls / responses:8.3f} calls/response, {tokens / responses:8.1f} tokens/response")
    if gold:
        for what, verdicts in (("heuristic alone", alone), ("heuristic + model", with_model)):
            predicted = [v.attribution_verdict is AttributionVerdict.fully_grounded for v in verdicts]
            bacc = balanced_accuracy(gold, predicted)
            auc = roc_auc(gold, [v.grounded_probability for v in verdicts])
            print(f"  {what:<18} balanced accuracy {bacc:.3f}  ROC-AUC {auc:.3f}")


_RUN_INFERENCE_METRICS = (
    "num_inferences",
    "inference_request_batch_size",
    "inference_request_batch_byte_size",
    "inference_batch_latency_micro_secs",
    "load_model_latency_milli_secs",
    "failed_batches_counter",
)
"""The metrics Beam's RunInference reports (`apache_beam.ml.inference.base._MetricsCollector`)."""


def run_inference_metrics(result) -> dict[str, dict]:
    """RunInference's counters and distributions of a finished run, summed over steps and namespaces."""
    from apache_beam.metrics.metric import MetricsFilter

    found: dict[str, dict] = {}
    query = result.metrics().query(MetricsFilter())
    for kind in ("counters", "distributions"):
        for m in query[kind]:
            name = m.key.metric.name.rsplit("-", 1)[-1]  # keyed handlers prefix the model id
            if name not in _RUN_INFERENCE_METRICS:
                continue
            value = m.committed if m.committed is not None else m.attempted
            if kind == "counters":
                found.setdefault(name, {"count": 0})["count"] += value or 0
            elif value is not None and value.count:
                d = found.setdefault(name, {"count": 0, "sum": 0, "min": value.min, "max": value.max})
                d["count"] += value.count
                d["sum"] += value.sum
                d["min"], d["max"] = min(d["min"], value.min), max(d["max"], value.max)
    for d in found.values():
        if "sum" in d:
            d["mean"] = round(d["sum"] / d["count"], 2) if d["count"] else None
    return found


def run_pipeline(args, model_path: str, beam_args: list[str]) -> None:
    """`groundwatch audit --verifier cascade` on the traffic, in process; prints wall time and RunInference's
    metrics."""
    import apache_beam as beam

    from dashboards.views import connect_lake
    from pipelines import audit
    from pipelines.options.audit import AuditOptions, validate_options
    from pipelines.runner.audit_graph import build_pipeline
    from pipelines.runner.bounded import pipeline_options
    from pipelines.runner.counts import counts_from_result, format_counts

    lake = os.path.join(tempfile.mkdtemp(), "lake")
    with OpenAIServer() as server:
        cli = ["--input", args.traffic, "--lake", lake, "--verifier", "cascade", "--model-path", model_path]
        cli += ["--judge-base-url", server.base_url, "--judge-model", "scripted-judge"]
        cli += ["--cascade-band", args.cascade_band]
        for flag in ("calibration", "model_band", "model_top_k", "model_batch_size"):
            if getattr(args, flag) is not None:
                cli += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
        parser = argparse.ArgumentParser(prog="groundwatch audit")
        audit.add_arguments(parser)
        parsed, extra = parser.parse_known_args(cli + beam_args)
        parsed.extra_args = extra
        options = pipeline_options(audit.to_argv(parsed))
        validate_options(options.view_as(AuditOptions))
        started = time.perf_counter()
        with beam.Pipeline(options=options) as p:
            build_pipeline(p, options)
        wall = time.perf_counter() - started
        judge_calls = len(server.requests)
    counts = counts_from_result(p.result)
    con = connect_lake(lake)
    decided = dict(con.execute("SELECT decided_by, count(*) FROM sentences GROUP BY 1 ORDER BY 1").fetchall())
    print(f"\n== pipeline: groundwatch audit --verifier cascade on {args.traffic}")
    print(f"  wall time         {wall:8.2f} s (graph built, run, lake written; model load included)")
    print("  " + format_counts(counts, lake).replace("\n", "\n  "))
    print(f"  decided by        {json.dumps(decided)}; judge calls {judge_calls}")
    print(f"  RunInference      {json.dumps(run_inference_metrics(p.result))}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traffic", default=sample_traffic_path(), help="JSONL traffic. Default: the demo traffic.")
    parser.add_argument("--golden", help="A labelled set (JSONL, the calibrate format), read only.")
    parser.add_argument("--model-path", help="Model folder (model.onnx, tokenizer.json, labels.json). Default: "
                        "the tiny test model, built in a temporary folder.")  # fmt: skip
    parser.add_argument("--calibration", help="A calibration file for the stages' bands.")
    parser.add_argument("--cascade-band", default=",".join(map(str, DEFAULT_BAND)), help="Default 0.5,0.8.")
    parser.add_argument("--model-band", default=None, help="Default 0,0.8.")
    parser.add_argument("--model-top-k", type=int, default=None, help="Default 3.")
    parser.add_argument("--limit", type=int, default=None, help="At most this many responses per data set.")
    parser.add_argument("--model-batch-size", type=int, default=None, help="Pairs per ONNX call. Default 32.")
    parser.add_argument(
        "--pipeline",
        action="store_true",
        help="Run `groundwatch audit --verifier cascade` in process instead; flags after -- go to Beam.",
    )
    argv = list(sys.argv[1:] if argv is None else argv)
    beam_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    datasets = [("demo traffic", traffic_items(args.traffic, args.limit))]
    if args.golden:
        datasets.append(("labelled set", golden_items(args.golden, args.limit)))
    model_path = args.model_path
    if model_path is None:
        # The graph holds a one-hot table of vocabulary squared: the 3,000 most frequent words keep it at 36 MB.
        words = Counter(w for _, items in datasets for ss, ev, _ in items
                        for w in re.findall(r"\w+", " ".join(ss + [p.content for p in ev]).lower()))  # fmt: skip
        model_path = write_tiny_model(os.path.join(tempfile.mkdtemp(), "tiny"), [w for w, _ in words.most_common(3000)])
        print("model: the tiny test model (word overlap in an ONNX graph): accuracy figures mean nothing")
    if args.pipeline:
        run_pipeline(args, model_path, beam_args)
        return 0
    stages = cascade_stages(
        parse_band(args.cascade_band), args.calibration, model_path, args.model_top_k, None, None, args.model_band
    )
    print(f"model: {stages.model.scorer()!r}")
    from transforms.verify.judge.client import JudgeClient
    from transforms.verify.judge.config import JudgeConfig

    with OpenAIServer() as server:
        client = JudgeClient(JudgeConfig(base_url=server.base_url, model="scripted-judge"))
        for name, items in datasets:
            run(name, items, stages, client)
    print(json.dumps({"note": "judge replies are scripted: judge cost only, never accuracy"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
