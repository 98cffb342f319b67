"""Session: the object agents are written against.

A session persists every turn before anything else happens, assembles its context
in the native core, calls the model through litellm, and keeps its view inside the
budget with background compaction.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, Self, TypeVar

import anyio
import anyio.lowlevel

from lossless import _native
from lossless._background import Background
from lossless._writes import write_now_or_in_thread
from lossless.arena import ArenaWriteResult, Priority, SessionArena
from lossless.arena._session import (
    BLOCK_FRAMING_TOKENS,
    STABLE_JOINT_TOKENS,
    Planned,
    Prepared,
)
from lossless.calibration import TokenCalibration
from lossless.compaction import CompactionEngine, CompactionResult, Summariser
from lossless.config import Config, ModelConfig
from lossless.errors import (
    ChatTemplateError,
    InvalidInputError,
    LLMError,
    LosslessError,
    SessionBusyError,
    SessionClosedError,
    UnknownModelError,
)
from lossless.events import Event, EventBus, EventName

if TYPE_CHECKING:
    from lossless.files import FileHandleResult
from lossless.llm import CallbackError, PartialReply, StreamedReply, stream_completion
from lossless.models import Budget, ModelLimits, resolve_limits_async
from lossless.openai_format import OpenAIMessage, Turn, open_call_ids, to_turns
from lossless.parts import (
    Part,
    PartsInput,
    TextPart,
    ToolPart,
    normalize_parts,
    part_from_wire,
    parts_to_wire,
)
from lossless.profiles import ProfileName, profile_for, stricter_profile
from lossless.prompt_cache import CacheHints, with_cache_hints
from lossless.results import BuiltContext, Message, PartCallback, RecordResult, TurnResult
from lossless.store import database_path
from lossless.streams import StreamCheckpoint, gone_streams, owner_token
from lossless.usage import ReportedUsage, read_usage

__all__ = [
    "BuiltContext",
    "Message",
    "RecordResult",
    "Session",
    "SharedSessionParts",
    "TurnResult",
    "flush_search_index",
    "shared_session_parts",
]

# What the core reserves for the line that says what a request left out
# (`request::MARKER_TOKENS`).
_LEFT_OUT_MARKER_TOKENS = 32
log = logging.getLogger("lossless")
_T = TypeVar("_T")
_P = ParamSpec("_P")


# Blocks sent with earlier user messages: (the user message's id, the block, its
# tokens), oldest first.
_EarlierBlocks = tuple[tuple[str, str, int], ...]


@dataclass(frozen=True, slots=True)
class _RequestParts:
    """What a request is made of besides its view items: the parts a compaction
    leaves as they were, so its cost can be told by assembling the view again."""

    tools: str
    tool_tokens: int
    system: str
    system_tokens: int
    block: str
    block_tokens: int
    merged: bool
    history_budget: int
    #: Blocks sent with earlier user messages, kept where they were sent: (the user
    #: message's id, the block, its tokens), oldest first.
    earlier: _EarlierBlocks = ()

    def earlier_placed(self, items: _native.ItemUnits) -> list[tuple[int, int, str, int]]:
        """The earlier blocks whose user message is in ``items`` and is not the newest
        one: (its item index, its message index, the block, its tokens)."""
        placed = []
        for message_id, text, tokens in self.earlier:
            place = items.user_place(message_id)
            if place is not None and message_id != items.newest_user_id:
                placed.append((place[0], place[1], text, tokens))
        return placed

    def print_of(self, items: _native.ItemUnits) -> _native.RequestPrint:
        """The print of a request of these parts and the view items ``items``."""
        return _native.RequestPrint(
            items,
            self.tools,
            self.tool_tokens,
            self.system,
            self.system_tokens,
            self.block,
            self.block_tokens,
            self.merged,
            [(item, text, tokens) for item, _, text, tokens in self.earlier_placed(items)],
        )


@dataclass(frozen=True, slots=True)
class _Request:
    """An assembled request as a provider's cache sees it, and where its stable
    parts end."""

    parts: _RequestParts
    print: _native.RequestPrint
    hints: CacheHints
    #: What the arena's block was planned for (see ``Session._block_stamp``).
    stamp: tuple[int, int, int, int]
    #: The view item holding the newest user message, which the block follows.
    newest_user_id: str | None


class Session:
    """One conversation, stored in full, sent to the model within its budget.

    Create it with :meth:`open`, :meth:`create` or :meth:`load`, ideally as
    ``async with Session.open(...) as session``. Background compaction runs as a
    task of the event loop that the session waits for when it closes, so sessions
    open and close in any order and from any task.
    """

    def __init__(
        self,
        *,
        store: _native.Store,
        session_id: str,
        model: str,
        config: Config,
        system_prompt: str | None,
        limits: ModelLimits,
        compaction_window: int,
        counter: _native.TokenCounter,
        compaction_store: _native.Store | None = None,
    ) -> None:
        self._store = store
        self.id = session_id
        self.model = model
        self.config = config
        self.system_prompt = system_prompt
        self._limits = limits
        self._count = counter.count
        self._system_tokens = counter.count(system_prompt) + 4 if system_prompt else 0
        self.profile: ProfileName = profile_for(
            model, config.model.profile, api_base=config.llm.api_base
        )
        self._calibration = TokenCalibration(model, config.model.token_correction)
        self.budget = Budget.of(limits, config, self._system_tokens, self._calibration.correction)
        self.events = EventBus(tape=store)
        self._background = Background()
        self._closed = False
        self._owns_store = True
        # The connections this session opened itself, ended when it closes: on a
        # database server each holds one of its limited connection slots.
        self._opened: tuple[_native.Store, ...] = ()
        # The view's size right after this session's last write (a turn, a tool
        # result, a reply), taken by the next model turn; None once anything else
        # may have written.
        self._view_after_write: int | None = None
        # The last request sent, to count how much of the next one repeats it.
        self._last_request: _Request | None = None
        self._last_request_at: float | None = None
        # The messages of the last request, as sent.
        self._last_messages: list[dict[str, Any]] | None = None
        # The last tool definitions sent (as JSON) and their tokens.
        self._counted_tools: tuple[str, int] = ("", 0)
        # User turns recorded by this object: a new one re-plans the arena's block.
        self._user_turns = 0
        self._sending = False
        # The tokens of the last request :meth:`context` gave, until its usage is
        # reported.
        self._awaiting_usage: int | None = None
        self._recent_calls: deque[str] = deque(maxlen=config.doom_loop_threshold)
        # Compaction works on a connection of its own (when the database is a file), so
        # no call of a turn waits for a round's native work to let go of a connection.
        compaction_store = compaction_store or store
        summariser = Summariser(
            compaction_store, config, count=self._count, compaction_window=compaction_window
        )
        # The parts a session owns call back into it through weak references: a cycle
        # would keep the session, and its connections, alive until a full collection,
        # which a heap frozen after litellm's import may never run on it.
        summariser.conversation = _weakly(self._conversation_for_summary)
        self.compaction = CompactionEngine(
            store=compaction_store,
            session_id=session_id,
            config=config,
            budget=_weakly(self._current_budget),
            bus=self.events,
            summariser=summariser,
        )
        self.arena = SessionArena(
            weakref.proxy(self),
            check_open=_weakly(self._check_open),
            request_compaction=_weakly(self._request_compaction),
        )
        self.compaction.measure_invalidated = _weakly(self._invalidated_since_last_request)

    # -- lifecycle -------------------------------------------------------------

    @classmethod
    async def create(
        cls,
        *,
        model: str,
        db: str | os.PathLike[str] = "lossless.db",
        config: Config | None = None,
        system_prompt: str | None = None,
    ) -> Session:
        """Start a new session stored in ``db``."""
        return await cls._new(model=model, db=db, config=config, system_prompt=system_prompt)

    @classmethod
    async def _new(
        cls,
        *,
        model: str,
        db: str | os.PathLike[str],
        config: Config | None,
        system_prompt: str | None,
        link: tuple[str, str, int] | None = None,
        shared: SharedSessionParts | None = None,
    ) -> Session:
        """:meth:`create`; with ``link`` (parent id, map id, item index) the session is
        created linked to its parent, in the same transaction (an AgenticMap item).
        With ``shared`` (made once by :func:`shared_session_parts` for ``model`` and
        ``config``) the session works on its connections, counter and limits instead
        of making its own; whoever made them indexes the search backlog."""
        config = config or Config()
        if shared is None:
            shared = await shared_session_parts(model, db, config)
            owns_store = True
        else:
            owns_store = False
        store = shared.store
        if link is None:
            session_id = store.create_session(model, shared.snapshot, system_prompt)
        else:
            session_id = await write_now_or_in_thread(
                partial(
                    _native.create_child_session,
                    store,
                    model,
                    shared.snapshot,
                    system_prompt,
                    *link,
                )
            )
        session = cls(
            store=store,
            session_id=session_id,
            model=model,
            config=config,
            system_prompt=system_prompt,
            limits=shared.limits,
            compaction_window=shared.compaction_window,
            counter=shared.counter,
            compaction_store=shared.compaction_store,
        )
        session._owns_store = owns_store
        if owns_store:
            session._opened = _opened_by_session(db, shared)
        await session._start()
        session.events.publish(
            EventName.SESSION_CREATED, session_id, model=model, usable=session.budget.usable
        )
        return session

    @classmethod
    async def load(
        cls,
        session_id: str,
        *,
        db: str | os.PathLike[str] = "lossless.db",
        config: Config | None = None,
    ) -> Session:
        """Reopen a stored session.

        Replies left streaming by a process that is gone (a process on this host that
        no longer runs, or one elsewhere silent for ``store.stream_stale_s``) are
        closed as incomplete with the text they had checkpointed; replies another
        live process is streaming are left to it.
        """
        return await cls._load(session_id, db=db, config=config)

    @classmethod
    async def _load(
        cls,
        session_id: str,
        *,
        db: str | os.PathLike[str],
        config: Config | None,
        expected: tuple[str, str | None] | None = None,
    ) -> Session:
        """:meth:`load`; with ``expected`` (model, system prompt or None), a session
        stored otherwise is refused before anything is written or published."""
        store = await _open_store(db, config or Config())
        row = store.get_session(session_id)
        if expected is not None:
            _check_stored(row, session_id, *expected)
        stored = (
            Config.model_validate_json(row["config_json"])
            if row["config_json"] != "{}"
            else Config()
        )
        config = config or stored

        limits = await resolve_limits_async(row["model"], config.model)
        compaction_window = await _compaction_window(config, limits)
        counter = _native.TokenCounter(row["model"])
        compaction_store = await _second_store(store, config)
        session = cls(
            store=store,
            session_id=session_id,
            model=row["model"],
            config=config,
            system_prompt=row["system_prompt"],
            limits=limits,
            compaction_window=compaction_window,
            counter=counter,
            compaction_store=compaction_store,
        )
        session._opened = (store,) if compaction_store is store else (store, compaction_store)
        flagged = await anyio.to_thread.run_sync(
            _close_gone_streams, store, session_id, config.store.stream_stale_s
        )
        await session._start()
        session.events.publish(EventName.SESSION_LOADED, session_id, interrupted_flagged=flagged)
        return session

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        *,
        model: str,
        db: str | os.PathLike[str] = "lossless.db",
        session_id: str | None = None,
        config: Config | None = None,
        system_prompt: str | None = None,
    ) -> AsyncIterator[Session]:
        """Create a session (``session_id=None``) or load a stored one, closed on exit.

        ``async with Session.open(model=..., db=..., session_id=saved_id) as session:``.
        When loading, ``config=None`` keeps the stored configuration, and ``model`` and
        a given ``system_prompt`` must match the stored ones: both are fixed when the
        session is created, so a different value raises :class:`InvalidInputError`
        instead of being silently ignored.
        """
        if session_id is None:
            session = await cls.create(
                model=model, db=db, config=config, system_prompt=system_prompt
            )
        else:
            expected = (model, system_prompt)
            session = await cls._load(session_id, db=db, config=config, expected=expected)
        try:
            yield session
        finally:
            await session.close()

    async def _start(self) -> None:
        self.events.attach(self._background)

    async def close(self) -> None:
        """Finish background work and release the session. Closing twice is harmless.

        Sessions close in any order and from any task: the session's background work
        (a compaction round, async event handlers) runs on the event loop, not in a
        task group of the task that opened it, and closing waits for it to end.
        """
        if self._closed:
            return
        self._closed = True
        await self.compaction.wait_for_pending()
        # Closing is idle time: index what the turns queued for search, so the next
        # reader of the file (the CLI, an MCP client) does not pay for it. Sessions on
        # shared connections leave that to whoever made them, once for them all.
        if self._owns_store:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(flush_search_index, self._store)
        self.events.publish(EventName.SESSION_CLOSED, self.id)
        await self._background.wait()
        self.events.attach(None)
        # Off the loop: the last connection to a file copies its write-ahead log
        # into it, which takes as long as the log is large.
        opened, self._opened = self._opened, ()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_close_all, opened)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def _current_budget(self) -> Budget:
        return self.budget

    @property
    def store(self) -> _native.Store:
        """The native store handle this session writes to."""
        return self._store

    def _request_compaction(self, reason: str) -> bool:
        """Starts a background round even under the soft limit (the arena asks for
        one when its floors cannot be met), unless one runs already."""
        return self.compaction.request(reason, self._background)

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(
                f"session {self.id} is closed; open it again with Session.load"
            )

    # -- reading ---------------------------------------------------------------

    def build_context(self, *, tools: Sequence[dict[str, Any]] | None = None) -> BuiltContext:
        """The messages the next model call would send, assembled within the budget.

        ``tools`` (the tool definitions the call will carry) take their share of the
        window first: ``tokens`` counts them, and the history gets what is left. The
        context arena's injection is planned next and reserved before the history:
        identity and pinned facts follow the system prompt, the other zones go in one
        ``<context>`` block right after the newest user message. External recall
        runs only in a model turn (it may wait on the network).
        """
        return self._build(tools, None)[0]

    def _build(
        self, tools: Sequence[dict[str, Any]] | None, prepared: Prepared | None
    ) -> tuple[BuiltContext, Planned | None, _Request]:
        tools_json = _tools_json(tools)
        tool_tokens = self._tool_tokens(tools_json)
        planned, free = None, 0
        if self.arena.enabled:
            prepared = prepared if prepared is not None else self.arena.recall_internal()
            room = self.budget.usable - tool_tokens
            stats = self._store.view_stats(self.id)
            free = room - int(stats["tokens"])
            # What the history keeps whatever the pressure: the instruction, and the
            # marker that says what was left out.
            kept = int(stats["instruction_tokens"]) + _LEFT_OUT_MARKER_TOKENS
            planned = self.arena.plan(free, prepared, most=room - kept)
        if planned is None or not (planned.raw["stable"] or planned.raw["volatile"]):
            block, block_tokens = "", 0
            earlier: _EarlierBlocks = ()
            if self.arena.enabled:
                # Nothing planned: within a tool loop the loop's block still goes out
                # as sent, and earlier blocks stay where they were.
                block, block_tokens = self._steady_block(block, block_tokens, max(free, 0))
                earlier = self._earlier_blocks(free - block_tokens)
            context, request = self._assemble(
                tools_json,
                tool_tokens,
                self.system_prompt,
                block,
                self._system_tokens,
                block_tokens,
                earlier,
            )
        else:
            stable = planned.raw["stable"]
            prompt = (
                f"{self.system_prompt}\n\n{stable}"
                if self.system_prompt and stable
                else (self.system_prompt or stable)
            )
            # Counted in the core with the plan; the joint "\n\n" and a token of margin
            # for a merge across it.
            stable_tokens = planned.raw["stable_tokens"] + STABLE_JOINT_TOKENS if stable else 0
            prompt_tokens = (self._system_tokens or 4) + stable_tokens
            block = planned.raw["volatile"]
            block_tokens = planned.raw["volatile_tokens"] + BLOCK_FRAMING_TOKENS if block else 0
            # The loop's last block may stand in for this one when it costs no more
            # than what the history leaves or what this plan was given.
            block, block_tokens = self._steady_block(block, block_tokens, max(free, block_tokens))
            earlier = self._earlier_blocks(free - block_tokens - stable_tokens)
            context, request = self._assemble(
                tools_json, tool_tokens, prompt, block, prompt_tokens, block_tokens, earlier
            )
        if planned is not None:
            usage = _native.normalize_usage(None, context.tokens, context.budget)
            report = planned.report_with(usage)
            c = context
            context = BuiltContext(c.messages, c.tokens, c.budget, c.item_ids, c.omitted, report)
        return context, planned, request

    def _tool_tokens(self, tools_json: str) -> int:
        """Tokens of the tool definitions, counted once while a loop sends the same."""
        if tools_json != self._counted_tools[0]:
            self._counted_tools = (tools_json, self._count(tools_json) if tools_json else 0)
        return self._counted_tools[1]

    def _assemble(
        self,
        tools_json: str,
        tool_tokens: int,
        prompt: str | None,
        block: str,
        prompt_tokens: int,
        block_tokens: int,
        earlier: _EarlierBlocks,
    ) -> tuple[BuiltContext, _Request]:
        """The history within what the tools, the system message and the arena's
        blocks leave, with the system message first and the blocks placed (the
        current one after the newest user message, ``earlier`` ones where they were
        sent); and what the request is made of, to compare the next request with."""
        earlier_tokens = sum(tokens for _, _, tokens in earlier)
        history_budget = (
            self.budget.usable
            - tool_tokens
            - block_tokens
            - earlier_tokens
            - (prompt_tokens - self._system_tokens)
        )
        messages, tokens, item_ids, omitted, newest, items = self._store.assemble_placed(
            self.id, history_budget, self.profile
        )
        merged = self.profile != "default"
        block_at = _place_block(messages, newest, block, merge=merged) if block else None
        block_last = block_at == len(messages) - 1
        parts = _RequestParts(
            tools_json,
            tool_tokens,
            prompt or "",
            prompt_tokens if prompt else 0,
            block,
            block_tokens,
            merged,
            history_budget,
            earlier,
        )
        # From the newest down, so each insertion leaves the earlier places as they are.
        for _, at, text, earlier_block_tokens in reversed(parts.earlier_placed(items)):
            _place_block(messages, at, text, merge=merged)
            tokens += earlier_block_tokens
        tokens += tool_tokens + block_tokens
        # Where the history ends: before the block when the block is the last message.
        history_end = len(messages) - (2 if block_last else 1)
        summary_end = items.summary_end if not merged else -1
        if prompt:
            if merged and messages and messages[0]["role"] == "system":
                # Strict templates take one system message.
                first = messages.pop(0)
                merged_prompt = f"{prompt}\n\n{first['content']}"
                messages.insert(0, {"role": "system", "content": merged_prompt})
            else:
                messages.insert(0, {"role": "system", "content": prompt})
                history_end, summary_end = history_end + 1, summary_end + (summary_end >= 0)
            tokens += prompt_tokens
        hints = CacheHints(
            0 if prompt else None,
            summary_end if summary_end >= 0 else None,
            history_end if history_end >= 0 else None,
        )
        request = _Request(
            parts, parts.print_of(items), hints, self._block_stamp(), items.newest_user_id
        )
        context = BuiltContext(
            messages, tokens, self.budget.usable + self._system_tokens, item_ids, omitted
        )
        return context, request

    def view_tokens(self) -> int:
        """Tokens of everything in the context view (what compaction keeps in budget)."""
        return int(self._store.view_stats(self.id)["tokens"])

    def history(self) -> list[Message]:
        """Every stored message, oldest first, including incomplete ones."""
        return [_message(row) for row in self._store.history(self.id)]

    # -- writing ---------------------------------------------------------------

    async def _write_turn(self, write: Callable[..., _T | None], event: Event) -> _T:
        """Makes a turn's write on the loop when it can be made without waiting, else
        in a worker thread: a write can wait on another writer's lock (a round
        committing, another process), and the event loop must not (decision 120).
        ``write`` gets ``event``'s payload as JSON and records the event in the
        write's own transaction; the caller then completes the payload from the result
        (a new message's id) and delivers the event to its handlers, on the loop."""
        return await write_now_or_in_thread(partial(write, json.dumps(event.payload, default=str)))

    async def record(self, role: str, parts: PartsInput) -> RecordResult:
        """Append a turn that happened elsewhere (your own agent loop), tool calls included."""
        self._check_open()
        appended = await self._append_turn(role, parts)
        view_tokens, triggered = await self._keep_within_budget(appended.view_tokens)
        return replace(appended, view_tokens=view_tokens, compaction_triggered=triggered)

    async def _append_turn(self, role: str, parts: PartsInput) -> RecordResult:
        """Stores one turn; the caller keeps the view within the budget afterwards."""
        normalized = normalize_parts(parts)
        wire = parts_to_wire(normalized)
        if role == "user":
            self._user_turns += 1
        created = Event(EventName.MESSAGE_CREATED, self.id, {"role": role})
        appended = await self._write_turn(
            partial(self._store.append_turn, self.id, role, wire, created.name.value), created
        )
        created.payload["message_id"] = appended["id"]
        self.events.deliver(created)
        self._watch_tool_calls(normalized)
        await self.arena.note_parts(normalized)
        return RecordResult(
            appended["id"],
            appended["seq"],
            appended["token_count"],
            int(appended["view_tokens"]),
            compaction_triggered=False,
        )

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
        self._view_after_write = view_tokens
        return view_tokens, triggered

    async def record_messages(self, messages: Sequence[OpenAIMessage]) -> list[RecordResult]:
        """Append turns an agent loop holds as OpenAI chat messages, in order.

        ``messages`` are dicts (``openai.types.chat`` message params) or models with
        ``model_dump()`` (openai or litellm message objects). Each ``user``, ``system``
        and ``assistant`` message becomes one stored turn; list content keeps its text
        parts as separate parts, and image, audio or file parts are rejected. An
        assistant's ``tool_calls`` become :class:`ToolPart` s with the arguments text
        exactly as given, completed with the content of the ``tool`` message that
        answers each call later in the list, or left ``"pending"``. A ``tool`` message
        that answers a call an earlier ``record_messages`` or :meth:`record` left open
        sets that call's result through :meth:`update_tool` rather than storing a turn.

        System messages: a leading one equal to this session's ``system_prompt`` is
        skipped, since the session already sends that prompt first in every request.
        Any other system message is stored as a ``system`` turn where it stands, so
        nothing said is lost and the context shows it in its place. Unlike the session's
        prompt, a stored system turn is history: compaction may summarise it like any
        turn. To keep a prompt verbatim in every request, open the session with it as
        ``system_prompt``.

        The whole list is checked before anything is stored: an unknown role, a missing
        field, a non-string ``arguments``, a non-text content part or a ``tool`` message
        that answers no call raises :class:`InvalidInputError` naming the message's
        index, and stores nothing. Each call appends: hand over only messages not
        recorded yet. Compaction starts, when due, once the whole list is stored, so
        a long history handed over at once is summarised as one span. Returns one
        :class:`RecordResult` per stored turn; the last one says whether the list
        started a round.
        """
        self._check_open()
        steps = to_turns(
            messages,
            system_prompt=self.system_prompt,
            open_calls=lambda: open_call_ids(
                part for message in self.history() for part in message.parts
            ),
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
                    step.call_id, "completed", step.output, None
                )
        if view_tokens is None:
            return results
        # One round for the whole list, started once all of it is stored: a history
        # handed over at once was never sent, and a round that sees all of it aims at
        # the goal (decision 191) where rounds started part way cut to the tail.
        view_tokens, triggered = await self._keep_within_budget(view_tokens)
        if results:
            results[-1] = replace(
                results[-1], view_tokens=view_tokens, compaction_triggered=triggered
            )
        return results

    async def update_tool(
        self,
        call_id: str,
        *,
        status: Literal["pending", "running", "completed", "error"],
        output: str | None = None,
        error: str | None = None,
    ) -> None:
        """Move a recorded tool call along its lifecycle, setting its output or error once."""
        self._check_open()
        view_tokens = await self._apply_tool_update(call_id, status, output, error)
        # A result can be the largest thing a session stores.
        await self._keep_within_budget(view_tokens)

    async def _apply_tool_update(
        self, call_id: str, status: str, output: str | None, error: str | None
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
            ),
            updated,
        )
        self.events.deliver(updated)
        await self.arena.note_update(call_id, status, output, error)
        return view_tokens

    # -- files -----------------------------------------------------------------

    async def add_file(
        self, path: str | os.PathLike[str], *, record: bool = True
    ) -> FileHandleResult:
        """Hand the model a file: under ``files.inline_threshold`` tokens as text, else
        as a reference to its bytes, stored whole (see :mod:`lossless.files`).

        With ``record`` (the default) the part is stored at once as a user message;
        otherwise pass ``result.part`` in the next :meth:`send`. A missing, empty or
        unreadable path, a directory or a file over ``files.max_file_bytes`` raises a
        :class:`~lossless.errors.FileInputError` and stores nothing.
        """
        self._check_open()
        from lossless.files import LargeFileHandler

        handler = LargeFileHandler(self._store, config=self.config.files, model=self.model)
        result = await handler.handle(path)
        if record:
            await self.record("user", [result.part])
        await self.events.apublish(
            EventName.FILE_ADDED,
            self.id,
            file_id=result.file_id,
            inline=result.inline,
            tokens=result.token_count,
        )
        return result

    async def read_file(self, file_id: str, lines: tuple[int, int] | None = None) -> str:
        """The text of a stored file, whole or ``lines=(first, last)`` (from 1, both
        included). An unknown id raises :class:`~lossless.errors.NotFoundError`."""
        from lossless.files import LargeFileHandler

        handler = LargeFileHandler(self._store, config=self.config.files, model=self.model)
        return await handler.read(file_id, lines)

    # -- the context arena ------------------------------------------------------

    async def pin(self, text: str, *, key: str | None = None, priority: Priority = "high") -> str:
        """Pin a fact: it goes into the system message of every request (the
        ``truth`` zone) and survives every compaction. Returns its key (given, or
        made from the text); pinning again under a key replaces the fact."""
        if key is None and isinstance(text, str):
            key = "pin:" + hashlib.sha256(text.encode()).hexdigest()[:12]
        await self.arena.add("truth", key, text, priority=priority)
        assert key is not None
        return key

    async def unpin(self, key: str) -> bool:
        """Take a pinned fact out; whether it was pinned. Only a pinned fact: an entry
        of another zone under the same key stays."""
        return await self.arena.remove("truth", key)

    async def set_task(self, text: str) -> ArenaWriteResult:
        """Set the task state (the ``task_state`` zone), shown next to the newest
        user message of every request until it is set again."""
        return await self.arena.add("task_state", "task", text, priority="critical")

    async def set_working_memory(self, text: str) -> ArenaWriteResult:
        """Set the working memory (the ``memory_working`` zone); text longer than the
        zone's cap is cut to it, head and tail kept, as the result reports."""
        return await self.arena.add("memory_working", "working", text, priority="critical")

    async def compact(self) -> CompactionResult:
        """Run one compaction now, even under the soft threshold. Never raises."""
        self._check_open()
        await self.compaction.wait_for_pending()
        return await self.compaction.run_compaction(force=True)

    def _watch_tool_calls(self, parts: Sequence[Part]) -> None:
        for part in parts:
            if not isinstance(part, ToolPart):
                continue
            signature = json.dumps([part.name, part.input], sort_keys=True, default=str)
            self._recent_calls.append(signature)
            window = self._recent_calls
            if len(window) == window.maxlen and len(set(window)) == 1:
                self.events.publish(
                    EventName.DOOM_LOOP_DETECTED,
                    self.id,
                    tool=part.name,
                    repeats=len(window),
                    input=part.input,
                )

    # -- the model turn --------------------------------------------------------

    async def send(
        self,
        message: PartsInput,
        *,
        on_part: PartCallback | None = None,
        tools: Sequence[dict[str, Any]] | Literal["recall"] | None = None,
    ) -> TurnResult:
        """Store the user turn, call the model on the assembled context, store its reply.

        ``on_part`` receives each streamed text delta as a :class:`TextPart` and each
        tool call as a :class:`ToolPart` (once the reply is complete and stored); if it
        raises on a text delta, the partial reply is stored flagged incomplete, and in
        either case the exception propagates. ``tools="recall"`` lets the
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

    async def context(self, *, tools: Sequence[dict[str, Any]] | None = None) -> BuiltContext:
        """The request to send next when your own loop calls the model: exactly what
        :meth:`respond` would send.

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
        (context, planned), _ = await self._prepare_request(tools)
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

    async def _prepare_request(
        self, tools: Sequence[dict[str, Any]] | None
    ) -> tuple[tuple[BuiltContext, Planned | None], Prepared | None]:
        """What a model turn does before calling the model: waits at the hard limit,
        recalls, plans and assembles the request, and records it as sent. Returns
        the request (with cache hints when configured) with the arena's plan, and
        the turn's recall."""
        known, self._view_after_write = self._view_after_write, None
        if await self._compact_if_cache_expired():
            known = None
        await self._respect_hard_threshold(known)
        prepared = await self.arena.prepare() if self.arena.enabled else None
        return self._request_for(tools, prepared), prepared

    def _request_for(
        self,
        tools: Sequence[dict[str, Any]] | None,
        prepared: Prepared | None,
        planned: tuple[BuiltContext, Planned | None, _Request] | None = None,
    ) -> tuple[BuiltContext, Planned | None]:
        """The request as it is sent (``planned``, or built now), recorded as sent."""
        context, plan, request = planned or self._build(tools, prepared)
        stable_prefix = self._observe_request(request)
        messages = self._sendable(context, request)
        return replace(context, messages=messages, stable_prefix_tokens=stable_prefix), plan

    async def _model_turn(
        self, on_part: PartCallback | None, tools: Sequence[dict[str, Any]] | None
    ) -> TurnResult:
        """One model call on the current view, its reply stored as an assistant message."""
        (context, planned), prepared = await self._prepare_request(tools)
        messages = context.messages
        owner = owner_token()
        message_id = await write_now_or_in_thread(
            partial(self._store.begin_message, self.id, "assistant", self.model, owner)
        )
        checkpoint = StreamCheckpoint(
            self._store, message_id, owner, self.config.store, self._background
        )
        try:
            while True:
                try:
                    reply = await self._stream(messages, tools, on_part, checkpoint)
                    break
                except ChatTemplateError as err:
                    if not self._escalate_profile(err):
                        raise
                # Nothing streamed: the same turn is sent again, rendered anew.
                self._last_request = None
                context, planned = self._request_for(tools, prepared)
                messages = context.messages
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
                    StreamedReply(text=checkpoint.text),
                    "cancelled" if cancelled else type(err).__name__,
                    checkpoint,
                )
            raise
        await checkpoint.settle()
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
        self._view_after_write = view_tokens
        # Tool calls are handed over once the reply is stored and accounted for, so a
        # callback that raises on one leaves the store and the events complete.
        for call in reply.tool_calls:
            await _deliver(on_part, call)
        return TurnResult(
            message_id=finished["id"],
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
        )

    def _sendable(self, context: BuiltContext, request: _Request) -> list[dict[str, Any]]:
        """The messages of ``context`` as they are sent (with cache hints when
        configured), kept as the last messages sent."""
        messages = context.messages
        if self.config.llm.cache_hints:
            messages = with_cache_hints(messages, request.hints)
        self._last_messages = messages
        return messages

    async def _stream(
        self,
        messages: list[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None,
        on_part: PartCallback | None,
        checkpoint: StreamCheckpoint,
    ) -> StreamedReply:
        return await stream_completion(
            self.model,
            messages,
            llm=self.config.llm,
            tools=tools,
            max_tokens=self.budget.max_output_tokens,
            on_text=_text_forwarder(on_part),
            on_progress=checkpoint.update,
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

    def _conversation_for_summary(self) -> list[dict[str, Any]] | None:
        """The last request's messages, for a summarisation call of the same model
        (a provider's cache is per model); None otherwise."""
        if self.config.compaction.model != self.model:
            return None
        return self._last_messages

    async def _compact_if_cache_expired(self) -> bool:
        """With ``compaction.compact_after_idle_s``, a turn that comes after that long
        without a request first compacts a view above the round's goal: the provider's
        cache of the last request has expired, so the rewrite costs nothing in cache,
        and the next compaction comes later. Returns whether a compaction ran."""
        idle = self.config.compaction.compact_after_idle_s
        last = self._last_request_at
        if idle is None or last is None or time.monotonic() - last < idle:
            return False
        if self.view_tokens() <= self.compaction.goal:
            return False
        await self.compaction.wait_for_pending()
        await self.compaction.run_compaction(force=True)
        return True

    def _block_stamp(self) -> tuple[int, int, int, int]:
        """What the arena's block depends on besides tool outcomes: the user turns
        recorded, the arena's user writes and the summaries in the view."""
        return (self._user_turns, self.arena.user_writes, *self._summaries_stamp())

    def _summaries_stamp(self) -> tuple[int, int]:
        """The summaries in the view as stored (how many, and their tokens): what a
        compaction changes that the arena's blocks depend on. Read from the store
        rather than counted when a compaction ends, so that a request built between
        a round's commit and its end sees the commit: the next request would
        otherwise change the blocks again, a second invalidation for one round."""
        stats = self._store.view_stats(self.id)
        return int(stats["summary_items"]), int(stats["summary_tokens"])

    def _steady_block(self, block: str, block_tokens: int, free: int) -> tuple[str, int]:
        """The block to send: within a tool loop (no user turn, arena write or
        compaction since the last request) the last request's block again, when it
        still fits beside the history. The block sits right after the newest user
        message, so a block that changed would make the provider read every message
        of the loop after it again; what changed in a loop (a tool failing or
        recovering) is in the loop's own messages, and the next user turn re-plans."""
        last = self._last_request
        if (
            last is None
            or not last.parts.block
            or last.stamp != self._block_stamp()
            or last.parts.block_tokens > free
        ):
            return block, block_tokens
        return last.parts.block, last.parts.block_tokens

    def _earlier_blocks(self, room: int) -> _EarlierBlocks:
        """The blocks of earlier user turns to send where they were sent: a new user
        turn places a new block after itself and leaves the last request's block
        after its own message, so the provider reads on from the end of the last
        request instead of reading that turn's tool loop again (decision 114). They
        stay until a summary changes the view (what follows its change is read anew
        anyway) or until they no longer fit in ``room`` beside the history."""
        last = self._last_request
        if last is None or last.stamp[2:] != self._summaries_stamp():
            return ()
        if self.profile != "default":
            # A profile merges and splits messages: the places the view's items give
            # are not where the messages end up (a block would go astray or past the
            # end), and merged into a user message a block moves the front anyway.
            return ()
        earlier = last.parts.earlier
        if last.parts.block and last.newest_user_id and last.stamp[0] != self._user_turns:
            kept = (last.newest_user_id, last.parts.block, last.parts.block_tokens)
            earlier = (*earlier, kept)
        if sum(tokens for _, _, tokens in earlier) > room:
            return ()
        return earlier

    def _observe_request(self, request: _Request) -> int:
        """Tokens ``request`` shares with the start of the previous request, which it
        then replaces as the one the next request is compared with."""
        last, self._last_request = self._last_request, request
        self._last_request_at = time.monotonic()
        return 0 if last is None else request.print.common_prefix_tokens(last.print)

    def _invalidated_since_last_request(self) -> int | None:
        """Tokens of the last request a provider's cache can no longer serve, the
        view being what it is now (after a compaction): the last request assembled
        again with the same system message, tools and block. None before any request."""
        last = self._last_request
        if last is None or self._closed:
            return None
        items = self._store.assemble_placed(self.id, last.parts.history_budget, self.profile)[5]
        return last.print.invalidated_by(last.parts.print_of(items))

    async def _finish_reply(
        self, message_id: str, reply: StreamedReply, created: Event
    ) -> tuple[dict[str, Any], int]:
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
        return finished, int(finished["view_tokens"])

    def _calibrate(self, counted: int, reported: int | None) -> None:
        """Takes in what the provider said a request cost, so the view keeps within its
        real window (see :mod:`lossless.calibration`)."""
        if reported is not None and self._calibration.observe(counted, reported):
            self.budget = replace(self.budget, correction=self._calibration.correction)

    def _on_retry(self, attempt: int, reason: str) -> None:
        self.events.publish(EventName.LLM_RETRY, self.id, attempt=attempt, reason=reason)

    async def _respect_hard_threshold(self, known: int | None = None) -> None:
        """The seam where a turn waits for compaction: never send an over-budget view.
        ``known`` is the view's size as the session's last write left it, if nothing
        has written since: only compaction can have changed it, and compaction only
        makes it smaller, so under the limit it spares reading the size again."""
        if not self.compaction.is_hard_overflow(self.view_tokens() if known is None else known):
            return
        if self.compaction.pending:
            await self.compaction.wait_for_pending()
        if self.compaction.is_hard_overflow(self.view_tokens()):
            await self.compaction.run_compaction()

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
        self._view_after_write = None
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


@dataclass(frozen=True, slots=True)
class SharedSessionParts:
    """What a new session of one model and configuration needs besides its row: the
    connections it writes turns and compaction through, its token counter, its
    model's limits and compaction window, and the configuration snapshot stored with
    it. Made once, they serve any number of sessions (an AgenticMap's items), which
    then open no connection and resolve nothing of their own."""

    store: _native.Store
    compaction_store: _native.Store
    counter: _native.TokenCounter
    limits: ModelLimits
    compaction_window: int
    snapshot: str


async def shared_session_parts(
    model: str, db: str | os.PathLike[str] | _native.Store, config: Config
) -> SharedSessionParts:
    """The parts of :class:`SharedSessionParts` for sessions of ``model`` in ``db`` (a
    path, or a native store to write turns through)."""
    limits = await resolve_limits_async(model, config.model)
    compaction_window = await _compaction_window(config, limits)
    store = db if isinstance(db, _native.Store) else await _open_store(db, config)
    return SharedSessionParts(
        store=store,
        compaction_store=await _second_store(store, config),
        # The encoder's tables are compiled in: a counter costs microseconds.
        counter=_native.TokenCounter(model),
        limits=limits,
        compaction_window=compaction_window,
        # The snapshot lets `load` rebuild the session; a credential has no place in it.
        snapshot=config.model_dump_json(exclude={"llm": {"api_key"}}),
    )


def _check_stored(
    row: dict[str, Any], session_id: str, model: str, system_prompt: str | None
) -> None:
    """Refuses to open a stored session for another model or system prompt: both are
    fixed when the session is created."""
    if row["model"] != model:
        raise InvalidInputError(
            f"model: session {session_id} was created for {row['model']!r}, not {model!r}"
        )
    if system_prompt is not None and system_prompt != row["system_prompt"]:
        raise InvalidInputError(
            f"system_prompt: session {session_id} was created with another system prompt; "
            "it cannot change"
        )


async def _compaction_window(config: Config, limits: ModelLimits) -> int:
    """The compaction model's window: configured, else from the model map, else the
    conversation model's. Resolved once, when the session opens: the config is frozen."""
    compaction = config.compaction
    if compaction.model_context_limit is not None:
        return compaction.model_context_limit
    if compaction.model is None:
        return limits.context_limit
    try:
        return (await resolve_limits_async(compaction.model, ModelConfig())).context_limit
    except UnknownModelError:
        return limits.context_limit


async def _open_store(db: str | os.PathLike[str], config: Config) -> _native.Store:
    path = database_path(db)
    return await anyio.to_thread.run_sync(
        partial(_native.Store, path, config.store.synchronous, config.store.busy_timeout_ms)
    )


# Pages the write-ahead log of a session's turn connection may hold before one of its
# commits copies them into the database file. SQLite's default (1,000, about 65 tool
# results) made one turn in that many wait for the copy; with compaction on its own
# connection, whose commits copy at the default, a turn rarely does it at all.
_TURN_CHECKPOINT_PAGES = 8_000


async def _second_store(store: _native.Store, config: Config) -> _native.Store:
    """Another connection to ``store``'s database for compaction; ``store`` itself for
    a private in-memory database, which no second connection could see. The second
    connection takes over most of the write-ahead log's checkpoints."""
    if store.path == ":memory:":
        return store
    compaction_store = await _open_store(store.path, config)
    store.set_checkpoint_pages(_TURN_CHECKPOINT_PAGES)
    return compaction_store


def _opened_by_session(
    db: str | os.PathLike[str] | _native.Store, shared: SharedSessionParts
) -> tuple[_native.Store, ...]:
    """The connections of ``shared`` that a new session made for itself: both, or
    only the compaction one when it writes turns through the caller's store."""
    opened: list[_native.Store] = []
    for store in (shared.store, shared.compaction_store):
        if store is not db and all(store is not seen for seen in opened):
            opened.append(store)
    return tuple(opened)


def _close_all(stores: Sequence[_native.Store]) -> None:
    """Closes ``stores`` in order (the last one on a file empties its log)."""
    for store in stores:
        store.close()


def _weakly(method: Callable[_P, _T]) -> Callable[_P, _T]:
    """``method`` (a bound method of a session) called through a weak reference: the
    caller does not keep the session alive."""
    ref = weakref.WeakMethod(method)

    def call(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        bound = ref()
        if bound is None:
            raise SessionClosedError("the session this belongs to is gone")
        return bound(*args, **kwargs)

    return call


def flush_search_index(store: _native.Store) -> None:
    """Indexes the search backlog of ``store``'s database; a failure is logged only."""
    try:
        store.flush_search_index()
    except LosslessError:
        # A search indexes what is still queued before it reads: nothing is lost.
        log.warning("could not index the search backlog while closing", exc_info=True)


def _close_gone_streams(store: _native.Store, session_id: str, stale_s: float) -> int:
    """Closes the session's replies whose streaming process is gone; returns how many."""
    gone = gone_streams(store, session_id, stale_s)
    return store.flag_interrupted(session_id, gone) if gone else 0


def _reason_code(reason: str) -> str:
    """A short finish reason for a reply that ended early: its first words, bounded."""
    return reason.split(":")[0].strip()[:64] or "incomplete"


def _reply_parts(reply: StreamedReply, *, keep_empty: bool = True) -> list[dict[str, Any]]:
    parts: list[Part] = []
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


def _text_forwarder(callback: PartCallback | None) -> Callable[[str], Awaitable[None]] | None:
    if callback is None:
        return None

    async def forward(delta: str) -> None:
        await _deliver(callback, TextPart(delta))

    return forward


def _message(row: dict[str, Any]) -> Message:
    return Message(
        id=row["id"],
        seq=row["seq"],
        role=row["role"],
        status=row["status"],
        parts=[part_from_wire(part) for part in row["parts"]],
        token_count=row["token_count"],
        created_at=row["created_at"],
        usage={
            key: row[key]
            for key in ("input_tokens", "output_tokens", "cost", "finish_reason")
            if row[key] is not None
        },
    )


def _tools_json(tools: Sequence[dict[str, Any]] | None) -> str:
    """Tool definitions as a request carries them, compact; empty for none."""
    return json.dumps(list(tools), separators=(",", ":")) if tools else ""


def _place_block(
    messages: list[dict[str, Any]], newest: int, block: str, *, merge: bool
) -> int | None:
    """Puts the arena's volatile block right after the newest user message (at the
    end when there is none). As a message of its own, and of the ``user`` role:
    litellm lifts ``system`` messages into a provider's separate system field (the
    front of the request), which would undo the placement. A profile that needs
    alternating roles gets it appended to that message instead. Returns the block's
    index, or None when it was merged."""
    if newest < 0:
        messages.append({"role": "user", "content": block})
        return len(messages) - 1
    if merge and isinstance(messages[newest].get("content"), str):
        messages[newest]["content"] = f"{messages[newest]['content']}\n\n{block}"
        return None
    messages.insert(newest + 1, {"role": "user", "content": block})
    return newest + 1
