"""The proxy: an HTTP server on 127.0.0.1 that keeps each conversation in a lossless
session and sends the upstream the bounded request instead of the whole history."""

from __future__ import annotations

import json
import logging
import os
from typing import Any, Self

import anyio
from anyio.abc import ByteStream, SocketAttribute, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from lossless.config import Config
from lossless.errors import LosslessError
from lossless.proxy._forward import Upstream
from lossless.proxy._http import HttpError, Request, read_request, send_json
from lossless.proxy._routes import ROUTES, Route, conversation_of, with_request
from lossless.proxy._sessions import session_key
from lossless.session._keyed import SessionsByKey

__all__ = ["LosslessProxy"]

log = logging.getLogger("lossless.proxy")


class LosslessProxy:
    """Serves Chat Completions (``/v1/chat/completions``), Anthropic Messages
    (``/v1/messages``) and Responses (``/v1/responses``) on ``host:port`` in front of
    ``upstream``; any other path is passed through unchanged.

    Each request's conversation is handed to its session's ``sync`` (the session
    named by the ``X-Lossless-Session`` header, else the one its opening names), and
    the body goes upstream with the bounded request in place of the history, every
    other field and header as the client sent it. The answer comes back as the
    upstream sends it, streams chunk by chunk, errors with their status and body.

    ``async with LosslessProxy(upstream=..., db=...) as proxy:`` serves until the
    block ends; ``proxy.url`` is its base URL (with ``/v1``). ``port=0`` picks a
    free port.
    """

    def __init__(
        self,
        *,
        upstream: str,
        db: str | os.PathLike[str] = "lossless.db",
        config: Config | None = None,
        host: str = "127.0.0.1",
        port: int = 8787,
        max_open_sessions: int = 64,
        upstream_timeout_s: float | None = 600.0,
    ) -> None:
        self.host = host
        self.port = port
        self._upstream = Upstream(upstream, timeout_s=upstream_timeout_s)
        self._sessions = SessionsByKey(db, config, max_open_sessions)
        self._group: TaskGroup | None = None

    @property
    def url(self) -> str:
        """The base URL clients take (``base_url`` of the openai SDK)."""
        return f"http://{self.host}:{self.port}/v1"

    async def __aenter__(self) -> Self:
        listener = await anyio.create_tcp_listener(local_host=self.host, local_port=self.port)
        self.port = listener.extra(SocketAttribute.local_port)
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        self._group.start_soon(listener.serve, self._connection)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._group is not None
        self._group.cancel_scope.cancel()
        await self._group.__aexit__(None, None, None)
        with anyio.CancelScope(shield=True):
            await self._sessions.aclose()
            await self._upstream.aclose()

    async def serve_forever(self) -> None:
        """Serves until cancelled."""
        async with self:
            await anyio.sleep_forever()

    async def _connection(self, stream: ByteStream) -> None:
        reader = BufferedByteReceiveStream(stream)
        async with stream:
            while True:
                try:
                    request = await read_request(reader)
                    if request is None:
                        return
                    await self._answer(stream, request)
                except HttpError as err:
                    await send_json(stream, err.status, _error(str(err)))
                    return
                except anyio.BrokenResourceError:
                    return
                if not request.keep_alive:
                    return

    async def _answer(self, stream: ByteStream, request: Request) -> None:
        path = request.path.split("?", 1)[0]
        route = ROUTES.get(path)
        if route is None or request.method != "POST":
            await self._upstream.relay(
                stream, request.method, request.path, request.headers, request.body
            )
            return
        body = request.json()
        if route.format == "responses" and body.get("previous_response_id"):
            # The upstream holds that conversation; its input is only what is new.
            await self._upstream.relay(stream, "POST", request.path, request.headers, request.body)
            return
        try:
            sent = await self._bounded(route, request, body)
        except LosslessError as err:
            await send_json(stream, 400, _error(f"lossless: {err}"))
            return
        data = json.dumps(sent).encode()
        await self._upstream.relay(stream, "POST", request.path, request.headers, data)

    async def _bounded(
        self, route: Route, request: Request, body: dict[str, Any]
    ) -> dict[str, Any]:
        """``body`` with the bounded request of its session in place of the history."""
        conversation = conversation_of(route, body)
        key = session_key(route, request.headers, conversation)
        model = conversation.model
        if "/" not in model:
            model = f"{route.provider}/{model}"
        system = conversation.system
        async with self._sessions.use(key, model, system) as session:
            bounded = await session.sync(
                conversation.messages,
                format=route.format,
                system=system if route.format == "anthropic" else None,
                tools=conversation.tools,
            )
        return with_request(route, body, bounded)


def _error(message: str) -> dict[str, object]:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
