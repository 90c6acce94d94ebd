"""Where a stopped stream cancels its Flink job (`pipelines.runner.stop.flink_rest_urls`)."""

from __future__ import annotations

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.options.monitor import add_arguments, to_argv
from pipelines.runner.stop import flink_rest_urls


def _urls(*argv: str) -> list[str]:
    return flink_rest_urls(PipelineOptions(list(argv)))


def test_flink_rest_names_one_port_or_a_range_and_wins_over_flink_master():
    assert _urls("--flink_rest=127.0.0.1:38081") == ["http://127.0.0.1:38081"]
    assert _urls("--flink_rest=127.0.0.1:38081-38083", "--flink_master=elsewhere:8081") == [
        "http://127.0.0.1:38081",
        "http://127.0.0.1:38082",
        "http://127.0.0.1:38083",
    ]


def test_flink_master_is_used_when_it_names_host_and_port_only():
    assert _urls("--flink_master=jobmanager.example:8081") == ["http://jobmanager.example:8081"]
    assert _urls("--flink_master=[local]") == []
    assert _urls("--flink_master=[auto]") == []
    assert _urls() == []


@pytest.mark.parametrize("bad", ["127.0.0.1", "127.0.0.1:38090-38081", "127.0.0.1:1-5000", "[local]"])
def test_an_unusable_flink_rest_is_refused_naming_the_flag(bad):
    with pytest.raises(ValueError, match="--flink-rest"):
        _urls(f"--flink_rest={bad}")


def test_the_monitor_flag_reaches_the_pipeline_options():
    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--bootstrap-servers", "b:9092", "--flink-rest", "127.0.0.1:38081-38090"])
    assert _urls(*to_argv(args))[-1] == "http://127.0.0.1:38090"


def test_the_monitor_refuses_a_bad_flink_rest_before_reaching_kafka(capsys):
    from pipelines.cli import main

    # Port 9 of 127.0.0.1 answers nothing: reaching Kafka would be a different error.
    assert main(["monitor", "--bootstrap-servers", "127.0.0.1:9", "--flink-rest", "127.0.0.1"]) == 2
    err = capsys.readouterr().err
    assert "--flink-rest must be HOST:PORT or HOST:LOW-HIGH" in err and "Kafka" not in err


@pytest.mark.server
def test_a_port_of_the_range_that_answers_in_another_protocol_holds_no_job():
    """Flink's own RPC and blob ports can fall in a `--flink-rest` range: a binary reply is not a REST API."""
    import socket
    import threading

    from pipelines.runner.stop import _jobs_named

    server = socket.create_server(("127.0.0.1", 0))

    def reply_in_binary() -> None:
        connection, _ = server.accept()
        with connection:
            connection.recv(1024)
            connection.sendall(b"\x00\x00\x00\x0c@\x00\x00@\xfe\x00\x00\x00?\r\n\r\n")

    threading.Thread(target=reply_in_binary, daemon=True).start()
    try:
        assert _jobs_named(f"http://127.0.0.1:{server.getsockname()[1]}", "job") == []
    finally:
        server.close()
