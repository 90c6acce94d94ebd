"""Jobs on the local Flink cluster that stage no jars: `scripts/flink/NothingToStage.java`, built once.

Beam's Flink job server sends every jar of its own classpath (about 150 MB) to the JobManager with each job,
which took 13 s of each job's start here. The local cluster's TaskManagers run from those same jars (and load
classes parent-first), so a job needs none of them. Beam asks a `PipelineResourcesDetector.Factory` which files to
stage; `NothingToStage` answers none, and a job chooses it with the option `NOTHING_TO_STAGE_FLAG`.

    jar = build_jar(folder, lib, java)   # folder/groundwatch-flink-<digest>.jar, or None without a javac

`folder` belongs to one cluster (its home), never the shared jars folder, so two checkouts never replace each
other's build under a running job server. The cluster puts the jar on the classpath of every process it starts:
the job server picks the factory, and the TaskManagers read the option back when they deserialise a job's options.
A machine with a Java runtime but no compiler gets None, and its jobs stage the jars as before: slower to start,
never wrong. A compiler that fails raises `BuildFailed` with its output.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["NOTHING_TO_STAGE_FLAG", "SOURCE", "BuildFailed", "build_jar", "find_javac", "jar_path", "prune"]

SOURCE = Path(__file__).resolve().parent / "flink" / "NothingToStage.java"
NOTHING_TO_STAGE_FLAG = "--pipeline_resources_detector_factory_class=dev.groundwatch.flink.NothingToStage"
"""The Beam option by which a job stages no jars (declared for Python by `pipelines.options.flink`)."""
_PREFIX = "groundwatch-flink-"


class BuildFailed(RuntimeError):
    """`javac` could not compile `NothingToStage`; the message holds its output."""


def find_javac(java: str) -> str | None:
    """The Java compiler of the JDK `java` belongs to, else the one on PATH, else None (a runtime only)."""
    beside = Path(java).resolve().parent / "javac"
    return str(beside) if beside.exists() else shutil.which("javac")


def jar_path(folder: Path) -> Path:
    """Where `build_jar` puts the build of the current source in `folder` (named by the source's digest)."""
    return folder / f"{_PREFIX}{hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]}.jar"


def build_jar(folder: Path, lib: Path, java: str) -> Path | None:
    """`NothingToStage` compiled against Beam's jars in `lib` into `folder`, once per version of its source.

    None when no compiler is found. The jar appears whole or not at all (written beside, then renamed), and an
    existing build is never touched: a job server may be reading it."""
    jar = jar_path(folder)
    if jar.exists():
        return jar
    javac = find_javac(java)
    if javac is None:
        return None
    beam_core = next(lib.glob("beam-sdks-java-core-*.jar"), None)
    if beam_core is None:
        raise BuildFailed(f"no beam-sdks-java-core jar in {lib} to compile {SOURCE.name} against")
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as work:
        classes = Path(work) / "classes"
        compiled = subprocess.run(
            [javac, "--release", "11", "-cp", str(beam_core), "-d", str(classes), str(SOURCE)],
            capture_output=True,
            text=True,
        )
        if compiled.returncode != 0:
            output = (compiled.stderr or compiled.stdout).strip()
            raise BuildFailed(f"{javac} could not compile {SOURCE.name}:\n{output}")
        # A jar is a zip of the classes folder; `jar` ships with javac, but the zip needs nothing else.
        archive = shutil.make_archive(str(Path(work) / "build"), "zip", classes)
        os.replace(archive, jar)  # the same file system: atomic
    return jar


def prune(folder: Path, keep: Path | None) -> None:
    """Remove from `folder` every build but `keep`, and what a killed build left. Only for a cluster none of whose
    job servers runs: a running one may still read an older build."""
    if not folder.is_dir():
        return
    for entry in folder.iterdir():
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)  # a build's work folder, left by a killed start
        elif entry.name.startswith(_PREFIX) and entry != keep:
            entry.unlink(missing_ok=True)
