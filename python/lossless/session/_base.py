"""The state every part of a session works on, and the helpers they share."""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from lossless import _native
from lossless._background import Background
from lossless._writes import write_now_or_in_thread
from lossless.arena import SessionArena
from lossless.calibration import TokenCalibration
from lossless.compaction import CompactionEngine
from lossless.config import Config
from lossless.errors import SessionClosedError
from lossless.events import Event, EventBus, EventName
from lossless.formats import MessageFormat
from lossless.models import Budget, ModelLimits
from lossless.parts import Part, ToolPart, part_from_wire
from lossless.profiles import ProfileName
from lossless.results import Message
from lossless.session._request_parts import RequestLogState, _Request

if TYPE_CHECKING:
    from lossless.telemetry import SessionTelemetry

log = logging.getLogger("lossless")


_T = TypeVar("_T")


class SessionBase:
    """What :class:`Session` holds (set when it is made) and the small steps
    every part of it takes: reading the view, writing a turn, waiting at the hard
    limit, calibrating the budget."""

    id: str
    model: str
    config: Config
    system_prompt: str | None
    profile: ProfileName
    budget: Budget
    events: EventBus
    compaction: CompactionEngine
    arena: SessionArena
    _store: _native.Store
    _limits: ModelLimits
    _count: Callable[[str], int]
    _system_tokens: int
    _calibration: TokenCalibration
    _background: Background
    _closed: bool
    _owns_store: bool
    #: The connections this session opened itself, ended when it closes: on a
    #: database server each holds one of its limited connection slots.
    _opened: tuple[_native.Store, ...]
    #: The last request sent, to count how much of the next one repeats it.
    _last_request: _Request | None
    #: What the ``request_built`` events written so far carried (see ``_request_log``).
    _request_log: RequestLogState
    _last_request_at: float | None
    #: The messages of the last request, as sent.
    _last_messages: list[dict[str, Any]] | None
    #: The last tool definitions sent (as JSON) and their tokens.
    _counted_tools: tuple[str, int]
    #: User turns recorded by this object: a new one re-plans the arena's block.
    _user_turns: int
    _sending: bool
    #: The tokens of the last request :meth:`Session.context` gave, until its usage
    #: is reported.
    _awaiting_usage: int | None
    _recent_calls: deque[str]
    #: The name that opens this session from outside (see ``Session.open``).
    key: str | None
    #: The session this one forked from, when it is a fork.
    parent_id: str | None
    #: One ``sync`` at a time per object; the format the first one read.
    _sync_lock: anyio.Lock
    _synced_format: MessageFormat | None
    #: Spans and metrics (``Config.telemetry``); None when off, the only cost then.
    _telemetry: SessionTelemetry | None

    def _rebind(self) -> None:
        """Makes what depends on the session's id again, after ``id`` changed."""
        raise NotImplementedError

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def telemetry(self) -> SessionTelemetry | None:
        """The session's spans and metrics when ``config.telemetry`` is enabled
        (docs/TELEMETRY.md); None otherwise."""
        return self._telemetry

    def _current_id(self) -> str:
        return self.id

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

    def view_tokens(self) -> int:
        """Tokens of everything in the context view (what compaction keeps in budget)."""
        return self._store.view_stats(self.id).tokens

    def history(self) -> list[Message]:
        """Every stored message, oldest first, including incomplete ones."""
        return [_message(row) for row in self._store.history(self.id)]

    async def _write_turn(self, write: Callable[..., _T | None], event: Event) -> _T:
        """Makes a turn's write on the loop when it can be made without waiting, else
        in a worker thread: a write can wait on another writer's lock (a round
        committing, another process), and the event loop must not (decision 120).
        ``write`` gets ``event``'s payload as JSON and records the event in the
        write's own transaction; the caller then completes the payload from the result
        (a new message's id) and delivers the event to its handlers, on the loop."""
        return await write_now_or_in_thread(partial(write, json.dumps(event.payload, default=str)))

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

    def _calibrate(self, counted: int, reported: int | None) -> None:
        """Takes in what the provider said a request cost, so the view keeps within its
        real window (see :mod:`lossless.calibration`)."""
        if reported is not None and self._calibration.observe(counted, reported):
            self.budget = replace(self.budget, correction=self._calibration.correction)

    def _on_retry(self, attempt: int, reason: str) -> None:
        self.events.publish(EventName.LLM_RETRY, self.id, attempt=attempt, reason=reason)

    async def _respect_hard_threshold(self) -> None:
        """The seam where a turn waits for compaction: never send an over-budget view.
        The view's size is read from the store's cached view (the one cache layer),
        so asking again costs a lookup, not an assembly."""
        if not self.compaction.is_hard_overflow(self.view_tokens()):
            return
        if self.compaction.pending:
            await self.compaction.wait_for_pending()
        if self.compaction.is_hard_overflow(self.view_tokens()):
            await self.compaction.run_compaction()


def _message(row: _native.MessageRecord) -> Message:
    usage = {
        "input_tokens": row.input_tokens,
        "output_tokens": row.output_tokens,
        "cost": row.cost,
        "finish_reason": row.finish_reason,
    }
    return Message(
        id=row.id,
        seq=row.seq,
        role=row.role,
        status=row.status,
        parts=[part_from_wire(part) for part in row.parts],
        token_count=row.token_count,
        created_at=row.created_at,
        usage={key: value for key, value in usage.items() if value is not None},
        session_id=row.session_id,
    )
