"""From raw messages to windowed, sampled responses: parsing, event time and windows, late data, sampling.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
