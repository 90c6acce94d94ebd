"""A Beam option of Flink's job server that Beam's Python SDK does not declare, declared so that it reaches it.

A Python pipeline sends the job server only the options some `PipelineOptions` class declares (the Flink runner
keeps no unknown ones). `scripts/flink.sh flags` gives `--pipeline_resources_detector_factory_class` for the local
cluster, whose jobs then stage no jars (`scripts/flink_staging.py`); importing this module lets it through.
"""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

__all__ = ["FlinkJobOptions"]


class FlinkJobOptions(PipelineOptions):
    """Options read by the Java job server of a portable runner (Flink's), passed on as they are."""

    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument(
            "--pipeline_resources_detector_factory_class",
            default=None,
            help="Java class choosing the jars the job server stages with a job (Beam's PipelineResourcesOptions); "
            "scripts/flink.sh flags names one that stages none on the local cluster.",
        )
