"""One session's spans and metrics: hooks around the work a span must wrap, and
handlers of the session's events for the figures they already carry."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from lossless import _native
from lossless.config import LLMConfig, TelemetryConfig
from lossless.errors import LLMError
from lossless.events import Event, EventBus, EventName
from lossless.telemetry import _names as n
from lossless.telemetry._content import reply_messages, request_messages
from lossless.telemetry._instruments import instruments_for, tracer_for

if TYPE_CHECKING:
    from lossless.llm import StreamedReply
    from lossless.results import AnyContext

__all__ = ["RequestSpan", "SessionTelemetry"]

log = logging.getLogger("lossless.telemetry")

_T = TypeVar("_T")
Attributes = dict[str, AttributeValue]

# The compaction span of the task running a compaction: its events (published inside
# it, on the same task) find it here, and an overlapping compaction on another task
# finds its own.
_compaction: ContextVar[Span | None] = ContextVar("lossless_compaction_span", default=None)

# litellm's provider names where the conventions name the provider otherwise.
_PROVIDERS = {
    "bedrock": "aws.bedrock",
    "bedrock_converse": "aws.bedrock",
    "vertex_ai": "gcp.vertex_ai",
    "vertex_ai_beta": "gcp.vertex_ai",
    "gemini": "gcp.gemini",
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "cohere_chat": "cohere",
    "mistral": "mistral_ai",
    "watsonx": "ibm.watsonx.ai",
    "xai": "x_ai",
    "moonshot": "moonshot_ai",
    "text-completion-openai": "openai",
}


class SessionTelemetry:
    """Spans and metrics of one session's work; made by the session when
    ``Config.telemetry`` is enabled, and None otherwise (each hook then costs the
    caller one check)."""

    def __init__(
        self,
        config: TelemetryConfig,
        *,
        model: str,
        llm: LLMConfig,
        events: EventBus,
        session_id: Callable[[], str],
    ) -> None:
        self._tracer = tracer_for(config.tracer_provider)
        self._metrics = instruments_for(config.meter_provider)
        self._capture = config.capture_content
        self._session_id = session_id
        litellm_provider = _native.model_provider(model)
        prefix = f"{litellm_provider}/"
        request_model = model[len(prefix) :] if model.startswith(prefix) else model
        self._chat_name = f"{n.CHAT} {request_model}"
        #: What every span and metric of the session says of its model.
        self._model: Attributes = {
            n.PROVIDER: _PROVIDERS.get(litellm_provider, litellm_provider),
            n.REQUEST_MODEL: request_model,
        }
        self._call: Attributes = {n.OPERATION: n.CHAT, **self._model, n.REQUEST_STREAM: True}
        if llm.temperature is not None:
            self._call[n.REQUEST_TEMPERATURE] = llm.temperature
        self._call.update(_server(llm.api_base))
        self._chat_metric: Attributes = {n.OPERATION: n.CHAT, **self._model}
        self._token_metric = {
            kind: {**self._chat_metric, n.TOKEN_TYPE: kind} for kind in ("input", "output")
        }
        self._path_metric = {
            path: {n.REQUEST_PATH: path, **self._model} for path in ("turn", "context", "sync")
        }
        #: The span of the last request (a model turn, ``context()`` or ``sync``): a
        #: compaction invalidates its cached prefix, reported usage is its cost.
        self._last_request: SpanContext | None = None
        #: Where the next background compaction was started, and why.
        self._trigger: tuple[otel_context.Context, str] | None = None
        events.subscribe(self._on_trigger, EventName.COMPACTION_TRIGGERED)
        events.subscribe(self._on_trigger, EventName.COMPACTION_REQUESTED)
        for name in (
            EventName.COMPACTION_COMPLETED,
            EventName.COMPACTION_STALLED,
            EventName.COMPACTION_FAILED,
        ):
            events.subscribe(self._on_compaction_end, name)
        events.subscribe(self._on_prune, EventName.PRUNE_COMPLETED)
        events.subscribe(self._on_ledger, EventName.LEDGER_UPDATED)
        events.subscribe(self._on_retry, EventName.LLM_RETRY)
        events.subscribe(self._on_usage, EventName.REQUEST_USAGE)

    # -- hooks: spans around work ------------------------------------------------------

    @contextmanager
    def model_turn(self, max_tokens: int) -> Iterator[RequestSpan]:
        """A CLIENT span ``chat {model}`` around one model call lossless makes, its
        request assembled inside it; the call's duration is recorded as a metric."""
        attributes = {
            **self._call,
            n.CONVERSATION: self._session_id(),
            n.REQUEST_MAX_TOKENS: max_tokens,
        }
        span = self._tracer.start_span(self._chat_name, kind=SpanKind.CLIENT, attributes=attributes)
        self._last_request = span.get_span_context()
        started = time.perf_counter()
        metric = self._chat_metric
        try:
            with _running(span):
                yield RequestSpan(self, span, "turn")
        except BaseException as err:
            metric = {**metric, n.ERROR_TYPE: error_type(err)}
            raise
        finally:
            self._metrics.operation_duration.record(time.perf_counter() - started, metric)

    @contextmanager
    def request(self, path: str) -> Iterator[RequestSpan]:
        """An INTERNAL span around a request handed to an own loop: ``context`` for
        ``Session.context()``, ``sync`` for ``Session.sync()``."""
        name = n.SYNC_SPAN if path == "sync" else n.CONTEXT_SPAN
        attributes = {**self._model, n.CONVERSATION: self._session_id()}
        span = self._tracer.start_span(name, kind=SpanKind.INTERNAL, attributes=attributes)
        self._last_request = span.get_span_context()
        with _running(span):
            yield RequestSpan(self, span, path)

    @contextmanager
    def compaction(self) -> Iterator[None]:
        """A span around one compaction. A background compaction is a child of the
        span that was current where it was started (a model turn, or the caller's
        span around ``record``), whether or not that span has ended; an inline one
        (at the hard limit, ``compact()``) of the current span. Either links to the
        last request, whose cached prefix the compaction invalidates."""
        trigger, self._trigger = self._trigger, None
        parent, cause = trigger if trigger is not None else (None, "inline")
        last = self._last_request
        links = [Link(last, {n.LINK_ROLE: "last_request"})] if last is not None else None
        span = self._tracer.start_span(
            n.COMPACTION_SPAN,
            context=parent,
            kind=SpanKind.INTERNAL,
            links=links,
            attributes={n.CONVERSATION: self._session_id(), n.COMPACTION_TRIGGER: cause},
        )
        reset = _compaction.set(span)
        try:
            with _running(span):
                yield
        finally:
            _compaction.reset(reset)

    def recall(
        self,
        operation: str,
        run: Callable[[], _T],
        *,
        query: str | None = None,
        count: Callable[[_T], int] | None = None,
    ) -> _T:
        """``run()`` inside a span of a recall operation. ``grep`` follows the
        conventions' memory search (``search_memory``); the others are lossless's."""
        grep = operation == "grep"
        attributes: Attributes = {n.RECALL_OPERATION: operation, n.CONVERSATION: self._session_id()}
        if grep:
            attributes[n.OPERATION] = n.SEARCH_MEMORY
        if query is not None and self._capture:
            attributes[n.MEMORY_QUERY if grep else n.RECALL_QUERY] = query
        name = n.SEARCH_MEMORY if grep else f"{n.RECALL_SPAN}.{operation}"
        span = self._tracer.start_span(name, kind=SpanKind.INTERNAL, attributes=attributes)
        with _running(span):
            result = run()
            if count is not None:
                with _never_raises("a recall's figures"):
                    found = count(result)
                    span.set_attribute(n.RECALL_RESULTS, found)
                    if grep:
                        span.set_attribute(n.MEMORY_RECORDS, found)
        return result

    @contextmanager
    def tool_call(self, name: str, call_id: str, arguments: str) -> Iterator[None]:
        """An ``execute_tool`` span around the session's answer to a model's tool call."""
        attributes: Attributes = {
            n.OPERATION: n.EXECUTE_TOOL,
            n.TOOL_NAME: name,
            n.TOOL_CALL_ID: call_id,
            n.TOOL_TYPE: "function",
            n.CONVERSATION: self._session_id(),
        }
        if self._capture:
            attributes[n.TOOL_ARGUMENTS] = arguments
        span = self._tracer.start_span(
            f"{n.EXECUTE_TOOL} {name}", kind=SpanKind.INTERNAL, attributes=attributes
        )
        with _running(span):
            yield

    # -- what a request span records ---------------------------------------------------

    def _record_request(self, span: Span, context: AnyContext, path: str) -> None:
        """A request's figures on ``span``, and in the request metrics. Reads only
        the request's totals (no walk over its messages, unless content is captured)."""
        tokens, budget, stable = context.tokens, context.budget, context.stable_prefix_tokens
        span.set_attributes(
            {
                n.REQUEST_TOKENS: tokens,
                n.REQUEST_BUDGET: budget,
                n.REQUEST_STABLE_PREFIX: stable,
                n.REQUEST_ITEMS: len(context.item_ids),
                n.REQUEST_OMITTED: context.omitted,
            }
        )
        if context.injection is not None:
            span.set_attribute(n.ARENA_TOKENS, context.injection.tokens)
        if self._capture:
            span.set_attribute(n.INPUT_MESSAGES, request_messages(context))
        metric = self._path_metric[path]
        self._metrics.request_tokens.record(tokens, metric)
        if budget > 0:
            self._metrics.budget_utilization.record(tokens / budget, metric)
        if tokens > 0:
            self._metrics.prefix_reuse.record(stable / tokens, metric)

    def _record_reply(self, span: Span, reply: StreamedReply) -> None:
        """A model's reply: its usage on the span and in the token metric."""
        usage = {
            n.INPUT_TOKENS: reply.input_tokens,
            n.OUTPUT_TOKENS: reply.output_tokens,
            n.CACHE_READ_TOKENS: reply.cached_input_tokens,
            n.CACHE_WRITE_TOKENS: reply.cache_write_input_tokens,
        }
        span.set_attributes({key: value for key, value in usage.items() if value is not None})
        if reply.finish_reason is not None:
            span.set_attribute(n.FINISH_REASONS, [reply.finish_reason])
        if self._capture:
            text = reply_messages(
                reply.text, reply.tool_calls, reply.reasoning, reply.finish_reason
            )
            span.set_attribute(n.OUTPUT_MESSAGES, text)
        if reply.input_tokens is not None:
            self._metrics.token_usage.record(reply.input_tokens, self._token_metric["input"])
        if reply.output_tokens is not None:
            self._metrics.token_usage.record(reply.output_tokens, self._token_metric["output"])

    # -- event handlers: the figures events carry --------------------------------------

    def _on_trigger(self, event: Event) -> None:
        """A background compaction is about to start: it is delivered where the work
        that started it runs, so the current context is its parent."""
        cause = "soft_limit" if event.name is EventName.COMPACTION_TRIGGERED else "requested"
        self._trigger = (otel_context.get_current(), cause)

    def _on_compaction_end(self, event: Event) -> None:
        payload = event.payload
        status = str(payload.get("status"))
        level = payload.get("level")
        rounds = int(payload.get("rounds") or 0)
        invalidated = payload.get("invalidated_tokens")
        span = _compaction.get()
        if span is not None:
            figures: dict[str, Any] = {
                n.COMPACTION_STATUS: status,
                n.COMPACTION_ROUNDS: rounds,
                n.COMPACTION_LEVEL: level,
                n.COMPACTION_LEVELS: list(payload.get("levels") or ()) or None,
                n.COMPACTION_BEFORE: payload.get("tokens_before"),
                n.COMPACTION_AFTER: payload.get("tokens_after"),
                n.COMPACTION_INVALIDATED: invalidated,
                n.COMPACTION_SUMMARIES: len(payload.get("summary_ids") or ()),
                n.COMPACTION_MESSAGES: payload.get("messages_covered"),
                n.COMPACTION_PRUNED_PARTS: payload.get("pruned_parts"),
                n.COMPACTION_PRUNED_TOKENS: payload.get("pruned_tokens"),
            }
            span.set_attributes({key: value for key, value in figures.items() if value is not None})
            if event.name is EventName.COMPACTION_FAILED:
                error = str(payload.get("error") or "")
                span.set_attribute(n.ERROR_TYPE, error.split(":")[0] or "_OTHER")
                span.set_status(Status(StatusCode.ERROR, str(payload.get("reason") or "")))
        metric: Attributes = {n.COMPACTION_STATUS: status, **self._model}
        if level is not None:
            metric[n.COMPACTION_LEVEL] = level
        if rounds:
            self._metrics.compaction_rounds.add(rounds, metric)
        duration = payload.get("duration_s")
        if isinstance(duration, int | float):
            self._metrics.compaction_duration.record(duration, metric)
        if isinstance(invalidated, int):
            self._metrics.invalidated_tokens.record(invalidated, self._model)

    def _on_prune(self, event: Event) -> None:
        span = _compaction.get()
        if span is not None:
            figures = _ints(event.payload, ("pruned_parts", "tokens_saved"))
            span.add_event("lossless.compaction.prune", figures)

    def _on_ledger(self, event: Event) -> None:
        span = _compaction.get()
        if span is not None:
            figures = _ints(event.payload, ("added", "changed", "stable_tokens", "volatile_tokens"))
            span.add_event("lossless.ledger.updated", figures)

    def _on_retry(self, event: Event) -> None:
        span = trace.get_current_span()
        if span.is_recording():
            span.add_event("lossless.llm.retry", {"attempt": int(event.payload.get("attempt", 0))})

    def _on_usage(self, event: Event) -> None:
        """What a provider said the last request of an own loop cost: a short span
        of its own (the request's span ended when the request was handed over),
        linked to that request's span."""
        payload = event.payload
        attributes: Attributes = {**self._model, n.CONVERSATION: event.session_id}
        for key, name in (
            (n.INPUT_TOKENS, "input_tokens"),
            (n.OUTPUT_TOKENS, "output_tokens"),
            (n.CACHE_READ_TOKENS, "cached_input_tokens"),
            (n.CACHE_WRITE_TOKENS, "cache_write_input_tokens"),
            (n.REQUEST_TOKENS, "request_tokens"),
        ):
            value = payload.get(name)
            if isinstance(value, int):
                attributes[key] = value
        last = self._last_request
        links = [Link(last, {n.LINK_ROLE: "request"})] if last is not None else None
        span = self._tracer.start_span(
            n.USAGE_SPAN, kind=SpanKind.INTERNAL, links=links, attributes=attributes
        )
        span.end()


