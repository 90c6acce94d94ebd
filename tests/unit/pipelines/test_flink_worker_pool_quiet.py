"""What a pool's worker keeps quiet (`scripts/flink_worker_pool.py`): only the data plane's failure record and the
stream readers' deaths for a dropped stream (UNAVAILABLE, CANCELLED); every other record and thread error is
kept. The pool's own tests (`test_flink_worker_pool.py`) drop a worker's control stream for real."""

from __future__ import annotations

import logging
import sys
import threading

import grpc
import pytest

from tests.support.scripts import load_script

pool = load_script("flink_worker_pool")


class _StreamError(grpc.RpcError):
    """What a gRPC stream raises when it ends other than by its own close."""

    def __init__(self, code: grpc.StatusCode):
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code


def _failure_record(msg: str, error: BaseException) -> logging.LogRecord:
    return logging.LogRecord(
        "apache_beam.runners.worker.data_plane", logging.ERROR, __file__, 1, msg, None, (type(error), error, None)
    )


@pytest.mark.parametrize("code", [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED])
def test_the_data_planes_failure_on_a_dropped_stream_is_dropped(code):
    quiet = pool._QuietDroppedDataStream()
    assert not quiet.filter(_failure_record(pool._DATA_PLANE_FAILURE, _StreamError(code)))


@pytest.mark.parametrize(
    "msg, error",
    [
        (pool._DATA_PLANE_FAILURE, _StreamError(grpc.StatusCode.INTERNAL)),  # a broken stream, not a dropped one
        (pool._DATA_PLANE_FAILURE, ValueError("a bad element")),
        ("Something else in the data plane.", _StreamError(grpc.StatusCode.UNAVAILABLE)),
    ],
)
def test_every_other_data_plane_record_is_kept(msg, error):
    assert pool._QuietDroppedDataStream().filter(_failure_record(msg, error))


def _thread_error(name: str, error: BaseException, capsys) -> str:
    """What `_thread_exception` prints for `error` ending the thread called `name`."""
    thread = threading.Thread(name=name)
    try:
        raise error
    except BaseException:  # noqa: BLE001 (the hook gets what the thread raised)
        pool._thread_exception(threading.ExceptHookArgs((*sys.exc_info(), thread)))
    return capsys.readouterr().err


@pytest.mark.parametrize("reader", ["read_grpc_client_inputs", "read_state"])
def test_a_stream_reader_dying_on_a_dropped_stream_prints_nothing(reader, capsys):
    assert _thread_error(reader, _StreamError(grpc.StatusCode.UNAVAILABLE), capsys) == ""


@pytest.mark.parametrize(
    "name, error",
    [
        ("read_grpc_client_inputs", _StreamError(grpc.StatusCode.INTERNAL)),
        ("read_grpc_client_inputs", ValueError("a bad element")),
        ("a DoFn's own thread", _StreamError(grpc.StatusCode.UNAVAILABLE)),  # another service's stream
    ],
)
def test_any_other_thread_error_prints_its_traceback(name, error, capsys):
    printed = _thread_error(name, error, capsys)
    assert f"Exception in thread {name}" in printed and "Traceback" in printed, printed
