"""Getting messages in and audit records out: JSONL files, Kafka, the Parquet audit lake.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
