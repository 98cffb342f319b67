"""Who may read a database over HTTP: the servers that serve one (``lossless mcp
--http``, ``lossless ui``) bind a loopback address by default and refuse any other
without a bearer token, since what they serve is every stored session."""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any

__all__ = ["BearerAuth", "is_loopback", "token_matches"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_matches(given: bytes, token: str, scheme: bytes = b"Bearer ") -> bool:
    """Whether ``given`` is ``scheme`` + ``token``, compared in constant time."""
    return hmac.compare_digest(given, scheme + token.encode())


class BearerAuth:
    """ASGI middleware: HTTP requests without the bearer token get a 401."""

    def __init__(self, app: Any, token: str) -> None:
        self._app = app
        self._token = token

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not token_matches(given, self._token):
                await refuse(send)
                return
        await self._app(scope, receive, send)


async def refuse(send: Any, message: bytes = b"a bearer token is required") -> None:
    """Answers 401 with a JSON error saying ``message``."""
    body = b'{"error": "' + message + b'"}'
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b"Bearer"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
