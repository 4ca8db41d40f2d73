"""An ASGI app (an OpenEnv environment's `create_app`) served by uvicorn in this process, on a thread,
at a free loopback port: a server for tests that costs no process start."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def serving(app: Any) -> Iterator[str]:
    """The app's URL while the block runs; the server stops when it ends."""
    import uvicorn  # lazy: only the tests that serve an app need it

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120  # a start, not a synchronisation: the loop waits for it
    while not (server.started and server.servers) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join()
