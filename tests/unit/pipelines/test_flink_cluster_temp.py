"""Where the local Flink's JVMs keep their temporary files (`LocalFlink`, `scripts/flink_cluster.py`): each role in
a folder of its own in the home, emptied of what a killed process left before the role starts again, all removed
by `stop`. Nothing is started here; that Flink writes there, and that a killed TaskManager's working directory
goes, is checked on a real cluster in `tests/integration/flink/`."""

from __future__ import annotations

from tests.support.scripts import load_script

cluster = load_script("flink_cluster")


def _left_behind(flink, role: str):
    """A file in `role`'s temporary folder, as a killed process of that role leaves one."""
    folder = flink.home / "jvm-tmp" / role
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tm_127.0.0.1:1-dead").write_text("a job's jars")
    return folder


def test_a_jvm_starts_with_its_roles_temporary_folder_emptied_of_what_a_killed_one_left(tmp_path):
    flink = cluster.LocalFlink(tmp_path / "home")
    folder, other = _left_behind(flink, "task_manager"), _left_behind(flink, "task_manager_1")
    assert f"-Djava.io.tmpdir={folder}" in flink._jvm_properties("task_manager")
    assert folder.is_dir() and not any(folder.iterdir())
    assert any(other.iterdir())  # another role's folder is its own process's


def test_a_job_server_before_a_cluster_keeps_what_the_last_one_staged(tmp_path):
    flink = cluster.LocalFlink(tmp_path / "home")
    folder = _left_behind(flink, "job_server")
    assert f"-Djava.io.tmpdir={folder}" in flink._jvm_properties("job_server", keep_temp=True)
    assert any(folder.iterdir())


def test_stop_removes_every_temporary_folder_and_nothing_else_in_the_home(tmp_path):
    flink = cluster.LocalFlink(tmp_path / "home")
    for role in ("job_server", "job_manager", "task_manager"):
        _left_behind(flink, role)
    (flink.home / "tmp").mkdir()  # a folder of the user's own, where the home is one they chose
    assert flink.stop() is False  # nothing ran
    assert not (flink.home / "jvm-tmp").exists() and (flink.home / "tmp").is_dir()