class RequestSpan:
    """The span of one request, as the work inside it hands it its figures."""

    __slots__ = ("_owner", "_path", "span")

    def __init__(self, owner: SessionTelemetry, span: Span, path: str) -> None:
        self._owner = owner
        self._path = path
        self.span = span

    def request(self, context: AnyContext) -> None:
        """The request as assembled (its tokens, budget, stable prefix)."""
        with _never_raises("a request's figures"):
            self._owner._record_request(self.span, context, self._path)

    def reply(self, reply: StreamedReply) -> None:
        """The model's reply (its usage, as the provider reported it)."""
        with _never_raises("a reply's figures"):
            self._owner._record_reply(self.span, reply)

    def synced(self, messages: int, stored: int, session_id: str, forked_from: str | None) -> None:
        """What a ``sync`` did with the history it was handed."""
        with _never_raises("a sync's figures"):
            self.span.set_attributes(
                {n.SYNC_MESSAGES: messages, n.SYNC_STORED: stored, n.CONVERSATION: session_id}
            )
            if forked_from is not None:
                self.span.set_attribute(n.SYNC_FORKED_FROM, forked_from)


@contextmanager
def _never_raises(what: str) -> Iterator[None]:
    """Recording a figure never fails the work it describes: a failure is logged."""
    try:
        yield
    except Exception:
        log.warning("telemetry could not record %s", what, exc_info=True)


