"""How the `groundwatch` program ends: with its command's status, its exit handlers run and its output flushed,
and, when it failed, without the interpreter's finalization if daemon threads are left running (what a
LOOPBACK run whose runner vanished leaves behind: threads in gRPC calls, still auditing bundles and writing lake
files).

Each case is a program of its own (a subprocess), since what is tested is how a process ends. The gRPC threads
are real: a server on 127.0.0.1 streams to a client thread that is still reading when the command returns. Left
to the interpreter's own exit, that program never ends (threading's exit hook waits for the server's worker,
whose stream does not end), so the test fails by its timeout if the gRPC case is not handled.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

_PROGRAM = textwrap.dedent(
    """
    import atexit, os, sys, threading, time
    from concurrent import futures

    import grpc

    from pipelines.cli import console

    def stream(request, context):
        while True:
            time.sleep(0.05)
            yield b"x"

    if sys.argv[1] == "grpc":
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        handler = grpc.unary_stream_rpc_method_handler(stream)
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.T", {"S": handler}),))
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        call = grpc.insecure_channel(f"127.0.0.1:{port}").unary_stream("/t.T/S")
        reading = threading.Event()

        def read():
            for _ in call(b""):
                reading.set()

        threading.Thread(target=read, daemon=True).start()
        if not reading.wait(10):
            os._exit(3)  # the premise failed: no stream is being read
    elif sys.argv[1] == "sleeper":
        threading.Thread(target=time.sleep, args=(600,), daemon=True).start()

    class Finalized:
        def __del__(self):
            os.write(1, b"finalized\\n")

    KEEP = Finalized()  # deleted in the interpreter's finalization, and only there
    atexit.register(lambda: print("exit handler ran"))
    print("before exit", end="")  # no newline: still in the buffer when the process ends
    sys.argv = ["groundwatch", "query", sys.argv[2]]
    console()
    """
)


def _run(threads: str, flag: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _PROGRAM, threads, flag], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize("threads", ["none", pytest.param("grpc", marks=pytest.mark.server)])
def test_a_failed_command_ends_with_its_status_handlers_and_output(threads):
    ended = _run(threads, "--no-such-flag")
    assert ended.returncode == 2, ended.stderr  # the command's status: bad usage
    assert "unrecognized argument --no-such-flag" in ended.stderr
    assert ended.stdout.startswith("before exit")
    assert "exit handler ran" in ended.stdout
    # With daemon threads left, the process ends before finalization; without, it is a plain exit.
    assert ("finalized" in ended.stdout) is (threads == "none"), ended.stdout


def test_a_command_that_succeeds_exits_the_plain_way_whatever_threads_are_left():
    ended = _run("sleeper", "--help")
    assert ended.returncode == 0, ended.stderr
    assert "usage: groundwatch query" in ended.stdout
    assert "exit handler ran" in ended.stdout and "finalized" in ended.stdout
