"""The tests' own HTTP servers (the fake LMS, the LTI platform, hostile and redirecting
servers) run in a thread of the test's process."""

from __future__ import annotations

import socketserver
import threading

# serve_forever() notices shutdown() only between polls, every 0.5 s by default: each test
# that stopped a server at its end waited up to that long, about 490 tests in all.
SHUTDOWN_POLL_SECONDS = 0.02


def serve_in_thread(server: socketserver.BaseServer) -> threading.Thread:
    """Serve ``server`` in a daemon thread until its ``shutdown()``."""
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS},
        daemon=True,
    )
    thread.start()
    return thread
