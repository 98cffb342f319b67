"""The model turn: a request sent through litellm, its reply streamed and stored,
and the calls an own loop makes around its own model call.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, overload

import anyio
import anyio.lowlevel

from lossless import _native
from lossless._writes import write_now_or_in_thread
from lossless.errors import ChatTemplateError, InvalidInputError, LLMError, SessionBusyError
from lossless.events import Event, EventName
from lossless.formats import MessageFormat, checked_format
from lossless.llm import CallbackError, PartialReply, StreamedReply, stream_completion
from lossless.parts import Part, PartsInput, TextPart, normalize_parts, parts_to_wire
from lossless.profiles import stricter_profile
from lossless.results import (
    AnthropicContext,
    AnyContext,
    BuiltContext,
    PartCallback,
    ResponsesContext,
    TurnResult,
)
from lossless.session._base import log
from lossless.session._record import Recorder
from lossless.streams import StreamCheckpoint, owner_token
from lossless.usage import ReportedUsage, read_usage

if TYPE_CHECKING:
    from lossless.telemetry import RequestSpan


class ModelTurns(Recorder):
    """How a session calls the model, or hands an own loop its request."""

    async def send(
        self,
        message: PartsInput,
        *,
        on_part: PartCallback | None = None,
        tools: Sequence[dict[str, Any]] | Literal["recall"] | None = None,
    ) -> TurnResult:
        """Store the user turn, call the model on the assembled context, store its reply.

        The reply's reasoning, when the provider sends any (litellm's
        ``thinking_blocks`` and ``reasoning_content``), is stored before its text as
        :class:`ReasoningPart` s, returned as ``TurnResult.reasoning``, and goes back
        to that provider within the tool loop; reasoning that arrived before a stream
        broke or the call was cancelled is stored with the incomplete reply.
        ``on_part`` receives each reasoning part as soon as it is complete (a
        signed block when its signature arrives, readable text alone when the stream
        ends), each streamed text delta as a :class:`TextPart` and each tool call as
        a :class:`ToolPart` (once the reply is complete and stored); if it raises
        while the reply streams, the partial reply is stored flagged incomplete, and
        in either case the exception propagates. ``tools="recall"`` lets the
        model search this session's history; the session answers those calls itself.
        One ``send`` runs at a time per session: a second concurrent call raises
        :class:`SessionBusyError`.
        """
        self._check_open()
        if self._sending:
            raise SessionBusyError(f"session {self.id} is already sending; await the first send")
        parts = normalize_parts(message)
        if all(isinstance(part, TextPart) and not part.text.strip() for part in parts):
            raise InvalidInputError("message: must not be empty")
        self._sending = True
        try:
            recorded = await self.record("user", parts)
            if tools == "recall":
                from lossless.recall import answer_recall_turn

                result = await answer_recall_turn(self, self._model_turn, on_part)
            else:
                result = await self._model_turn(on_part, tools)
        finally:
            self._sending = False
        if recorded.compaction_triggered and not result.compaction_triggered:
            # The user turn crossed the soft threshold: this turn did trigger compaction.
            result = replace(result, compaction_triggered=True)
        if recorded.redacted:
            result = replace(result, redacted=recorded.redacted)
        return result

    async def respond(
        self,
        *,
        on_part: PartCallback | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> TurnResult:
        """Call the model on the current view without a new user turn: the next step of
        a tool loop, after :meth:`update_tool` stored the results of the last calls."""
        self._check_open()
        if self._sending:
            raise SessionBusyError(f"session {self.id} is already sending; await the first send")
        self._sending = True
        try:
            return await self._model_turn(on_part, tools)
        finally:
            self._sending = False

    @overload
    async def context(
        self,
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        format: Literal["openai"] = "openai",
    ) -> BuiltContext: ...
    @overload
    async def context(
        self, *, tools: Sequence[dict[str, Any]] | None = None, format: Literal["anthropic"]
    ) -> AnthropicContext: ...
    @overload
    async def context(
        self, *, tools: Sequence[dict[str, Any]] | None = None, format: Literal["responses"]
    ) -> ResponsesContext: ...
    async def context(
        self, *, tools: Sequence[dict[str, Any]] | None = None, format: MessageFormat = "openai"
    ) -> AnyContext:
        """The request to send next when your own loop calls the model: exactly what
        :meth:`respond` would send, in ``format``: ``"openai"`` (Chat Completions
        messages), ``"anthropic"`` (an :class:`AnthropicContext` to unpack into
        ``anthropic``'s ``messages.create``) or ``"responses"`` (a
        :class:`ResponsesContext` to unpack into ``openai``'s ``responses.create``);
        ``tools``, given as Chat Completions tool definitions, come back in the
        format's schema.

        Before assembling it, this does what a model turn does: waits for compaction
        when the view is past the hard limit, runs external recall, plans the arena,
        and records the request, so ``stable_prefix_tokens`` says how much of it
        repeats the previous one and the next compaction can say what it cost the
        provider's cache. Send ``messages`` (with ``tools``, whose tokens it counts)
        to your model, store the reply with :meth:`record` or
        :meth:`record_messages`, the tool results with :meth:`update_tool`, and hand
        the reply's usage to :meth:`report_usage` so the budget calibrates itself.

        Every request holds the newest user message, every pinned fact and the
        system prompt, and fits the budget; when compaction lags, older history is
        left out in steps, with a line that says so. :meth:`build_context` gives the
        same request without waiting or recording anything.
        """
        self._check_open()
        telemetry = self._telemetry
        if telemetry is None:
            return await self._context(tools, format)
        with telemetry.request("context") as span:
            context = await self._context(tools, format)
            span.request(context)
        return context

    async def _context(
        self, tools: Sequence[dict[str, Any]] | None, format: MessageFormat
    ) -> AnyContext:
        """:meth:`context`, without its span."""
        (context, planned), _ = await self._prepare_request(tools, checked_format(format))
        self._awaiting_usage = context.tokens
        await self.arena.after_turn(planned)
        return context

    async def report_usage(self, usage: object) -> ReportedUsage:
        """Takes in what the provider said the last request from :meth:`context`
        cost: a response's ``usage`` (OpenAI Chat Completions or Responses,
        Anthropic Messages, litellm; object or dict) or the response itself. The
        budget calibrates itself to the input tokens reported, as it does for
        :meth:`send`, and the figures are published with the ``request_usage``
        event. A usage without input tokens raises :class:`InvalidInputError`."""
        self._check_open()
        reported = read_usage(usage)
        counted, self._awaiting_usage = self._awaiting_usage, None
        if counted is not None:
            self._calibrate(counted, reported.input_tokens)
        await self.events.apublish(
            EventName.REQUEST_USAGE,
            self.id,
            request_tokens=counted,
            input_tokens=reported.input_tokens,
            cached_input_tokens=reported.cached_input_tokens,
            cache_write_input_tokens=reported.cache_write_input_tokens,
            output_tokens=reported.output_tokens,
        )
        return reported

    async def _model_turn(
        self, on_part: PartCallback | None, tools: Sequence[dict[str, Any]] | None
    ) -> TurnResult:
        """One model call on the current view, its reply stored as an assistant message."""
        telemetry = self._telemetry
        if telemetry is None:
            return await self._call_model(on_part, tools, None)
        with telemetry.model_turn(self.budget.max_output_tokens) as span:
            return await self._call_model(on_part, tools, span)

    async def _call_model(
        self,
        on_part: PartCallback | None,
        tools: Sequence[dict[str, Any]] | None,
        span: RequestSpan | None,
    ) -> TurnResult:
        """:meth:`_model_turn`, handing ``span`` (when traced) the request and the reply."""
        (context, planned), prepared = await self._prepare_request(tools)
        assert isinstance(context, BuiltContext)
        if span is not None:
            span.request(context)
        messages = context.messages
        owner = owner_token()
        message_id = await write_now_or_in_thread(
            partial(self._store.begin_message, self.id, "assistant", self.model, owner)
        )
        checkpoint = StreamCheckpoint(
            self._store, message_id, owner, self.config.store, self._background
        )
        # The reply of the attempt under way: what a cancelled turn stores.
        streaming: list[StreamedReply] = [StreamedReply()]
        try:
            while True:
                try:
                    reply = await self._stream(
                        messages, tools, on_part, checkpoint, partial(_keep_last, streaming)
                    )
                    break
                except ChatTemplateError as err:
                    if not self._escalate_profile(err):
                        raise
                # Nothing streamed: the same turn is sent again, rendered anew.
                self._last_request = None
                context, planned = await self._request_for(tools, prepared)
                assert isinstance(context, BuiltContext)
                messages = context.messages
                if span is not None:
                    span.request(context)
        except CallbackError as err:
            await self._store_incomplete(
                message_id,
                err.reply,
                f"on_part raised {type(err.original).__name__}",
                checkpoint,
            )
            raise err.original from None
        except PartialReply as err:
            await self._store_incomplete(message_id, err.reply, str(err), checkpoint)
            self.events.publish(
                EventName.LLM_FAILED, self.id, message_id=message_id, error=str(err)
            )
            raise LLMError(str(err)) from err
        except LLMError as err:
            await self._store_incomplete(message_id, StreamedReply(), str(err), checkpoint)
            self.events.publish(
                EventName.LLM_FAILED, self.id, message_id=message_id, error=str(err)
            )
            raise
        except BaseException as err:
            # Cancellation (a timeout around send), an interrupt, a bug: what streamed
            # is stored all the same.
            cancelled = isinstance(err, anyio.get_cancelled_exc_class())
            with anyio.CancelScope(shield=True):
                await self._store_incomplete(
                    message_id,
                    streaming[0],
                    "cancelled" if cancelled else type(err).__name__,
                    checkpoint,
                )
            raise
        await checkpoint.settle()
        if span is not None:
            span.reply(reply)
        created = Event(
            EventName.MESSAGE_CREATED,
            self.id,
            {
                "message_id": message_id,
                "role": "assistant",
                "request_tokens": context.tokens,
                "stable_prefix_tokens": context.stable_prefix_tokens,
                "cached_input_tokens": reply.cached_input_tokens,
                "cache_write_input_tokens": reply.cache_write_input_tokens,
            },
        )
        finished, view_tokens = await self._finish_reply(message_id, reply, created)
        self.events.deliver(created)
        self._calibrate(context.tokens, reply.input_tokens)
        self._watch_tool_calls(reply.tool_calls)
        await self.arena.note_parts(reply.tool_calls)
        await self.arena.after_turn(planned)
        triggered = self.compaction.check_and_trigger(view_tokens, self._background)
        # Tool calls are handed over once the reply is stored and accounted for, so a
        # callback that raises on one leaves the store and the events complete.
        for call in reply.tool_calls:
            await _deliver(on_part, call)
        return TurnResult(
            message_id=finished.id,
            text=reply.text,
            tool_calls=reply.tool_calls,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            cost=reply.cost,
            finish_reason=reply.finish_reason,
            context_tokens=context.tokens,
            compaction_triggered=triggered,
            stable_prefix_tokens=context.stable_prefix_tokens,
            cached_input_tokens=reply.cached_input_tokens,
            cache_write_input_tokens=reply.cache_write_input_tokens,
            reasoning=reply.reasoning,
        )

    async def _stream(
        self,
        messages: list[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None,
        on_part: PartCallback | None,
        checkpoint: StreamCheckpoint,
        on_start: Callable[[StreamedReply], None],
    ) -> StreamedReply:
        return await stream_completion(
            self.model,
            messages,
            llm=self.config.llm,
            tools=tools,
            max_tokens=self.budget.max_output_tokens,
            on_text=_text_forwarder(on_part),
            on_progress=checkpoint.update,
            on_reasoning=_part_forwarder(on_part),
            on_start=on_start,
            on_retry=self._on_retry,
        )

    def _escalate_profile(self, err: ChatTemplateError) -> bool:
        """After a server's chat template refused a request: the session renders with
        the next stricter profile from now on (``strictest``, then ``plain``, whose
        tool exchanges are text), and says so. False when none is left (the refusal
        is then the caller's to see)."""
        stricter = stricter_profile(self.profile)
        if stricter is None:
            return False
        previous, self.profile = self.profile, stricter
        log.warning("the chat template refused a request; rendering %s from now on", stricter)
        self.events.publish(
            EventName.PROFILE_ESCALATED, self.id, old=previous, new=stricter, error=str(err)
        )
        return True

    async def _finish_reply(
        self, message_id: str, reply: StreamedReply, created: Event
    ) -> tuple[_native.TurnAppendResult, int]:
        """Stores a reply whole with its event, and reads the view's size, in one
        native call (decision 103): on the loop when it need not wait, else in a
        worker thread (decision 120). What the call takes is made here, on the loop:
        Python code in the worker would wait for the interpreter."""
        finish = partial(
            self._store.finish_turn,
            self.id,
            message_id,
            _reply_parts(reply),
            True,
            _usage(reply),
            created.name.value,
            json.dumps(created.payload, default=str),
        )
        finished = await write_now_or_in_thread(finish)
        return finished, finished.view_tokens

    async def _store_incomplete(
        self,
        message_id: str,
        reply: StreamedReply,
        reason: str,
        checkpoint: StreamCheckpoint,
    ) -> None:
        """Keep what streamed before a failure, flagged incomplete; never the error text.
        The reason is the message's finish reason, unless the provider gave one. A
        checkpoint write still in flight ends first."""
        await checkpoint.settle()
        usage = _usage(reply)
        usage["finish_reason"] = reply.finish_reason or _reason_code(reason)
        await anyio.to_thread.run_sync(
            self._store.finish_message,
            message_id,
            _reply_parts(reply, keep_empty=False),
            False,
            usage,
        )
        self.events.publish(
            EventName.STREAM_INCOMPLETE,
            self.id,
            message_id=message_id,
            reason=reason,
            chars=len(reply.text),
        )


def _reason_code(reason: str) -> str:
    """A short finish reason for a reply that ended early: its first words, bounded."""
    return reason.split(":")[0].strip()[:64] or "incomplete"


def _reply_parts(reply: StreamedReply, *, keep_empty: bool = True) -> list[dict[str, Any]]:
    # A compaction block opens the turn, then reasoning, as they came: a provider
    # that takes them back wants them there.
    parts: list[Part] = [*reply.compaction, *reply.reasoning]
    if reply.text or (keep_empty and not reply.tool_calls):
        parts.append(TextPart(reply.text))
    parts.extend(reply.tool_calls)
    return parts_to_wire(parts)


def _usage(reply: StreamedReply) -> dict[str, Any]:
    return {
        "input_tokens": reply.input_tokens,
        "output_tokens": reply.output_tokens,
        "cost": reply.cost,
        "finish_reason": reply.finish_reason,
    }


async def _deliver(callback: PartCallback | None, part: Part) -> None:
    if callback is None:
        return
    result = callback(part)
    if inspect.isawaitable(result):
        await result


def _keep_last(holder: list[StreamedReply], reply: StreamedReply) -> None:
    holder[0] = reply


def _part_forwarder(callback: PartCallback | None) -> Callable[[Part], Awaitable[None]] | None:
    if callback is None:
        return None
    return partial(_deliver, callback)


def _text_forwarder(callback: PartCallback | None) -> Callable[[str], Awaitable[None]] | None:
    if callback is None:
        return None

    async def forward(delta: str) -> None:
        await _deliver(callback, TextPart(delta))

    return forward
