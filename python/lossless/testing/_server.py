"""A local LLM server for tests: Chat Completions, Anthropic Messages and Responses."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from ._anthropic import AnthropicFormat
from ._formats import ChatFormat, Refusal, WireFormat
from ._http import POLL_S, HTTPServer
from ._prefix import PrefixReport, compare
from ._reply import EchoResponder, Reply, Responder
from ._responses import ResponsesFormat
from ._signing import Signer
from ._wire import Completion, estimate_tokens

__all__ = ["LocalLLMServer", "RecordedRequest"]

_STOP_GRACE_S = 1.0


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received.

    Attributes:
        format: The endpoint's wire format: ``"chat"`` (Chat Completions),
            ``"anthropic"`` (Messages) or ``"responses"``.
        path: The URL path called.
        body: The decoded JSON body, as received.
        refusal: The error message when the server refused the request as the
            provider would (no reply was used for it); None when it was answered.
    """

    format: str
    path: str
    body: dict[str, Any]
    refusal: str | None = None


class LocalLLMServer:
    """A local LLM server on a free port, speaking three wire formats.

    ``POST /v1/chat/completions``
        OpenAI Chat Completions. litellm: ``model="openai/<any name>"``,
        ``api_base=server.base_url``. Accepts anything.
    ``POST /v1/messages``
        Anthropic Messages. litellm: ``model="anthropic/<any name>"``,
        ``api_base=server.anthropic_base_url`` (litellm appends ``/v1/messages`` to
        an ``api_base`` that does not end with it); the ``anthropic`` SDK:
        ``Anthropic(base_url=server.anthropic_base_url)``. Refuses, with Anthropic's
        error body, what the provider refuses (see :class:`AnthropicFormat`).
    ``POST /v1/responses``
        OpenAI Responses. litellm: ``litellm.aresponses(model="openai/<any name>",
        api_base=server.base_url)``; the ``openai`` SDK:
        ``OpenAI(base_url=server.base_url)``. Refuses what OpenAI refuses there
        (see :class:`ResponsesFormat`).

    One :class:`Reply` type serves all three: the server renders it in the format of
    the endpoint called, and signs the reasoning it returns with a key of its own so
    a client that sends it back changed is refused. Replies queued with
    :meth:`enqueue` are used first, in order; after that the ``responder`` (default
    :class:`EchoResponder`) builds each reply from the request, which it sees as a
    Chat Completions body whatever the endpoint (system prompt first, tool results as
    ``tool`` messages); :attr:`recorded` keeps each body as received. Use the server
    as a context manager (sync or async) or call :meth:`start` and :meth:`stop`.
    Any ``api_key`` will do.
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
        a prompt cache would (``prompt_tokens_details.cached_tokens``, Anthropic's
        ``cache_read_input_tokens``, Responses' ``input_tokens_details``), how many of
        its prompt tokens repeat the opening messages of the previous request to the
        same endpoint.
        """
        self.responder: Responder = responder if responder is not None else EchoResponder()
        self.host = host
        self.model = model
        self._lock = threading.Condition()
        self._queue: deque[Reply] = deque()
        self._recorded: list[RecordedRequest] = []
        self._prefixes: list[PrefixReport] = []
        self._signer = Signer()
        self._formats: list[WireFormat] = [
            ChatFormat(),
            AnthropicFormat(self._signer),
            ResponsesFormat(self._signer),
        ]
        self.report_cached_tokens = report_cached_tokens
        self._completions = 0
        self._tool_calls = 0
        self._stopping = threading.Event()
        self._httpd: HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> Self:
        """Bind a free port and serve from a daemon thread. Returns ``self``."""
        if self._httpd is not None:
            raise RuntimeError("server already started")
        self._stopping.clear()
        httpd = HTTPServer((self.host, 0), self)
        thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": POLL_S},
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
        """``http://HOST:PORT/v1``: litellm's ``api_base`` for ``openai/`` models and
        ``responses``, the ``openai`` SDK's ``base_url``."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """``http://HOST:PORT``: litellm's ``api_base`` for ``anthropic/`` models and
        the ``anthropic`` SDK's ``base_url``, both of which add ``/v1/messages``."""
        return f"http://{self.host}:{self.port}"

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
        """A snapshot of every request body received, in arrival order, any endpoint."""
        with self._lock:
            return [request.body for request in self._recorded]

    @property
    def recorded(self) -> list[RecordedRequest]:
        """Every request received, in arrival order, with its format and path."""
        with self._lock:
            return list(self._recorded)

    def requests_to(self, format: str) -> list[dict[str, Any]]:
        """The bodies received by one endpoint: ``"chat"``, ``"anthropic"``, ``"responses"``."""
        if format not in {wire.name for wire in self._formats}:
            raise ValueError(f"unknown format {format!r}")
        with self._lock:
            return [request.body for request in self._recorded if request.format == format]

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
            if not self._lock.wait_for(lambda: len(self._recorded) >= count, timeout):
                got = len(self._recorded)
                raise TimeoutError(f"expected {count} requests, got {got} in {timeout}s")
            return [request.body for request in self._recorded]

    def reset(self) -> None:
        """Forget queued replies, recorded requests and the id counters."""
        with self._lock:
            self._queue.clear()
            self._recorded.clear()
            self._prefixes.clear()
            self._completions = 0
            self._tool_calls = 0

    # -- serving (called from the handler threads) ----------------------------------

    def _route(self, path: str) -> WireFormat | None:
        """The format answering POSTs to ``path``, if any."""
        return next((wire for wire in self._formats if path in wire.paths), None)

    def _misrouted(self, path: str) -> str | None:
        """A hint for a client that called a path close to a route; None if none."""
        if path.endswith("/v1/v1/messages"):
            return " (an anthropic client takes anthropic_base_url, which has no /v1)"
        return None

    def _accept(self, wire: WireFormat, path: str, body: dict[str, Any]) -> Completion | Refusal:
        """Record a request, then refuse it or fix the reply it gets (ids, tokens)."""
        view = wire.conversation(body)
        refusal = wire.check(body)
        message = _refusal_message(refusal)
        with self._lock:
            same = [r.body for r in self._recorded if r.format == wire.name]
            prefix = compare(wire.conversation(same[-1]) if same else None, view)
            self._prefixes.append(prefix)
            self._recorded.append(RecordedRequest(wire.name, path, body, message))
            self._lock.notify_all()
            if refusal is not None:
                return refusal
            scripted = self._queue.popleft() if self._queue else None
        try:
            reply = scripted if scripted is not None else self.responder(view)
        except Exception as exc:  # the failure should reach the test as an HTTP error
            reply = Reply(text=f"responder failed: {exc!r}", status=500)
        unnamed = sum(1 for call in reply.tool_calls if call.id is None)
        with self._lock:
            self._completions += 1
            completion_id = f"{wire.response_prefix}{self._completions}"
            first = self._tool_calls + 1
            self._tool_calls += unnamed
        tool_ids = [f"{wire.tool_prefix}{n}" for n in range(first, first + unnamed)]
        cached = estimate_tokens(prefix.shared_chars) if self.report_cached_tokens else None
        chars = wire.prompt_chars(body)
        plan = Completion.plan(
            reply, body, completion_id, tool_ids, cached, prompt_chars=chars, signer=self._signer
        )
        wire.planned(plan)
        return plan


def _refusal_message(refusal: Refusal | None) -> str | None:
    """The message of a refusal's error body (both formats nest it under ``error``)."""
    if refusal is None:
        return None
    error = refusal.body.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else str(refusal.body)
