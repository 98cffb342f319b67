"""``lossless ui``: a local, read-only web viewer of a lossless database, live
while sessions are written to it.

It answers what the developer of a misbehaving agent asks: what did the model see
at turn N, and what had been compacted away? Sessions with their lineage; a
session's timeline, each message marked as in the current request, left out,
pruned or compacted (under which summary); the request as it was sent at any turn,
with the arena's zones, the ledger and the tokens of each part against the budget;
the summary DAG down to the original messages; a chart of the turns; search.

``build_app(db)`` gives the ASGI application (starlette); :func:`serve` runs it
with uvicorn on 127.0.0.1, and :func:`running` in a thread while a block runs.
They need the ``ui`` extra (``pip install 'lossless[ui]'``). See docs/UI.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from lossless.errors import StoreError

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from lossless.store import Store

__all__ = ["DEFAULT_PORT", "build_app", "running", "serve"]

DEFAULT_PORT = 8766


def build_app(db: str | os.PathLike[str] | Store, *, token: str | None = None) -> Starlette:
    """The viewer's application over ``db`` (see :func:`lossless.ui.app.build_app`)."""
    _require_server()
    from lossless.ui.app import build_app as build

    return build(db, token=token)


def serve(
    db: str | os.PathLike[str],
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
) -> None:
    """Serve the viewer over ``db`` until the process is stopped. An address other
    than a loopback one needs a ``token`` (or ``LOSSLESS_UI_TOKEN``)."""
    _require_server()
    import uvicorn

    from lossless.ui.app import build_app as build
    from lossless.ui.app import check_address

    token = token or os.environ.get("LOSSLESS_UI_TOKEN") or None
    check_address(host, token)
    uvicorn.run(build(db, token=token), host=host, port=port, log_level="warning")


@contextmanager
def running(
    db: str | os.PathLike[str] | Store, *, token: str | None = None, port: int = 0
) -> Iterator[str]:
    """Serves the viewer over ``db`` on 127.0.0.1 in a thread while the block runs
    (``port`` 0: a free one); yields the page's address."""
    _require_server()
    from lossless.ui._running import running as run

    with run(db, token=token, port=port) as address:
        yield address


def _require_server() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as err:
        raise StoreError(
            "the viewer needs starlette and uvicorn: pip install 'lossless[ui]'"
        ) from err
