"""Beam composites and the plain functions behind them: parse, sample, verify, audit, score, route, write.

Import the submodule you need (`from transforms.verify.base import Verifier`);
this package imports nothing eagerly so that pure-Python pieces load without Beam. The one exception,
`transforms.beam_quiet`, imports only `logging`: it keeps Beam's "apitools not found" line out of every process
before any of our modules imports Beam.
"""

import transforms.beam_quiet  # noqa: F401  (installs the log filter on import)

__all__: list[str] = []
