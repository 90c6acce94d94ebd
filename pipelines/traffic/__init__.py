"""Synthetic RAG traffic for demos, tests and benchmarks: the generator, its vocabulary, drift scenarios.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
