"""Scenario lakes built once per pytest session and shared, read-only, by the tests that read them.

A scenario lake is generated traffic (`pipelines.traffic.scenarios`) audited into a lake, then checked once by
`run_drift`. Building one takes tens of seconds (hundreds of responses through the verifier, Evidently on every
window), so each (spec, how) pair is built once per session and handed to every test that asks for it:

    def test_something(scenario_lake):
        built = scenario_lake(ScenarioSpec("retriever-regression", windows=22, seed=3))
        built.lake, built.spec, built.outcome

`how="functions"` audits with the pipeline's plain functions (`audit_into_lake`), `how="pipeline"` with the Beam
pipeline of `groundwatch audit`. A test that changes a lake copies it first (`shutil.copytree`): the fixture
checks each lake's files before handing it out again and fails the test that finds it changed.

`demo_lake` is the lake `groundwatch demo` leaves (the sample traffic, then the retriever regression with its
drift run), made once per session, with what the command printed.
"""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pipelines.runner.drift_run import DriftOutcome
    from pipelines.traffic.scenarios import ScenarioSpec

__all__ = ["DemoLake", "ScenarioLake", "demo_lake", "scenario_lake"]


@dataclass(frozen=True)
class ScenarioLake:
    """A scenario's lake (a folder) after one drift run, and that run's outcome."""

    lake: str
    spec: ScenarioSpec
    outcome: DriftOutcome


def _quiet(_line: str) -> None:
    pass


def _fingerprint(lake: str) -> list[tuple[str, int, int]]:
    """Every file of the lake with its size and modification time: what a test that wrote to it changes."""
    files = []
    for folder, _, names in os.walk(lake):
        for name in names:
            path = os.path.join(folder, name)
            stat = os.stat(path)
            files.append((os.path.relpath(path, lake), stat.st_size, stat.st_mtime_ns))
    return sorted(files)


def _build(spec: ScenarioSpec, how: str, folder) -> str:
    from pipelines.traffic.scenarios import audit_into_lake, scenario_jsonl, scenario_responses

    lake = str(folder / "lake")
    if how == "functions":
        audit_into_lake(list(scenario_responses(spec)), lake, window_seconds=spec.window_seconds)
        return lake
    from pipelines.runner.bounded import run_audit  # Beam's pipeline: imported only by the tests that use it

    traffic = folder / f"{spec.name}.jsonl"
    traffic.write_bytes(b"".join(line + b"\n" for line in scenario_jsonl(spec)))
    counts = run_audit([f"--input={traffic}", f"--lake={lake}", f"--window_seconds={spec.window_seconds}"], out=_quiet)
    assert counts.audited > 0 and counts.dead_lettered == 0
    return lake


@pytest.fixture(scope="session")
def scenario_lake(tmp_path_factory):
    """`build(spec, how="functions") -> ScenarioLake`, built at the first call and shared afterwards."""
    built: dict[tuple[ScenarioSpec, str], tuple[ScenarioLake, list]] = {}

    def build(spec: ScenarioSpec, how: str = "functions") -> ScenarioLake:
        if how not in ("functions", "pipeline"):
            raise ValueError(f"how must be 'functions' or 'pipeline', got {how!r}")
        key = (spec, how)
        if key not in built:
            # Imported at the first build, not when pytest loads this plugin: Evidently takes seconds to import.
            from pipelines.runner.drift_run import run_drift
            from transforms.monitoring.drift import DriftConfig

            lake = _build(spec, how, tmp_path_factory.mktemp(f"{spec.name}-{spec.seed}"))
            outcome = run_drift(lake, DriftConfig(), workspace=False, out=_quiet)
            built[key] = ScenarioLake(lake, spec, outcome), _fingerprint(lake)
        shared, fingerprint = built[key]
        if _fingerprint(shared.lake) != fingerprint:
            pytest.fail(f"a test changed the shared scenario lake {shared.lake}: copy it before writing to it")
        return shared

    return build


@dataclass(frozen=True)
class DemoLake:
    """The lake `groundwatch demo` wrote, and what it printed."""

    lake: str
    out: str


@pytest.fixture(scope="session")
def demo_lake(tmp_path_factory) -> DemoLake:
    from pipelines.cli import main as groundwatch

    lake = str(tmp_path_factory.mktemp("demo") / "lake")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = groundwatch(["demo", "--lake", lake])
    assert status == 0, printed.getvalue()
    return DemoLake(lake, printed.getvalue())
