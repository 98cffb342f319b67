"""The whole history in, the bounded request out: ``Session.sync`` and the fork a
history that no longer extends the stored one goes on in.

Each position of a handed-over history is stored as the digest of every message up
to it (computed in the native core from the caller's objects), so a call compares
one digest to tell that the list extends what is stored, and stores only the new
part. See docs/SESSIONS.md, "Sync and forks".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any, Literal, overload

import anyio

from lossless import _native
from lossless._writes import write_now_or_in_thread
from lossless.errors import HistoryDivergedError, InvalidInputError
from lossless.events import EventName
from lossless.formats import MessageFormat, checked_format, detect_format, to_openai
from lossless.openai_format import OpenAIMessage, ToolResult, Turn, mapping_of
from lossless.parts import ToolPart
from lossless.results import (
    AnthropicContext,
    AnyContext,
    BuiltContext,
    RecordResult,
    ResponsesContext,
)
from lossless.session._turn import ModelTurns

OnChange = Literal["fork", "raise"]

#: Bytes of one digest in a chain from ``_native.sync_chain``.
_DIGEST_BYTES = 16


class Syncing(ModelTurns):
    """How a session takes an agent's whole history every turn."""

    @overload
    async def sync(
        self,
        messages: Iterable[OpenAIMessage],
        *,
        format: Literal["openai"],
        system: object = None,
        on_change: OnChange = "fork",
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> BuiltContext: ...
    @overload
    async def sync(
        self,
        messages: Iterable[OpenAIMessage],
        *,
        format: Literal["anthropic"],
        system: object = None,
        on_change: OnChange = "fork",
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> AnthropicContext: ...
    @overload
    async def sync(
        self,
        messages: Iterable[OpenAIMessage],
        *,
        format: Literal["responses"],
        system: object = None,
        on_change: OnChange = "fork",
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> ResponsesContext: ...
    @overload
    async def sync(
        self,
        messages: Iterable[OpenAIMessage],
        *,
        format: None = None,
        system: object = None,
        on_change: OnChange = "fork",
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> AnyContext: ...
    async def sync(
        self,
        messages: Iterable[OpenAIMessage],
        *,
        format: MessageFormat | None = None,
        system: object = None,
        on_change: OnChange = "fork",
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> AnyContext:
        """Hand over your agent's whole history; get back the bounded request.

        ``messages`` is the full list your loop or framework holds, in any format
        :meth:`record_messages` takes (``format`` names it; without, it is read from
        the messages and kept for this session object), ``system`` an Anthropic
        request's separate system text. Only what is not stored yet is stored: the
        stored prefix is recognised by content (object key order and ``None``
        members do not matter), so calling this every turn with a growing list
        stores each message once, and calling it twice with the same list stores
        nothing. Returns exactly what :meth:`context` returns for the format (a
        :class:`BuiltContext`, whose ``messages`` are the Chat Completions request, an
        :class:`AnthropicContext` or a :class:`ResponsesContext`), ``tools`` counted.

        When the list no longer extends what is stored (an earlier message edited or
        removed, a retry that rewinds), nothing stored changes. With ``on_change=
        "fork"`` (the default) the session forks where the list differs: this object
        goes on as the new branch (``id`` changes, ``parent_id`` names the session it
        left, the session's key, if any, names the branch) holding what both share
        without a copy and the list's new part. With ``on_change="raise"`` it raises
        :class:`HistoryDivergedError` naming the first index that differs.

        The history handed over is what this call recognises: messages stored by
        :meth:`record`, :meth:`record_messages` or :meth:`send` are not part of it.
        """
        self._check_open()
        if on_change not in ("fork", "raise"):
            raise InvalidInputError(f"on_change: expected 'fork' or 'raise', got {on_change!r}")
        if isinstance(messages, Mapping | str | bytes) or not isinstance(messages, Iterable):
            raise InvalidInputError(
                f"messages: expected a list of messages, got {type(messages).__name__}"
            )
        listed = messages if isinstance(messages, list) else list(messages)
        telemetry = self._telemetry
        if telemetry is None:
            return (await self._sync(listed, format, system, on_change, tools))[0]
        with telemetry.request("sync") as span:
            before = self.id
            context, stored = await self._sync(listed, format, system, on_change, tools)
            forked_from = self.parent_id if self.id != before else None
            span.synced(len(listed), stored, self.id, forked_from)
            span.request(context)
        return context

    async def _sync(
        self,
        listed: list[OpenAIMessage],
        format: MessageFormat | None,
        system: object,
        on_change: OnChange,
        tools: Sequence[dict[str, Any]] | None,
    ) -> tuple[AnyContext, int]:
        """:meth:`sync`, without its span; returns the request and how many messages
        of the list were stored."""
        chain = _native.sync_chain(listed, system)
        async with self._sync_lock:
            stored, first_difference = self._store.sync_match(self.id, chain)
            used = self._sync_format(listed[stored:] or listed, format, system)
            if first_difference is None:
                new = len(listed) - stored
                if new > 0:
                    await self._store_positions(listed, stored, chain, used, system)
            elif on_change == "raise":
                raise HistoryDivergedError(first_difference, stored)
            else:
                new = await self._fork_for(listed, first_difference, chain, used, system)
        return await self._context(tools, used), new

    def _sync_format(
        self, messages: Sequence[OpenAIMessage], named: MessageFormat | None, system: object
    ) -> MessageFormat:
        """The format of a handed-over history: the one named, else the one read from
        its new part (once, then kept for this object: a plain text turn reads the
        same in every format)."""
        if named is not None:
            self._synced_format = checked_format(named)
        elif self._synced_format is None:
            found = detect_format(messages)
            if system is not None and found == "openai":
                found = "anthropic"
            self._synced_format = found
        return self._synced_format

    async def _store_positions(
        self,
        messages: list[OpenAIMessage],
        start: int,
        chain: bytes,
        format: MessageFormat,
        system: object,
    ) -> None:
        """Stores ``messages[start:]`` and their positions."""
        new = messages[start:]
        newest_before = self._store.newest_seq(self.id)
        results, steps = await self._record_list(new, format, system if start == 0 else None)
        seqs = self._written_seqs(new, steps, results, format, newest_before)
        await write_now_or_in_thread(
            partial(
                self._store.sync_append,
                self.id,
                start,
                chain[start * _DIGEST_BYTES :],
                seqs,
            )
        )

    def _written_seqs(
        self,
        new: list[OpenAIMessage],
        steps: Sequence[Turn | ToolResult],
        results: Sequence[RecordResult],
        format: MessageFormat,
        newest_before: int,
    ) -> list[tuple[int | None, int]]:
        """For each message of ``new``: the oldest message seq it wrote (None: none)
        and the newest of the session after it. A Chat Completions list maps message
        by message; another format's messages are converted first, and all take the
        figures of the whole list (a fork in it starts where it starts)."""
        touched: dict[int, int] = {}
        made_in: dict[str, int] = {}
        created = iter(results)
        for step in steps:
            if isinstance(step, Turn):
                seq = next(created).seq
                touched[step.index] = seq
                made_in.update(
                    (part.call_id, seq) for part in step.parts if isinstance(part, ToolPart)
                )
            elif (holder := self._store.call_seq(self.id, step.call_id)) is not None:
                touched[step.index] = holder
        newest = max([newest_before, *touched.values()])
        if format != "openai":
            return [(min(touched.values(), default=None), newest)] * len(new)
        seqs: list[tuple[int | None, int]] = []
        high = newest_before
        for index, raw in enumerate(new):
            wrote = touched.get(index)
            message = mapping_of(raw) or {}
            if wrote is None and message.get("role") == "tool":
                # A result folded into its call, stored in the same list.
                wrote = made_in.get(str(message.get("tool_call_id")))
            if wrote is not None:
                high = max(high, wrote)
            seqs.append((wrote, high))
        return seqs

    async def _fork_for(
        self,
        messages: list[OpenAIMessage],
        first_difference: int,
        chain: bytes,
        format: MessageFormat,
        system: object,
    ) -> int:
        """Forks where ``messages`` leaves the stored history and goes on there;
        returns how many messages of the list the fork stored."""
        extra_low: int | None = None
        while True:
            fork_seq, replay_from = self._store.sync_fork_point(
                self.id, first_difference, extra_low
            )
            # A tool result of the new part that answers a call the fork would share
            # would change a shared message: the fork starts before that call.
            earlier = self._answered_before(
                messages[replay_from:], format, system if replay_from == 0 else None, fork_seq
            )
            if earlier is None:
                break
            extra_low = earlier
        parent = self.id
        child = await anyio.to_thread.run_sync(
            partial(self._store.fork_session, parent, fork_seq, replay_from, self.key)
        )
        await self._become(child)
        await self.events.apublish(
            EventName.SESSION_FORKED,
            child,
            parent_id=parent,
            fork_seq=fork_seq,
            reason="sync",
            first_difference=first_difference,
        )
        await self._store_positions(messages, replay_from, chain, format, system)
        return len(messages) - replay_from

    def _answered_before(
        self, messages: list[OpenAIMessage], format: MessageFormat, system: object, fork_seq: int
    ) -> int | None:
        """The oldest seq at or before ``fork_seq`` of a call that a tool result in
        ``messages`` answers without the call being in ``messages``."""
        converted = to_openai(messages, format, system)
        made: set[str] = set()
        answered: list[str] = []
        for message in converted:
            item = mapping_of(message)
            if item is None:
                continue
            if item.get("role") == "tool" and isinstance(item.get("tool_call_id"), str):
                answered.append(item["tool_call_id"])
            for call in item.get("tool_calls") or ():
                if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                    made.add(call["id"])
        seqs = [
            seq
            for call_id in answered
            if call_id not in made
            and (seq := self._store.call_seq(self.id, call_id)) is not None
            and seq <= fork_seq
        ]
        return min(seqs, default=None)

    async def _become(self, session_id: str) -> None:
        """Goes on as ``session_id`` (a fork of this session): background work of
        the session left ends first, and what was kept of its last request is
        forgotten."""
        await self.compaction.wait_for_pending()
        self.parent_id = self.id
        self.id = session_id
        self._rebind()
