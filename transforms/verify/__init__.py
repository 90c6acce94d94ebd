"""Sentence verifiers: the interface they share, the registry behind `--verifier`, the heuristic and the judge.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