@contextmanager
def _running(span: Span) -> Iterator[None]:
    """``span`` current while the block runs, ended after it; an exception marks it
    as an error (status and ``error.type``) and goes on."""
    token = otel_context.attach(trace.set_span_in_context(span))
    try:
        yield
    except BaseException as err:
        span.set_attribute(n.ERROR_TYPE, error_type(err))
        span.set_status(Status(StatusCode.ERROR, str(err) if isinstance(err, Exception) else None))
        raise
    finally:
        otel_context.detach(token)
        span.end()


def error_type(err: BaseException) -> str:
    """A low-cardinality name of what ended an operation: the client library's
    exception behind an :class:`LLMError` (``litellm.exceptions.RateLimitError``),
    ``cancelled`` for a cancellation, else the exception's class."""
    if not isinstance(err, Exception) and "Cancel" in type(err).__name__:
        return "cancelled"
    while isinstance(err, LLMError) and err.__cause__ is not None:
        err = err.__cause__
    cls = type(err)
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


def _server(api_base: str | None) -> Attributes:
    """``server.address`` and ``server.port`` of an explicit endpoint."""
    if not api_base:
        return {}
    parts = urlsplit(api_base)
    if not parts.hostname:
        return {}
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return {n.SERVER_ADDRESS: parts.hostname, n.SERVER_PORT: port}


def _ints(payload: Mapping[str, Any], keys: tuple[str, ...]) -> Attributes:
    return {key: payload[key] for key in keys if isinstance(payload.get(key), int)}
