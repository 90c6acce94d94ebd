"""A bounded audit on the FnApiRunner is one fused stage from a line read to its rows in the lake.

Between stages the runner encodes every element (a pydantic model is pickled, nested models and all) and decodes
it again; inside a stage elements pass as they are. So no response, audited response or lake row may cross a
stage boundary: only the line ranges, the window metrics' partial sums, dead letters and the
paths written do. A shuffle added for convenience between two audit steps fails this test.
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.runners.portability.fn_api_runner.fn_runner import FnApiRunner

from pipelines.options.audit import AuditOptions
from pipelines.runner.audit_graph import build_pipeline
from pipelines.runner.bounded import pipeline_options
from pipelines.runner.passes import plan_jsonl_passes
from tests.support.audit_messages import message, raw
from transforms.io.jsonl import ReadJsonlMessages

PER_RESPONSE_STEPS = (
    "ReadJsonl/ReadLines",
    "ParseResponses/Parse",
    "SampleResponses/KeepSampled",
    "VerifySentences/Verify",
    "AuditCitations/Apply",
    "CheckClaimAttribution/Apply",
    "ScoreRetrieval/Score",
    "ScoreAndFlag/Route",
    "ToLakeRows/Build",
    "WindowMetrics/KeyBySlice",
    "WriteAuditLake/WriteParquet0",
)
"""The steps every response goes through, as labelled in the bounded graph (the writer's first input: the
responses' rows)."""


def _bounded_stages(tmp_path):
    """The fused stages of the graph `groundwatch audit` runs on a JSONL file (`pipelines.runner.bounded`)."""
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_bytes(b"\n".join(raw(message(f"r-{i}")) for i in range(3)) + b"\n")
    options = pipeline_options([f"--input={traffic}", f"--lake={tmp_path / 'lake'}"])
    plan = plan_jsonl_passes(str(traffic), options.view_as(AuditOptions).max_records_per_run)
    p = beam.Pipeline(options=options)
    messages = p | "ReadJsonl" >> ReadJsonlMessages(ranges=plan.passes[0])
    build_pipeline(p, options, source=messages, first_copies=plan.first_copies)
    _, stages = FnApiRunner().create_stages(p.to_runner_api())
    return stages


def test_every_step_of_a_response_runs_in_one_fused_stage(tmp_path):
    stages = _bounded_stages(tmp_path)
    holding = {
        step: {stage.name for stage in stages for t in stage.transforms if f"{t.unique_name}/".startswith(f"{step}/")}
        for step in PER_RESPONSE_STEPS
    }
    assert all(len(names) == 1 for names in holding.values()), holding
    assert len(set.union(*holding.values())) == 1, "a response crosses the runner between two of its steps"
