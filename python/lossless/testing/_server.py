"""A local OpenAI-compatible chat-completions server for tests."""

from __future__ import annotations

import contextlib
import json
import select
import socket
import sys
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

from ._prefix import PrefixReport, compare
from ._reply import EchoResponder, Reply, Responder
from ._wire import Completion, encode, error_body, estimate_tokens

__all__ = ["LocalLLMServer"]

# How often waiting handlers look for a stop request or a departed client; it bounds
# how long stop() can take.
_POLL_S = 0.05
_STOP_GRACE_S = 1.0
_MALFORMED_JSON = b'{"id":"chatcmpl-malformed","object":"chat.completion","choices":[{'


class LocalLLMServer:
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint on a free local port.

    Replies queued with :meth:`enqueue` are used first, in order; after that the
    ``responder`` (default :class:`EchoResponder`) builds each reply from the request.
    Use it as a context manager (sync or async) or call :meth:`start` and :meth:`stop`.
    Point litellm at it with ``model="openai/<any name>"``, ``api_base=server.base_url``
    and any ``api_key``.
    """

    def __init__(
        self,
        *,
        responder: Responder | None = None,
        host: str = "127.0.0.1",
        model: str = "lossless-test",
        report_cached_tokens: bool = False,
    ) -> None:
        """Configure the server; nothing listens until :meth:`start`.

        ``model`` is the id listed by ``GET /v1/models``; chat requests may name any model.
        With ``report_cached_tokens`` the usage of each reply says, as a provider with
        a prompt cache would (``prompt_tokens_details.cached_tokens``), how many of
        its prompt tokens repeat the previous request's opening messages.
        """
        self.responder: Responder = responder if responder is not None else EchoResponder()
        self.host = host
        self.model = model
        self._lock = threading.Condition()
        self._queue: deque[Reply] = deque()
        self._requests: list[dict[str, Any]] = []
        self._prefixes: list[PrefixReport] = []
        self.report_cached_tokens = report_cached_tokens
        self._completions = 0
        self._tool_calls = 0
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> Self:
        """Bind a free port and serve from a daemon thread. Returns ``self``."""
        if self._httpd is not None:
            raise RuntimeError("server already started")
        self._stopping.clear()
        httpd = _HTTPServer((self.host, 0), self)
        thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": _POLL_S},
            name=f"LocalLLMServer:{httpd.server_address[1]}",
            daemon=True,
        )
        self._httpd, self._thread = httpd, thread
        thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, abandoning hanging requests and closing client connections.

        Returns within about a second even with requests in flight. Safe to call twice.
        """
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.close_connections()
        httpd.wait_idle(_STOP_GRACE_S)
        httpd.server_close()
        if thread is not None:
            thread.join(_STOP_GRACE_S)
        self._httpd = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- addresses -------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port; only valid while running."""
        if self._httpd is None:
            raise RuntimeError("server is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1``, suitable as litellm's ``api_base``."""
        return f"http://{self.host}:{self.port}/v1"

    # -- scripting and inspection ----------------------------------------------------

    def enqueue(self, *replies: Reply) -> None:
        """Queue replies for the next requests, first in first out."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending_replies(self) -> int:
        """How many queued replies have not been used yet."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A snapshot of every chat-completions body received, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def prefixes(self) -> list[PrefixReport]:
        """For each request received, in order, how it begins compared with the one
        before it (see :class:`PrefixReport`)."""
        with self._lock:
            return list(self._prefixes)

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Block until at least ``count`` requests arrived; return them.

        Raises :class:`TimeoutError` if they do not arrive within ``timeout`` seconds.
        """
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._requests) >= count, timeout):
                got = len(self._requests)
                raise TimeoutError(f"expected {count} requests, got {got} in {timeout}s")
            return list(self._requests)

    def reset(self) -> None:
        """Forget queued replies, recorded requests and the id counters."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self._prefixes.clear()
            self._completions = 0
            self._tool_calls = 0

    def _accept(self, body: dict[str, Any]) -> Completion:
        """Record a request and fix the reply it gets (ids, token counts)."""
        with self._lock:
            previous = self._requests[-1] if self._requests else None
            prefix = compare(previous, body)
            self._prefixes.append(prefix)
            self._requests.append(body)
            self._lock.notify_all()
            scripted = self._queue.popleft() if self._queue else None
        try:
            reply = scripted if scripted is not None else self.responder(body)
        except Exception as exc:  # the failure should reach the test as an HTTP error
            reply = Reply(text=f"responder failed: {exc!r}", status=500)
        unnamed = sum(1 for call in reply.tool_calls if call.id is None)
        with self._lock:
            self._completions += 1
            completion_id = f"chatcmpl-{self._completions}"
            first = self._tool_calls + 1
            self._tool_calls += unnamed
        tool_ids = [f"call_{n}" for n in range(first, first + unnamed)]
        cached = estimate_tokens(prefix.shared_chars) if self.report_cached_tokens else None
        return Completion.plan(reply, body, completion_id, tool_ids, cached)


