"""Model calls through litellm: streaming with typed failures, and retries with backoff.

litellm is imported on first use only: importing it takes seconds.
"""

from __future__ import annotations

import gc
import json
import os
import re
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypeVar

import anyio

from lossless import _native
from lossless.config import LLMConfig
from lossless.errors import ChatTemplateError, LLMError
from lossless.parts import (
    ProviderCompactionPart,
    ReasoningPart,
    ToolPart,
    identifier_problem,
    storable_name,
    storable_text,
)
from lossless.reasoning import ReasoningStream, call_signature, signature_part, stored_call_id

__all__ = [
    "CallbackError",
    "PartialReply",
    "StreamedReply",
    "complete_text",
    "ensure_litellm",
    "import_litellm",
    "settle_heap_after_first_call",
    "stream_completion",
]

_litellm: ModuleType | None = None
# Held while litellm is imported and configured: a thread-safe once, for every event loop.
_importing = threading.Lock()
# Whether the objects a first model call creates (the provider modules litellm imports
# then) have been moved out of the collector's sight.
_settled_after_call = False

TextCallback = Callable[[str], Awaitable[None]]
ReasoningCallback = Callable[[ReasoningPart], Awaitable[None]]
_T = TypeVar("_T")


def import_litellm() -> ModuleType:
    """litellm, configured to never fetch its model map from the network.

    The first call imports it, which takes seconds: async code awaits
    :func:`ensure_litellm` instead.
    """
    global _litellm
    if _litellm is not None:
        return _litellm
    with _importing:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            with _collector_paused():
                import litellm

                litellm.suppress_debug_info = True
            _freeze_heap()
            _litellm = litellm
        return _litellm


def _managing_collector() -> bool:
    return os.environ.get("LOSSLESS_GC_FREEZE", "1") != "0"


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No garbage collection while litellm is imported: the import's growing heap set
    off six full collections of 19-270 ms, each with the interpreter held, so the
    event loop stalled though the import ran in a worker thread. What the import
    made is frozen right after (:func:`_freeze_heap`)."""
    if not _managing_collector() or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _freeze_heap() -> None:
    """Moves the objects alive now out of the cyclic garbage collector's sight.

    Importing litellm leaves about 380,000 long-lived objects (its model map, its
    types), and every full collection walks them all: about 230 ms with the
    interpreter held, an event-loop stall. Frozen, they are never walked again; they
    stay alive as modules do. The young generations are collected first so that the
    import's own garbage is not frozen with them. ``LOSSLESS_GC_FREEZE=0`` turns
    this off, for a process that manages its collector itself (decision 173).
    """
    if not _managing_collector():
        return
    gc.collect(1)
    gc.freeze()


def settle_heap_after_first_call() -> None:
    """After the process's first model call: freezes the modules that call made
    litellm import (about 30,000 objects), once."""
    global _settled_after_call
    if _settled_after_call:
        return
    with _importing:
        if not _settled_after_call:
            _freeze_heap()
            _settled_after_call = True


async def ensure_litellm() -> ModuleType:
    """litellm, imported in a worker thread the first time so the event loop keeps running.

    Concurrent first callers wait in their threads for the one import.
    """
    if _litellm is not None:
        return _litellm
    return await anyio.to_thread.run_sync(import_litellm)


@dataclass
class StreamedReply:
    """What a model call produced."""

    text: str = ""
    tool_calls: list[ToolPart] = field(default_factory=list)
    #: The reasoning the reply came with, in the order it arrived (stored before
    #: the text and the calls).
    reasoning: list[ReasoningPart] = field(default_factory=list)
    #: The provider's compaction blocks the reply opened with (stored first).
    compaction: list[ProviderCompactionPart] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    finish_reason: str | None = None
    #: Input tokens the provider served from its prompt cache, when it says.
    cached_input_tokens: int | None = None
    #: Input tokens the provider wrote to its prompt cache, when it says.
    cache_write_input_tokens: int | None = None


class PartialReply(LLMError):
    """The stream broke after content arrived; ``reply`` holds what came."""

    def __init__(self, message: str, reply: StreamedReply) -> None:
        super().__init__(message)
        self.reply = reply


class CallbackError(Exception):
    """The caller's streaming callback raised; ``original`` is its exception."""

    def __init__(self, original: BaseException, reply: StreamedReply) -> None:
        super().__init__(str(original))
        self.original = original
        self.reply = reply


