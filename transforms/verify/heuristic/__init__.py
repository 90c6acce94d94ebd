"""The offline heuristic verifier: evidence index, alignment, contradiction and slot cues.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
