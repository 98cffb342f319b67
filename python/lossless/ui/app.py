"""The viewer's web application: the JSON API under ``/api``, one static page, and
who may read (see ``_auth``).

Read-only throughout: the database is opened read-only (nothing is created,
migrated or written) and no route writes. Nothing is fetched from anywhere but the
server itself: the page's Content-Security-Policy says so to the browser too.
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from lossless._http_auth import is_loopback
from lossless.errors import DatabaseNotFoundError, InvalidInputError
from lossless.store import Store, database_path, is_postgres_url
from lossless.ui import api
from lossless.ui._auth import LOOPBACK_NAMES, TokenAuth
from lossless.ui.api._common import ApiError, json_response

__all__ = ["CONTENT_SECURITY_POLICY", "build_app", "check_address", "open_database"]

#: Everything the page loads comes from the server itself; stored text is data
#: (inserted as text, never as markup), and no inline script runs.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def open_database(db: str | os.PathLike[str]) -> Store:
    """The database the viewer reads, opened read-only: a file that must exist,
    or a ``postgresql://`` URL."""
    path = database_path(db)
    if path == ":memory:":
        raise InvalidInputError("db: a private in-memory database cannot be viewed")
    if not is_postgres_url(path) and not os.path.exists(path):
        raise DatabaseNotFoundError(f"{path}: no such database file")
    return Store(path, read_only=True)


def check_address(host: str, token: str | None) -> None:
    """Refuses to serve an address other than a loopback one without a token: the
    viewer shows every stored session."""
    if token is None and not is_loopback(host):
        raise InvalidInputError(
            f"serving on {host} needs a token (--token or LOSSLESS_UI_TOKEN): "
            "the viewer shows every stored session"
        )


def build_app(db: str | os.PathLike[str] | Store, *, token: str | None = None) -> Starlette:
    """The viewer over ``db`` (a path, a ``postgresql://`` URL or a read-only
    :class:`~lossless.store.Store`). With ``token`` every request must carry it (a
    bearer header, or the cookie ``?token=`` sets); without, only requests to a
    loopback name are answered."""
    store = db if isinstance(db, Store) else open_database(db)
    static = resources.files("lossless.ui").joinpath("static")
    files = {entry.name: entry.read_bytes() for entry in static.iterdir() if entry.is_file()}
    # The page's files are named by a digest of them all: cached for good by the
    # browser (a repeat load fetches none), and never stale after an upgrade.
    digest = hashlib.sha256(b"".join(name.encode() + data for name, data in sorted(files.items())))
    prefix = f"/static/{digest.hexdigest()[:16]}"
    page = files["index.html"].replace(b'"/static/', f'"{prefix}/'.encode())
    middleware = []
    if token is None:
        # Loopback names only (compared without the port): a page elsewhere whose
        # name was rebound to 127.0.0.1 reaches the port but names its own host.
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=list(LOOPBACK_NAMES)))
    else:
        middleware.append(Middleware(TokenAuth, token=token))
    app = Starlette(
        routes=[
            Route("/", _page(page)),
            Mount(prefix, app=_Static(files), name="static"),
            *api.routes,
        ],
        middleware=middleware,
        exception_handlers={ApiError: _api_error, HTTPException: _http_error},
    )
    app.state.store = store
    app.add_middleware(_SecurityHeaders)
    return app


def _page(html: bytes) -> Any:
    async def page(request: Request) -> Response:
        # Asked again each time: it names the files of the running version.
        return Response(
            html, media_type="text/html; charset=utf-8", headers={"cache-control": "no-cache"}
        )

    return page


_TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}


class _Static:
    """The page's files, held in memory (a few dozen kilobytes) and served under
    their digest, so a browser keeps them for good."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self._files = files

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        name = scope["path"].rsplit("/", 1)[-1]
        data = self._files.get(name)
        if scope.get("method") not in ("GET", "HEAD") or data is None:
            response: Response = json_response({"error": f"no file {name}", "status": 404}, 404)
        else:
            suffix = os.path.splitext(name)[1]
            media_type = _TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "text/plain"
            response = Response(
                data,
                media_type=media_type,
                headers={"cache-control": "public, max-age=31536000, immutable"},
            )
        await response(scope, receive, send)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return json_response({"error": str(exc), "status": exc.status}, exc.status)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return json_response({"error": exc.detail, "status": exc.status_code}, exc.status_code)


class _SecurityHeaders:
    """Adds the headers that keep the page to its own origin to every answer."""

    def __init__(self, app: Any) -> None:
        self._app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                headers += [
                    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self._app(scope, receive, with_headers)
