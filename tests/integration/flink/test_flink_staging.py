"""Jobs on the local cluster stage no jars: `scripts/flink/NothingToStage.java`, built by `scripts/flink_staging.py`."""

from __future__ import annotations

import os
import subprocess
import zipfile

import pytest

from tests.support.scripts import load_script

pytestmark = [pytest.mark.flink]

cluster = load_script("flink_cluster")
staging = load_script("flink_staging")
CLASS = "dev/groundwatch/flink/NothingToStage.class"


@pytest.fixture
def lib(tmp_path):
    """A jars folder holding the one jar the class compiles against: Beam's Java SDK core, from the real libs."""
    (core,) = cluster.ensure_libs().glob("beam-sdks-java-core-*.jar")
    folder = tmp_path / "lib"
    folder.mkdir()
    (folder / core.name).symlink_to(core)
    return folder


def test_the_class_is_compiled_into_the_clusters_folder_once(lib, tmp_path):
    folder = tmp_path / "home" / "staging"
    jar = staging.build_jar(folder, lib, cluster.find_java())
    assert jar is not None and jar.parent == folder
    assert CLASS in zipfile.ZipFile(jar).namelist()
    assert [p.name for p in folder.iterdir()] == [jar.name]  # built beside and renamed: no leftovers
    assert not list(lib.glob("groundwatch-flink-*"))  # nothing in the shared jars folder
    built = jar.stat().st_mtime_ns
    assert staging.build_jar(folder, lib, cluster.find_java()) == jar and jar.stat().st_mtime_ns == built


def test_another_version_of_the_source_never_removes_a_build_in_use(lib, tmp_path):
    folder = tmp_path / "staging"
    folder.mkdir()
    in_use = folder / "groundwatch-flink-0123456789ab.jar"  # a job server started by an older checkout reads it
    in_use.write_bytes(b"a build of an older source")
    jar = staging.build_jar(folder, lib, cluster.find_java())
    assert jar != in_use and in_use.read_bytes() == b"a build of an older source"


def test_a_failed_compile_says_why(lib, tmp_path, monkeypatch):
    broken = tmp_path / "NothingToStage.java"
    broken.write_text("package dev.groundwatch.flink; public class NothingToStage { int x = ; }")
    monkeypatch.setattr(staging, "SOURCE", broken)
    with pytest.raises(staging.BuildFailed, match="(?s)NothingToStage.java.*error"):
        staging.build_jar(tmp_path / "staging", lib, cluster.find_java())
    assert not list((tmp_path / "staging").glob("*.jar"))


def test_the_class_loads_and_stages_nothing(lib, tmp_path):
    jar = staging.build_jar(tmp_path / "staging", lib, cluster.find_java())
    # Beam calls NothingToStage.create().getPipelineResourcesDetector().detect(loader): run that in a JVM.
    probe = tmp_path / "Probe.java"
    probe.write_text(
        "public class Probe { public static void main(String[] a) {"
        " System.out.println(dev.groundwatch.flink.NothingToStage.create().getPipelineResourcesDetector()"
        ".detect(Probe.class.getClassLoader())); } }"
    )
    classpath = os.pathsep.join([str(jar), *map(str, lib.glob("beam-sdks-java-core-*.jar"))])
    java = cluster.find_java()
    run = subprocess.run([java, "-cp", classpath, str(probe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "[]"


def test_without_a_compiler_there_is_no_jar_and_jobs_stage_as_before(lib, tmp_path, monkeypatch):
    runtime = tmp_path / "jre" / "bin"
    runtime.mkdir(parents=True)
    (runtime / "java").write_text(f'#!/bin/sh\nexec {cluster.find_java()} "$@"\n')  # a runtime without javac
    (runtime / "java").chmod(0o755)
    monkeypatch.setenv("PATH", str(runtime))  # no javac beside this java, none on PATH
    assert staging.build_jar(tmp_path / "staging", lib, str(runtime / "java")) is None
    assert not (tmp_path / "staging").exists()


def test_a_cluster_whose_build_fails_warns_and_stages_as_before(lib, tmp_path, monkeypatch, capsys):
    broken = tmp_path / "NothingToStage.java"
    broken.write_text("package dev.groundwatch.flink; public class NothingToStage { int x = ; }")
    monkeypatch.setattr(staging, "SOURCE", broken)
    assert cluster.LocalFlink(tmp_path / "home")._staging_jar(lib, cluster.find_java()) is None
    warning = capsys.readouterr().err
    assert "warning:" in warning and "error" in warning and "stage the job server's jars" in warning


def test_a_starting_cluster_removes_older_builds_and_a_running_one_warns_no_more(lib, tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    # A job server that runs without the jar keeps running without it: nothing is compiled for it.
    assert cluster.LocalFlink(home)._staging_jar(lib, cluster.find_java(), starting=False) is None
    assert not (home / "staging").exists()
    running = staging.build_jar(home / "staging", lib, cluster.find_java())  # what the running job server has
    older, left = home / "staging" / "groundwatch-flink-0123456789ab.jar", home / "staging" / "tmpk1lled"
    left.mkdir(parents=True)
    older.write_bytes(b"a build of an older source")
    flink = cluster.LocalFlink(home)
    assert flink._staging_jar(lib, cluster.find_java(), starting=False) == running
    assert older.exists() and left.exists()  # a running job server may still read them
    assert flink._staging_jar(lib, cluster.find_java(), starting=True) == running
    assert sorted(p.name for p in (home / "staging").iterdir()) == [running.name]
    broken = tmp_path / "NothingToStage.java"
    broken.write_text("package dev.groundwatch.flink; public class NothingToStage { int x = ; }")
    monkeypatch.setattr(staging, "SOURCE", broken)
    capsys.readouterr()
    assert flink._staging_jar(lib, cluster.find_java(), starting=False) is None  # not built, and not compiled now
    assert capsys.readouterr().err == ""
