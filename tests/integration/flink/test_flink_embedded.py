"""The stream on Beam's job server with its embedded Flink mini-cluster (`scripts/flink.sh start` without
`--cluster`), its lake in a bucket (marker `flink`; moto's S3 server of `tests.support.s3_fixtures`).

`groundwatch monitor` on the mini-cluster, `--flink-rest` naming the REST port range `scripts/flink_cluster.py`
configures for it, audits every produced response into `s3://bucket/lake` and commits the group's offsets to the
end; stopped by SIGTERM it cancels its Flink job, which ends CANCELED (not FAILED, as it did when the monitor had
no REST address to cancel it at). The mini-cluster lives only as long as its job, so its final state is read
from Flink's own log (the JobMaster's "switched from state ... to CANCELED").
"""

from __future__ import annotations

import os
import re
import signal

import pytest

from tests.support.flink_fixtures import LocalFlink, documented_flags, log_tail, monitor_process, produce_into_stream
from tests.support.kafka_fixtures import wait_for
from tests.support.s3_fixtures import S3_SECRET

pytestmark = [pytest.mark.flink]


@pytest.fixture(scope="module")
def embedded_flink(tmp_path_factory):
    """Beam's Flink job server with its embedded mini-cluster, on free ports, for this module."""
    flink = LocalFlink(tmp_path_factory.mktemp("flink-embedded"), job_port=0, rest_port=0)
    try:
        flink.start(cluster=False)
        yield flink
    finally:
        flink.stop()


def _job_states(flink) -> list[tuple[str, str]]:
    """(Flink job id, state reached) for every state change the mini-clusters' JobMasters logged."""
    text = flink.log_file("job_server").read_text(errors="replace")
    return re.findall(r"\(([0-9a-f]{32})\) switched from state \w+ to (\w+)", text)


def test_monitor_on_the_mini_cluster_writes_the_bucket_and_sigterm_cancels_its_job(
    embedded_flink, kafka_bootstrap, new_topic, s3_lake, tmp_path
):
    topic, log, count = new_topic(partitions=2), tmp_path / "monitor.log", 60
    # docs/flink.md's flags for a stream on the mini-cluster, its ports this job server's: `--flink-rest` names the
    # range 127.0.0.1:LOW-HIGH where the running job serves its REST API.
    beam_argv = documented_flags(embedded_flink, "Stopping a stream", "monitor")
    assert "--flink-rest" in beam_argv
    monitor = monitor_process(kafka_bootstrap, topic, s3_lake, beam_argv, log)
    try:
        produce_into_stream(kafka_bootstrap, topic, s3_lake, count, 21, monitor, log)
        (job,) = {jid for jid, state in _job_states(embedded_flink) if state == "RUNNING"}
        monitor.send_signal(signal.SIGTERM)
        assert monitor.wait(timeout=180) == 130, log_tail(log)  # interrupted, as after Ctrl-C
    finally:
        if monitor.poll() is None:
            os.killpg(monitor.pid, signal.SIGKILL)
    ended = wait_for(
        lambda: [s for jid, s in _job_states(embedded_flink) if jid == job and s in ("CANCELED", "FAILED", "FINISHED")],
        timeout_s=60,
        what="the monitor's job ended",
    )
    assert ended == ["CANCELED"], log_tail(log)
    assert S3_SECRET not in log.read_text(errors="replace")
