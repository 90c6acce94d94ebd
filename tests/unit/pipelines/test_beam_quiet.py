"""Beam's "apitools not found" line (and RunInference's false "Resource module is not available") stays out of
every process that runs our code, not only the CLI's: a pipeline built and run in process (as tests and
benchmarks do) prints neither, and other warnings still show."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.support.audit_messages import message, raw
from tests.support.tiny_nli import write_tiny_model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

AUDIT = """
    from pipelines.runner.audit_graph import build_pipeline
    from apache_beam.options.pipeline_options import PipelineOptions
    import apache_beam as beam
    options = PipelineOptions(["--runner=FnApiRunner", "--input", {traffic!r}, "--lake", {lake!r}])
    with beam.Pipeline(options=options) as p:
        build_pipeline(p, options)
"""
COMPOSITE = """
    from transforms.verify.model.handler import PairModelHandler
    from apache_beam.ml.inference.base import RunInference
    import apache_beam as beam
    with beam.Pipeline(runner="FnApiRunner") as p:
        p | beam.Create([("A test.", "A test.")]) | RunInference(PairModelHandler({model!r}))
"""


def stderr_of(code: str) -> str:
    code = textwrap.dedent(code) + "\nimport logging\nlogging.warning('another warning')\n"
    env = {**os.environ, "PYTHONPATH": ROOT}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stderr


@pytest.mark.parametrize("program", ["audit pipeline", "the model through RunInference"])
def test_an_in_process_pipeline_prints_no_apitools_line(tmp_path, program):
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_bytes(raw(message("r-1")) + b"\n")
    if program == "audit pipeline":
        code = AUDIT.format(traffic=str(traffic), lake=str(tmp_path / "lake"))
    else:
        code = COMPOSITE.format(model=write_tiny_model(tmp_path / "nli", ["a", "test"]))
    err = stderr_of(code)
    assert "apitools" not in err and "Resource module" not in err
    assert "another warning" in err  # only that one message is dropped
