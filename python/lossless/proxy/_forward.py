"""Requests sent on to the upstream server, its answers relayed to the client as
they arrive: the status, the body bytes as sent (compressed or not), and every
header but those that belong to one connection."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import httpx
from anyio.abc import ByteStream

from lossless.proxy._http import send_json, send_stream, send_whole

__all__ = ["Upstream"]

#: Headers that describe one connection, never passed on (RFC 9110, 7.6.1), and
#: those the proxy sets itself.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "x-lossless-session",
    }
)


class Upstream:
    """The server requests go on to."""

    def __init__(self, base_url: str, *, timeout_s: float | None = 600.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=10.0))

    def url_of(self, path: str) -> str:
        """The upstream URL of ``path`` (an upstream given with ``/v1`` keeps one)."""
        if self.base_url.endswith("/v1") and path.startswith("/v1/"):
            path = path[3:]
        return self.base_url + path

    async def relay(
        self,
        client: ByteStream,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes,
    ) -> None:
        """Sends the request upstream and its answer back to ``client`` as it comes."""
        sent = {name: value for name, value in headers.items() if name not in _HOP_BY_HOP}
        request = self._client.build_request(method, self.url_of(path), headers=sent, content=body)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.HTTPError as err:
            await send_json(client, 502, _error(f"the upstream {self.base_url} failed: {err}"))
            return
        try:
            kept = {
                name: value
                for name, value in response.headers.items()
                if name.lower() not in _HOP_BY_HOP
            }
            chunks = _raw(response)
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                await send_stream(
                    client, response.status_code, kept, chunks, reason=response.reason_phrase
                )
            else:
                whole = b"".join([chunk async for chunk in chunks])
                await send_whole(
                    client, response.status_code, kept, whole, reason=response.reason_phrase
                )
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()


async def _raw(response: httpx.Response) -> AsyncIterator[bytes]:
    async for chunk in response.aiter_raw():
        yield chunk


def _error(message: str) -> dict[str, object]:
    """An error body in the shape OpenAI and Anthropic clients both read."""
    return {"type": "error", "error": {"type": "proxy_error", "message": message}}
