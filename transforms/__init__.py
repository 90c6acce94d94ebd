"""Beam composites and the plain functions behind them: parse, sample, verify, audit, score, route, write.

Import the submodule you need (`from transforms.verify.base import Verifier`);
this package imports nothing eagerly so that pure-Python pieces load without Beam.
"""

__all__: list[str] = []
