"""The job server's option that makes a job on the local Flink cluster stage no jars reaches the job server."""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.portable_runner import JobServiceHandle

import pipelines.options.audit  # noqa: F401  (what `groundwatch audit` and `monitor` import)
from pipelines.options.flags import refuse_unknown_args

FACTORY = "dev.groundwatch.flink.NothingToStage"
FLAGS = [
    "--runner=FlinkRunner",
    "--job_endpoint=localhost:38099",
    f"--pipeline_resources_detector_factory_class={FACTORY}",
]


def test_the_commands_pass_the_option_on_to_beam():
    assert refuse_unknown_args(FLAGS, own=["--lake"]) is None


def test_the_portable_runner_sends_it_to_the_job_server():
    # What the Flink runner sends: the options some class declares (it keeps no unknown ones). The job service's
    # own description of its options is not asked for here (it adds no declaration of this one: Flink's does not).
    handle = JobServiceHandle(job_service=None, options=PipelineOptions(FLAGS), retain_unknown_options=False)
    all_options = handle.options.get_all_options(retain_unknown_options=False)
    assert all_options["pipeline_resources_detector_factory_class"] == FACTORY
    sent = JobServiceHandle.encode_pipeline_options(all_options)
    assert sent["beam:option:pipeline_resources_detector_factory_class:v1"] == FACTORY
