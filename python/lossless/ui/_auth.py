"""Who may read: with a token, a bearer header, or the cookie a browser gets by
opening the page once with ``?token=``; without one, only requests to a loopback
name (a page elsewhere that rebinds its DNS name to 127.0.0.1 is refused)."""

from __future__ import annotations

from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

from lossless._http_auth import refuse, token_matches

__all__ = ["COOKIE", "LOOPBACK_NAMES", "TokenAuth"]

COOKIE = "lossless_ui_token"
#: The names a request to a loopback address comes under, with or without port.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")


class TokenAuth:
    """ASGI middleware: every HTTP request carries the token, as ``Authorization:
    Bearer <token>`` or as the cookie; a request with ``?token=<token>`` gets the
    cookie and is sent to the same address without it, so the token leaves the
    address bar and the history."""

    def __init__(self, app: Any, token: str) -> None:
        self._app = app
        self._token = token

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        if token_matches(headers.get(b"authorization", b""), self._token):
            await self._app(scope, receive, send)
            return
        cookie = SimpleCookie(headers.get(b"cookie", b"").decode("latin-1"))
        if COOKIE in cookie and token_matches(cookie[COOKIE].value.encode(), self._token, b""):
            await self._app(scope, receive, send)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [value for name, value in query if name == "token"]
        if given and token_matches(given[0].encode(), self._token, b""):
            rest = urlencode([(name, value) for name, value in query if name != "token"])
            location = scope.get("path", "/") + (f"?{rest}" if rest else "")
            await send(
                {
                    "type": "http.response.start",
                    "status": 303,
                    "headers": [
                        (b"location", location.encode()),
                        (
                            b"set-cookie",
                            f"{COOKIE}={self._token}; Path=/; HttpOnly; SameSite=Strict".encode(),
                        ),
                        (b"cache-control", b"no-store"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        await refuse(send, b"a token is required: open the address lossless ui printed")
