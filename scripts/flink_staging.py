"""Jobs on the local Flink cluster that stage no jars: `scripts/flink/NothingToStage.java`, built once.

Beam's Flink job server sends every jar of its own classpath (about 150 MB) to the JobManager with each job,
which took 13 s of each job's start here. The local cluster's TaskManagers run from those same jars (and load
classes parent-first), so a job needs none of them. Beam asks a `PipelineResourcesDetector.Factory` which files to
stage; `NothingToStage` answers none, and a job chooses it with the option `NOTHING_TO_STAGE_FLAG`.

    jar = build_jar(lib, java)   # lib/groundwatch-flink-<digest>.jar, or None when no javac is at hand

The jar lands in the job server's `lib` folder, so it is on the job server's classpath. A machine with a Java
runtime but no compiler gets None, and its jobs stage the jars as before: slower to start, never wrong.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["NOTHING_TO_STAGE_FLAG", "SOURCE", "build_jar", "find_javac"]

SOURCE = Path(__file__).resolve().parent / "flink" / "NothingToStage.java"
NOTHING_TO_STAGE_FLAG = "--pipeline_resources_detector_factory_class=dev.groundwatch.flink.NothingToStage"
"""The Beam option by which a job stages no jars (declared for Python by `pipelines.options.flink`)."""
_PREFIX = "groundwatch-flink-"


def find_javac(java: str) -> str | None:
    """The Java compiler of the JDK `java` belongs to, else the one on PATH, else None (a runtime only)."""
    beside = Path(java).resolve().parent / "javac"
    return str(beside) if beside.exists() else shutil.which("javac")


def build_jar(lib: Path, java: str) -> Path | None:
    """`NothingToStage` compiled into `lib` once per version of its source (older builds removed); None when no
    compiler is found or the build fails."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    jar = lib / f"{_PREFIX}{digest}.jar"
    if jar.exists():
        return jar
    javac = find_javac(java)
    if javac is None:
        return None
    beam_core = next(lib.glob("beam-sdks-java-core-*.jar"), None)
    if beam_core is None:
        return None
    with tempfile.TemporaryDirectory() as work:
        classes, partial = Path(work) / "classes", Path(work) / jar.name
        compiled = subprocess.run(
            [javac, "--release", "11", "-cp", str(beam_core), "-d", str(classes), str(SOURCE)],
            capture_output=True,
            text=True,
        )
        if compiled.returncode != 0:
            return None
        # A jar is a zip of the classes folder; `jar` ships with javac, but the zip needs nothing else.
        shutil.make_archive(str(partial.with_suffix("")), "zip", classes)
        for old in lib.glob(f"{_PREFIX}*.jar"):
            old.unlink()
        shutil.move(partial.with_suffix(".zip"), jar)
    return jar