@dataclass
class _ToolDraft:
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    #: The call's thought signature (Gemini's), however litellm carried it.
    signature: str | None = None


_mcp_guard: dict[str, Any] | None = None


def _tools_kwargs() -> dict[str, Any]:
    """Extra arguments for a call that passes tools.

    Some litellm releases send every call with tools through their MCP gateway check,
    which imports the optional ``mcp`` package and fails without it, although plain
    function tools never need it. Where that check cannot load, skip it.
    """
    global _mcp_guard
    if _mcp_guard is None:
        _mcp_guard = {}
        try:
            import litellm.responses.mcp.litellm_proxy_mcp_handler  # noqa: F401
        except ModuleNotFoundError as err:
            if (err.name or "").split(".")[0] == "mcp":
                _mcp_guard = {"_skip_mcp_handler": True}
        except Exception:
            pass
    return dict(_mcp_guard)


def _call_kwargs(llm: LLMConfig) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"timeout": llm.timeout_s, "num_retries": 0, "max_retries": 0}
    if llm.api_base is not None:
        kwargs["api_base"] = llm.api_base
    if llm.api_key is not None:
        kwargs["api_key"] = llm.api_key
    if llm.temperature is not None:
        kwargs["temperature"] = llm.temperature
    return kwargs


def _conversation_kwargs(llm: LLMConfig) -> dict[str, Any]:
    """A conversation call's arguments: the common ones and the caller's ``params``
    (a provider's reasoning settings). Summaries are not the conversation and go
    without them."""
    return {**dict(llm.params), **_call_kwargs(llm)}


_RETRYABLE_NAMES = ("Timeout", "Connection", "ServiceUnavailable", "InternalServer", "RateLimit")


def _is_retryable(err: BaseException) -> bool:
    # Timeouts and dropped connections are transient whatever status code the client
    # attached to them (litellm's Timeout carries 408), so the class decides first.
    if any(word in cls.__name__ for cls in type(err).__mro__ for word in _RETRYABLE_NAMES):
        return True
    status = getattr(err, "status_code", None)
    if isinstance(status, int):
        return status in (408, 429) or status >= 500
    return False


# What a server says when the model's chat template refused a request. llama.cpp
# (400): "Unable to generate parser for this template ... Jinja Exception:
# Conversation roles must alternate ..." (Gemma 2), "... Tool call IDs should be
# alphanumeric strings with length 9!" (Mistral), "This model only supports single
# tool-calls at once!" (Llama 3.x); vLLM and others pass jinja2's
# TemplateError text on ("... raise_exception ...", "chat template").
_TEMPLATE_ERROR = re.compile(
    r"jinja|chat[ _-]?template|for this template|raise_exception|roles must alternate"
    r"|tool call ids? should|single tool[ -]calls?",
    re.IGNORECASE,
)


def _is_template_error(err: BaseException) -> bool:
    """Whether ``err`` is a server refusing a request its chat template cannot render:
    a client error (or a server error, as some servers report template exceptions)
    whose text names the template."""
    status = getattr(err, "status_code", None)
    if isinstance(status, int) and status not in (400, 422, 500):
        return False
    return _TEMPLATE_ERROR.search(str(err)) is not None


async def _with_retries(
    call: Callable[[], Awaitable[_T]], llm: LLMConfig, on_retry: Callable[[int, str], None]
) -> _T:
    delay = llm.retry_backoff_s
    for attempt in range(llm.num_retries + 1):
        try:
            return await call()
        except (PartialReply, CallbackError):
            raise
        except Exception as err:
            if _is_template_error(err):
                # The same request would be refused again: the caller must change it.
                raise ChatTemplateError(
                    f"the chat template refused the request: {type(err).__name__}: {err}"
                ) from err
            if attempt >= llm.num_retries or not _is_retryable(err):
                raise LLMError(f"model call failed: {type(err).__name__}: {err}") from err
            on_retry(attempt + 1, f"{type(err).__name__}: {err}")
            await anyio.sleep(delay)
            delay *= 2
    raise AssertionError("unreachable")


