"""Prism for the tests that need it: the binary `scripts/build-prism.sh` builds (or `$GROUNDWATCH_PRISM`).

pytestmark = NEEDS_PRISM                                  # a whole module
@pytest.mark.prism @needs_prism                           # one test
with beam.Pipeline(options=prism_options("--streaming")) as p: ...
"""

from __future__ import annotations

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.monitor import find_prism


def _prism() -> str | None:
    try:
        return find_prism()
    except ValueError:
        return None


PRISM = _prism()
needs_prism = pytest.mark.skipif(PRISM is None, reason="no Prism binary (scripts/build-prism.sh builds it)")
NEEDS_PRISM = [pytest.mark.prism, needs_prism]


def prism_options(*argv: str) -> PipelineOptions:
    """Options for Beam's Prism runner on the local binary, plus `argv`."""
    return PipelineOptions(["--runner=PrismRunner", f"--prism_location={PRISM}", *argv])
