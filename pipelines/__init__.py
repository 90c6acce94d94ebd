"""The runnable pipelines and the `groundwatch` command: one module per command."""

# Before any command module imports Beam (they import apache_beam ahead of `transforms`): drop its apitools line.
import transforms.beam_quiet  # noqa: F401

__all__: list[str] = []
