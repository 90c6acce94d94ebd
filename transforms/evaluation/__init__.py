"""Measuring verifiers against labelled data: golden sets and the calibration metrics.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
