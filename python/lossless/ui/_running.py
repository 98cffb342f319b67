"""The viewer served from a thread of this process, for a test, a script or a
notebook that goes on while it runs."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from lossless.errors import StoreError
from lossless.store import Store

__all__ = ["running"]

_START_TIMEOUT_S = 20.0


@contextmanager
def running(
    db: str | os.PathLike[str] | Store, *, token: str | None = None, port: int = 0
) -> Iterator[str]:
    """Serves the viewer over ``db`` on 127.0.0.1 (``port`` 0: a free one) in a
    thread while the block runs; yields the page's address."""
    import uvicorn

    from lossless.ui.app import build_app

    if port == 0:
        # Asked of the system and let go: uvicorn binds it again at once.
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    config = uvicorn.Config(
        build_app(db, token=token), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="lossless-ui", daemon=True)
    thread.start()
    deadline = time.monotonic() + _START_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise StoreError(f"the viewer did not start on 127.0.0.1:{port}")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(_START_TIMEOUT_S)
