"""The HTTP side of the local server: routing, bodies, streams, delays, cut connections."""

from __future__ import annotations

import contextlib
import json
import select
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import urlsplit

from ._formats import Event, Refusal, Stream, WireFormat
from ._wire import Completion, encode, error_body

__all__ = ["HTTPServer", "Owner"]

# How often waiting handlers look for a stop request or a departed client; it bounds
# how long stop() can take.
POLL_S = 0.05


class Owner(Protocol):
    """What the handler needs of the server that owns it."""

    model: str
    _stopping: threading.Event

    def _route(self, path: str) -> WireFormat | None:
        """The format answering POSTs to ``path``, if any."""
        ...

    def _misrouted(self, path: str) -> str | None:
        """A hint for a client that called a path close to a route; None if none."""
        ...

    def _accept(self, wire: WireFormat, path: str, body: dict[str, Any]) -> Completion | Refusal:
        """Record a request and plan its reply, or refuse it."""
        ...


class HTTPServer(ThreadingHTTPServer):
    """Tracks open connections so stop() can cut idle keep-alive clients loose."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], owner: Owner) -> None:
        """Bind ``address`` and serve requests on behalf of ``owner``."""
        self.owner = owner
        self._connections: set[socket.socket] = set()
        self._idle = threading.Condition()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Remember the connection, then serve it."""
        with self._idle:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        """Forget the connection, then close it."""
        with self._idle:
            self._connections.discard(request)
            self._idle.notify_all()
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Shut every open connection, so handlers blocked on them return."""
        with self._idle:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def wait_idle(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for every connection to close."""
        with self._idle:
            self._idle.wait_for(lambda: not self._connections, timeout)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Report handler errors, except clients vanishing, which is routine here."""
        # Timeouts and aborted streams cut connections mid-response all the time.
        if isinstance(sys.exc_info()[1], OSError) or self.owner._stopping.is_set():
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Streamed chunks are small; Nagle's algorithm would hold each for up to 40 ms.
    disable_nagle_algorithm = True
    server: HTTPServer

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
        wire = self.server.owner._route(path)
        if wire is None:
            hint = self.server.owner._misrouted(path) or ""
            self._send_json(404, error_body(404, f"no route for POST {path or '/'}{hint}"))
            return
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._send_json(400, wire.error(400, "request body must be a JSON object"))
            return
        try:
            self._complete(wire, path, body)
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

    def _complete(self, wire: WireFormat, path: str, body: dict[str, Any]) -> None:
        plan = self.server.owner._accept(wire, path, body)
        if isinstance(plan, Refusal):
            self._send_json(plan.status, plan.body)
            return
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
            self._send_json(reply.status, wire.error(reply.status, message))
            return
        stream = wire.stream(plan, body)
        if stream is not None:
            self._stream(plan, stream)
        elif reply.disconnect_after_chunks is not None:
            # A whole JSON body has no chunks to cut between: drop the connection unanswered.
            self.close_connection = True
        elif reply.malformed:
            self._send_bytes(200, wire.malformed_body, "application/json")
        else:
            self._send_json(200, wire.render(plan, body))

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        self._send_bytes(status, encode(payload), "application/json")

    def _send_bytes(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, plan: Completion, stream: Stream) -> None:
        reply = plan.reply
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in stream.head:
            self._event(event)
        cut = reply.disconnect_after_chunks
        if reply.malformed:
            cut = max(1, len(stream.body) // 2) if stream.body else 0
        for index, event in enumerate(stream.body):
            if cut is not None and index >= cut:
                break
            if reply.chunk_delay_s and self._wait(reply.chunk_delay_s):
                self.close_connection = True
                return
            self._event(event)
        if reply.malformed:
            self._event(stream.broken)
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
        for event in stream.tail:
            self._event(event)
        self._end_chunks()

    def _event(self, event: Event) -> None:
        frame = event.frame()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))

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
            step = POLL_S
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