# Models litellm had no price for, with the size of its price map then: asking again
# costs about 0.2 ms a turn for nothing, until a model is registered.
_unpriced: set[tuple[str, int]] = set()


def _cost(model: str, reply: StreamedReply) -> float | None:
    if reply.input_tokens is None or reply.output_tokens is None:
        return None
    litellm = import_litellm()
    key = (model, len(getattr(litellm, "model_cost", ())))
    if key in _unpriced:
        return None
    try:
        prompt, completion = litellm.cost_per_token(
            model=model, prompt_tokens=reply.input_tokens, completion_tokens=reply.output_tokens
        )
        return float(prompt) + float(completion)
    except Exception:
        # Models missing from the cost map (local servers, new names) have no known price.
        _unpriced.add(key)
        return None


def new_call_id() -> str:
    """A tool-call id for a call the model sent without one. Random, so it is unique
    within the session: a fallback numbered per reply would repeat across turns, and
    providers refuse two calls with one id in a request."""
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass
class _Forwarder:
    """Hands the caller each reasoning part once it is complete, in order."""

    reply: StreamedReply
    callback: ReasoningCallback | None
    delivered: int = 0

    async def forward(self) -> None:
        if self.callback is None:
            return
        while self.delivered < len(self.reply.reasoning):
            part = self.reply.reasoning[self.delivered]
            self.delivered += 1
            try:
                await self.callback(part)
            except Exception as err:
                raise CallbackError(err, self.reply) from err


async def _consume(
    stream: Any,
    reply: StreamedReply,
    provider: str,
    on_text: TextCallback | None,
    on_progress: TextCallback | None,
    on_reasoning: ReasoningCallback | None,
) -> None:
    reasoning = ReasoningStream(provider, reply.reasoning)
    forwarder = _Forwarder(reply, on_reasoning)
    try:
        await _consume_chunks(stream, reply, reasoning, forwarder, on_text, on_progress)
    finally:
        # What reasoning arrived is kept, a stream that broke or was cancelled included.
        reasoning.finish()
        reply.compaction = reasoning.compaction
    # Reasoning that ends with the stream (readable text, thinking never signed).
    await forwarder.forward()


async def _consume_chunks(
    stream: Any,
    reply: StreamedReply,
    reasoning: ReasoningStream,
    forwarder: _Forwarder,
    on_text: TextCallback | None,
    on_progress: TextCallback | None,
) -> None:
    drafts: dict[int, _ToolDraft] = {}
    async for chunk in stream:
        usage = getattr(chunk, "usage", None)
        if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
            reply.input_tokens = usage.prompt_tokens
            reply.output_tokens = usage.completion_tokens
            _read_cache_usage(usage, reply)
        for choice in getattr(chunk, "choices", None) or ():
            delta = choice.delta
            reasoning.add(delta)
            await forwarder.forward()
            content = getattr(delta, "content", None)
            if content:
                content = storable_text(content)
                reply.text += content
                if on_progress is not None:
                    await on_progress(reply.text)
                if on_text is not None:
                    try:
                        await on_text(content)
                    except Exception as err:
                        raise CallbackError(err, reply) from err
            for call in getattr(delta, "tool_calls", None) or ():
                draft = drafts.setdefault(call.index or 0, _ToolDraft())
                draft.call_id = call.id or draft.call_id
                draft.signature = call_signature(call) or draft.signature
                if call.function is not None:
                    draft.name = call.function.name or draft.name
                    if call.function.arguments:
                        draft.arguments.append(call.function.arguments)
            if choice.finish_reason:
                reply.finish_reason = choice.finish_reason
    for index in sorted(drafts):
        call = _tool_call(drafts[index])
        reply.tool_calls.append(call)
        signed = signature_part(reasoning.provider, call.call_id, drafts[index].signature)
        if signed is not None:
            reply.reasoning.append(signed)


def _read_cache_usage(usage: Any, reply: StreamedReply) -> None:
    """What the provider says of its prompt cache: OpenAI's (and litellm's common)
    ``prompt_tokens_details.cached_tokens``, else Anthropic's cache reads; cache
    writes as Anthropic's ``cache_creation_input_tokens``."""
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    if cached is None:
        cached = getattr(usage, "cache_read_input_tokens", None)
    written = getattr(usage, "cache_creation_input_tokens", None)
    reply.cached_input_tokens = cached if isinstance(cached, int) else None
    reply.cache_write_input_tokens = written if isinstance(written, int) else None