class _HTTPServer(ThreadingHTTPServer):
    """Tracks open connections so stop() can cut idle keep-alive clients loose."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], owner: LocalLLMServer) -> None:
        self.owner = owner
        self._connections: set[socket.socket] = set()
        self._idle = threading.Condition()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._idle:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._idle:
            self._connections.discard(request)
            self._idle.notify_all()
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._idle:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def wait_idle(self, timeout: float) -> None:
        with self._idle:
            self._idle.wait_for(lambda: not self._connections, timeout)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients vanishing mid-response is routine here (timeouts, aborted streams).
        if isinstance(sys.exc_info()[1], OSError) or self.owner._stopping.is_set():
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Streamed chunks are small; Nagle's algorithm would hold each for up to 40 ms.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    # -- routing ---------------------------------------------------------------------

    def do_GET(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        if path in ("/v1/models", "/models"):
            model = self.server.owner.model
            entry = {"id": model, "object": "model", "created": 0, "owned_by": "lossless"}
            self._send_json(200, {"object": "list", "data": [entry]})
        else:
            self._send_json(404, error_body(404, f"no route for GET {path or '/'}"))

    def do_POST(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        raw = self._read_body()
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._send_json(404, error_body(404, f"no route for POST {path or '/'}"))
            return
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._send_json(400, error_body(400, "request body must be a JSON object"))
            return
        try:
            self._complete(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline().strip():
                pass  # trailers
            return b"".join(parts)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    # -- responses -------------------------------------------------------------------

    def _complete(self, body: dict[str, Any]) -> None:
        plan = self.server.owner._accept(body)
        reply = plan.reply
        if reply.hang:
            self._wait(None)
            self.close_connection = True
            return
        if reply.latency_s and self._wait(reply.latency_s):
            self.close_connection = True
            return
        if reply.status != 200:
            message = reply.text or f"simulated HTTP {reply.status}"
            self._send_json(reply.status, error_body(reply.status, message))
            return
        if body.get("stream") is True:
            options = body.get("stream_options")
            usage = isinstance(options, dict) and options.get("include_usage") is True
            self._stream(plan, usage)
        elif reply.disconnect_after_chunks is not None:
            # A whole JSON body has no chunks to cut between: drop the connection unanswered.
            self.close_connection = True
        elif reply.malformed:
            self._send_bytes(200, _MALFORMED_JSON, "application/json")
        else:
            self._send_json(200, plan.message())

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        self._send_bytes(status, encode(payload), "application/json")

    def _send_bytes(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, plan: Completion, include_usage: bool) -> None:
        reply = plan.reply
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._event(encode(plan.role_chunk(include_usage)))
        body = plan.body_chunks(include_usage)
        cut = reply.disconnect_after_chunks
        if reply.malformed:
            cut = max(1, len(body) // 2) if body else 0
        for index, chunk in enumerate(body):
            if cut is not None and index >= cut:
                break
            if reply.chunk_delay_s and self._wait(reply.chunk_delay_s):
                self.close_connection = True
                return
            self._event(encode(chunk))
        if reply.malformed:
            self._event(b"{not json")
            self._end_chunks()
            self.close_connection = True
            return
        if cut is not None:
            # Ending the connection without the zero-length chunk is a truncated body
            # to any HTTP/1.1 client, which is the failure this simulates.
            self.close_connection = True
            return
        if reply.chunk_delay_s and self._wait(reply.chunk_delay_s):
            self.close_connection = True
            return
        self._event(encode(plan.final_chunk(include_usage)))
        if include_usage:
            self._event(encode(plan.usage_chunk()))
        self._event(b"[DONE]")
        self._end_chunks()

    def _event(self, data: bytes) -> None:
        event = b"data: " + data + b"\n\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))

    def _end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")

    # -- waiting ---------------------------------------------------------------------

    def _wait(self, seconds: float | None) -> bool:
        """Sleep ``seconds`` (forever if None); True if cut short by stop or disconnect."""
        stopping = self.server.owner._stopping
        deadline = None if seconds is None else time.monotonic() + seconds
        while True:
            if stopping.is_set() or self._client_gone():
                return True
            step = _POLL_S
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                step = min(step, remaining)
            stopping.wait(step)

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            peeked: bytes = self.connection.recv(1, socket.MSG_PEEK)
            return peeked == b""
        except (OSError, ValueError):
            return True
