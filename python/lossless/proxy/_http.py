"""The proxy's HTTP/1.1 side: requests read from a client connection, responses
written back whole or as a stream, on anyio byte streams.

Only what API clients send is understood: a request line, headers, and a body of
``Content-Length`` bytes. Connections are kept alive between requests.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from anyio.abc import ByteStream
from anyio.streams.buffered import BufferedByteReceiveStream

__all__ = ["HttpError", "Request", "read_request", "send_json", "send_stream", "send_whole"]

#: Largest header block and body taken (a request of 64 MB holds many screenshots).
MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 411: "Length Required"}


class HttpError(Exception):
    """A request the proxy cannot take: answered with ``status`` and a JSON error."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Request:
    """One request from the client: its headers keep their names in lower case."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict[str, Any]:
        """The body as a JSON object, or :class:`HttpError` 400."""
        try:
            value = json.loads(self.body)
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise HttpError(400, f"the body is not JSON: {err}") from err
        if not isinstance(value, dict):
            raise HttpError(400, "the body is not a JSON object")
        return value

    @property
    def keep_alive(self) -> bool:
        return self.headers.get("connection", "").lower() != "close"


async def read_request(reader: BufferedByteReceiveStream) -> Request | None:
    """The next request on the connection; None when the client closed it."""
    try:
        head = await reader.receive_until(b"\r\n\r\n", MAX_HEADER_BYTES)
    except Exception:  # closed, reset, or a header block past the limit
        return None
    lines = head.decode("latin-1").split("\r\n")
    try:
        method, target, _ = lines[0].split(" ", 2)
    except ValueError:
        raise HttpError(400, f"not an HTTP request line: {lines[0][:80]!r}") from None
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise HttpError(411, "send the body with a Content-Length")
    length = int(headers.get("content-length", "0") or 0)
    if length > MAX_BODY_BYTES:
        raise HttpError(400, f"a body of {length} bytes is over the {MAX_BODY_BYTES}-byte limit")
    body = await reader.receive_exactly(length) if length else b""
    return Request(method.upper(), target, headers, body)


def _head(status: int, reason: str, headers: Mapping[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {reason or _REASONS.get(status, '')}"]
    lines.extend(f"{name}: {value}" for name, value in headers.items())
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def send_whole(
    stream: ByteStream,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    reason: str = "",
) -> None:
    """A response with its whole body."""
    sent = {**headers, "content-length": str(len(body))}
    await stream.send(_head(status, reason, sent) + body)


async def send_json(stream: ByteStream, status: int, body: dict[str, Any]) -> None:
    """A JSON response (the proxy's own errors)."""
    data = json.dumps(body).encode()
    await send_whole(stream, status, {"content-type": "application/json"}, data)


async def send_stream(
    stream: ByteStream,
    status: int,
    headers: Mapping[str, str],
    chunks: AsyncIterator[bytes],
    *,
    reason: str = "",
) -> None:
    """A response whose body is sent chunk by chunk as ``chunks`` yields it."""
    sent = {**headers, "transfer-encoding": "chunked"}
    await stream.send(_head(status, reason, sent))
    async for chunk in chunks:
        if chunk:
            await stream.send(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
    await stream.send(b"0\r\n\r\n")