def _tool_call(draft: _ToolDraft) -> ToolPart:
    """The call a model sent, as the store can hold it. The store refuses a name or an
    id with control characters or over 512 bytes, and text with lone surrogates; the
    model's reply must be stored all the same, so a name is cleaned, and an id the
    store cannot hold is replaced, as a missing one is: the caller answers the call
    by the id it is handed in the result. An id carrying a thought signature past
    the limit is stored without it (the signature is kept apart)."""
    call_id = stored_call_id(draft.call_id)
    if identifier_problem(call_id) is not None:
        call_id = new_call_id()
    return ToolPart(
        name=storable_name(draft.name) or "unknown",
        call_id=call_id,
        input=storable_text("".join(draft.arguments)) or "{}",
        status="pending",
    )


async def stream_completion(
    model: str,
    messages: Sequence[dict[str, Any]],
    *,
    llm: LLMConfig,
    tools: Sequence[dict[str, Any]] | None = None,
    max_tokens: int | None = None,
    on_text: TextCallback | None = None,
    on_progress: TextCallback | None = None,
    on_reasoning: ReasoningCallback | None = None,
    on_start: Callable[[StreamedReply], None] | None = None,
    on_retry: Callable[[int, str], None] = lambda attempt, reason: None,
) -> StreamedReply:
    """Stream one chat completion. Failures before any content (text, a call or
    reasoning) are retried with backoff; a stream that breaks after content raises
    :class:`PartialReply`.

    ``on_text`` gets each text delta, ``on_reasoning`` each reasoning part once it
    is complete (their exceptions end the stream as :class:`CallbackError`);
    ``on_progress`` gets the whole text so far after each delta, before ``on_text``.
    ``on_start`` gets each attempt's reply as the attempt begins: it fills as the
    stream arrives, so a caller cancelled mid-stream still holds what came.
    """
    litellm = await ensure_litellm()
    kwargs = _conversation_kwargs(llm)
    if tools:
        kwargs["tools"] = list(tools)
        kwargs.update(_tools_kwargs())
    if max_tokens is not None:
        kwargs["max_tokens"] = max_tokens
    provider = _native.model_provider(model)

    async def attempt() -> StreamedReply:
        reply = StreamedReply()
        if on_start is not None:
            on_start(reply)
        stream = await litellm.acompletion(
            model=model,
            messages=list(messages),
            stream=True,
            stream_options={"include_usage": True},
            **kwargs,
        )
        try:
            await _consume(stream, reply, provider, on_text, on_progress, on_reasoning)
        except CallbackError:
            raise
        except Exception as err:
            # Reasoning is content too: the provider charged for it, and a signed
            # block that arrived whole is kept rather than asked for again.
            if reply.text or reply.tool_calls or reply.reasoning:
                raise PartialReply(
                    f"stream broke after content arrived: {type(err).__name__}: {err}", reply
                ) from err
            raise
        reply.cost = _cost(model, reply)
        settle_heap_after_first_call()
        return reply

    return await _with_retries(attempt, llm, on_retry)


async def complete_text(
    model: str,
    messages: Sequence[dict[str, Any]],
    *,
    llm: LLMConfig,
    max_tokens: int | None = None,
    response_format: dict[str, Any] | None = None,
) -> str:
    """One non-streaming completion's text, with the same retries; with
    ``response_format``, the provider is asked for that JSON schema."""
    litellm = await ensure_litellm()
    kwargs = _call_kwargs(llm)
    if max_tokens is not None:
        kwargs["max_tokens"] = max_tokens
    if response_format is not None:
        kwargs["response_format"] = response_format

    async def attempt() -> str:
        response = await litellm.acompletion(model=model, messages=list(messages), **kwargs)
        settle_heap_after_first_call()
        content = response.choices[0].message.content
        return content if isinstance(content, str) else json.dumps(content)

    return await _with_retries(attempt, llm, lambda attempt, reason: None)
