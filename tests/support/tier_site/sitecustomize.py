"""The fast tier's guard inside the Python processes that a fast test starts (`groundwatch ...`, helpers).

`tests.support.tier_guard` puts this folder first on PYTHONPATH and names a log file in
GROUNDWATCH_TIER_GUARD_LOG. A process that then listens on a socket writes one line to that log, which fails
the test that started it, and gets an OSError instead of a server. Without the variable this file does nothing.
"""

import os

_LOG = os.environ.get("GROUNDWATCH_TIER_GUARD_LOG")

if _LOG:
    import socket
    import sys

    def _refuse_listen(self, *args, **kwargs):
        with open(_LOG, "a", encoding="utf-8") as log:
            log.write(f"pid {os.getpid()} ({' '.join(sys.argv)[:200]}) listened on {self.getsockname()}\n")
        raise OSError("the fast test tier starts no server: mark the test with the service it needs")

    socket.socket.listen = _refuse_listen
