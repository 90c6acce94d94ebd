"""The audit lake: lake rows, the Parquet writer that publishes whole files, and the one reader of its tables.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
