"""The runnable pipelines and the `groundwatch` command: one module per command."""

__all__: list[str] = []
