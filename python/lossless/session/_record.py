"""The write path of a session: turns recorded from an agent's own loop, OpenAI
chat messages, tool call updates, each followed by the budget step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Literal

import anyio
import anyio.lowlevel

from lossless import _native
from lossless.errors import InvalidInputError
from lossless.events import Event, EventName
from lossless.formats import MessageFormat, checked_format, detect_format, to_openai
from lossless.media import check_media
from lossless.openai_format import OpenAIMessage, ToolResult, Turn, open_call_ids, to_turns
from lossless.parts import MediaPart, PartsInput, normalize_parts, parts_to_wire
from lossless.reasoning import stored_call_id
from lossless.results import RecordResult
from lossless.session._request import RequestComposer


class Recorder(RequestComposer):
    """How a session stores what happened elsewhere (an agent's own loop)."""

    async def record(self, role: str, parts: PartsInput) -> RecordResult:
        """Append a turn that happened elsewhere (your own agent loop), tool calls included."""
        self._check_open()
        appended = await self._append_turn(role, parts)
        view_tokens, triggered = await self._keep_within_budget(appended.view_tokens)
        return replace(appended, view_tokens=view_tokens, compaction_triggered=triggered)

    async def _append_turn(self, role: str, parts: PartsInput) -> RecordResult:
        """Stores one turn; the caller keeps the view within the budget afterwards."""
        normalized = normalize_parts(parts)
        self._check_media(normalized)
        wire = parts_to_wire(normalized)
        if role == "user":
            self._user_turns += 1
        created = Event(EventName.MESSAGE_CREATED, self.id, {"role": role})
        appended = await self._write_turn(
            partial(self._store.append_turn, self.id, role, wire, created.name.value), created
        )
        created.payload["message_id"] = appended.id
        self.events.deliver(created)
        redacted = dict(appended.redacted)
        if redacted:
            # Recorded by the store in the write's own transaction.
            payload = {"message_id": appended.id, "kinds": redacted}
            self.events.deliver(Event(EventName.SECRETS_REDACTED, self.id, payload))
        self._watch_tool_calls(normalized)
        await self.arena.note_parts(normalized)
        return RecordResult(
            appended.id,
            appended.seq,
            appended.token_count,
            appended.view_tokens,
            compaction_triggered=False,
            redacted=redacted,
        )

    def _check_media(self, parts: Sequence[object], field: str = "parts") -> None:
        """Refuses an image or a document of ``parts`` the store would not keep, or
        one over the configured size limits, before anything is written."""
        for index, part in enumerate(parts):
            if isinstance(part, MediaPart):
                check_media(part, f"{field}[{index}]", self.config.media)

    async def _keep_within_budget(self, view_tokens: int) -> tuple[int, bool]:
        """After a write that grew the view to ``view_tokens``: starts a background
        round past the soft limit. A write does not wait for compaction at the hard
        limit (the next model turn does); only a view twice the usable budget, turns
        recorded faster than rounds summarise them, waits here so the view stays
        bounded (decision 74). Returns the view's size and whether a round was
        started."""
        triggered = self.compaction.check_and_trigger(view_tokens, self._background)
        if self.compaction.is_far_behind(view_tokens):
            await self._respect_hard_threshold()
            view_tokens = self.view_tokens()
        else:
            # Let a just-started background round begin while the caller carries on.
            await anyio.lowlevel.checkpoint()
        return view_tokens, triggered

    async def record_messages(
        self,
        messages: Sequence[OpenAIMessage],
        *,
        format: MessageFormat | None = None,
        system: object = None,
    ) -> list[RecordResult]:
        """Append turns an agent loop holds as OpenAI chat messages (or in another
        format), in order.

        ``format`` names the format of ``messages``: ``"openai"`` (Chat Completions),
        ``"anthropic"`` (Messages: turns of content blocks; ``system`` takes the
        request's system text, a string or text blocks) or ``"responses"`` (OpenAI
        Responses input items). Without it the format is read from the messages
        (``tool_use``/``tool_result``/``thinking`` blocks are Anthropic's, typed
        items and ``input_text`` parts the Responses API's, plain role and text
        Chat Completions'); a list mixing formats raises :class:`InvalidInputError`.
        An Anthropic ``thinking``/``redacted_thinking`` block is kept verbatim as a
        :class:`ReasoningPart` of provider ``anthropic``, a Responses ``reasoning``
        item as one of provider ``openai`` (see ``docs/REQUESTS.md``).

        ``messages`` are dicts (``openai.types.chat`` message params) or models with
        ``model_dump()`` (openai or litellm message objects). Each ``user``, ``system``
        and ``assistant`` message becomes one stored turn; list content keeps its text
        parts as separate parts. A user or ``tool`` message's ``image_url`` parts (a
        base64 data URL or an http(s) URL) and ``file`` parts (a PDF as a data URL)
        become :class:`MediaPart` s, a tool result's as parts of its call's result
        (see docs/REQUESTS.md, "Images and documents"); audio parts are refused. An
        assistant's ``tool_calls`` become :class:`ToolPart` s with the arguments text
        exactly as given, completed with the content of the ``tool`` message that
        answers each call later in the list, or left ``"pending"``. A ``tool`` message
        that answers a call an earlier ``record_messages`` or :meth:`record` left open
        sets that call's result through :meth:`update_tool` rather than storing a turn.
        An assistant's reasoning as litellm carries it (``thinking_blocks``, each kept
        verbatim, and ``reasoning_content``) is kept as :class:`ReasoningPart` s of
        the provider of this session's model, before the turn's text: a signed block
        goes back to that provider within its tool loop, where the provider needs it.

        System messages: a leading one equal to this session's ``system_prompt`` is
        skipped, since the session already sends that prompt first in every request.
        Any other system message is stored as a ``system`` turn where it stands, so
        nothing said is lost and the context shows it in its place. Unlike the session's
        prompt, a stored system turn is history: compaction may summarise it like any
        turn. To keep a prompt verbatim in every request, open the session with it as
        ``system_prompt``.

        The whole list is checked before anything is stored: an unknown role, a missing
        field, a non-string ``arguments``, an unsupported content part, an image or a
        document that cannot be taken (:class:`MediaInputError`), a thinking block
        without its signature or a ``tool`` message that answers no call raises
        :class:`InvalidInputError` naming the message's index, and stores nothing. Each
        call appends: hand over only messages not recorded yet. Compaction starts, when
        due, once the whole list is stored, so a long history handed over at once is
        summarised as one span. Returns one :class:`RecordResult` per stored turn; the
        last one says whether the list started a round.
        """
        self._check_open()
        results, _ = await self._record_list(messages, format, system)
        return results

    async def _record_list(
        self, messages: Sequence[OpenAIMessage], format: MessageFormat | None, system: object
    ) -> tuple[list[RecordResult], list[Turn | ToolResult]]:
        """:meth:`record_messages`; also returns the steps it stored them in (their
        ``index`` is in the list as Chat Completions messages), one result per
        :class:`Turn`."""
        if isinstance(messages, Mapping | str | bytes) or not isinstance(messages, Iterable):
            # to_turns names the problem; a format is read from a list only.
            detected: MessageFormat = "openai"
        else:
            messages = list(messages)
            detected = checked_format(format) if format is not None else detect_format(messages)
            if format is None and system is not None and detected == "openai":
                # A system text apart is how an Anthropic request holds it.
                detected = "anthropic"
        provider = {"anthropic": "anthropic", "responses": "openai"}.get(
            detected, _native.model_provider(self.model)
        )
        steps = to_turns(
            to_openai(messages, detected, system),
            system_prompt=self.system_prompt,
            open_calls=lambda: open_call_ids(
                part for message in self.history() for part in message.parts
            ),
            provider=provider,
            check_media=lambda part, field: check_media(part, field, self.config.media),
        )
        results: list[RecordResult] = []
        view_tokens: int | None = None
        for step in steps:
            if isinstance(step, Turn):
                appended = await self._append_turn(step.role, step.parts)
                results.append(appended)
                view_tokens = appended.view_tokens
            else:
                view_tokens = await self._apply_tool_update(
                    step.call_id, "completed", step.output, None, step.media
                )
        if view_tokens is None:
            return results, steps
        # One round for the whole list, started once all of it is stored: a history
        # handed over at once was never sent, and a round that sees all of it aims at
        # the goal (decision 191) where rounds started part way cut to the tail.
        view_tokens, triggered = await self._keep_within_budget(view_tokens)
        if results:
            results[-1] = replace(
                results[-1], view_tokens=view_tokens, compaction_triggered=triggered
            )
        return results, steps

    async def update_tool(
        self,
        call_id: str,
        *,
        status: Literal["pending", "running", "completed", "error"],
        output: str | None = None,
        error: str | None = None,
        media: Sequence[MediaPart] = (),
    ) -> None:
        """Move a recorded tool call along its lifecycle, setting its output or error once.

        ``media`` are images (or documents) of the result, such as the screenshot a
        computer-use tool took: they are added to the call's message as parts of its
        result, in the same transaction. ``call_id`` is the id the call was stored
        under, or the id litellm handed over with a Gemini thought signature in it
        (``{id}__thought__{signature}``), which a call past the store's limit on ids
        is stored without."""
        self._check_open()
        media = list(media)
        for index, part in enumerate(media):
            if not isinstance(part, MediaPart):
                raise InvalidInputError(
                    f"media[{index}]: expected a MediaPart, got {type(part).__name__}"
                )
        self._check_media(media, "media")
        # An id of another type goes on to be refused, by type, where it is checked.
        stored = stored_call_id(call_id) if isinstance(call_id, str) else call_id
        view_tokens = await self._apply_tool_update(stored, status, output, error, media)
        # A result can be the largest thing a session stores.
        await self._keep_within_budget(view_tokens)

    async def _apply_tool_update(
        self,
        call_id: str,
        status: str,
        output: str | None,
        error: str | None,
        media: Sequence[MediaPart] = (),
    ) -> int:
        """Stores a tool call's new status; returns the view's size. The caller keeps
        the view within the budget afterwards."""
        await self.arena.before_update(call_id)
        updated = Event(EventName.TOOL_UPDATED, self.id, {"call_id": call_id, "status": status})
        view_tokens = await self._write_turn(
            partial(
                self._store.update_tool_turn,
                self.id,
                call_id,
                status,
                output,
                error,
                updated.name.value,
                media=parts_to_wire(media) if media else None,
            ),
            updated,
        )
        self.events.deliver(updated)
        await self.arena.note_update(call_id, status, output, error)
        return view_tokens
