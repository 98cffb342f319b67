"""The in-process event bus. Every event is also appended to the store's tape."""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

import anyio

from lossless._background import Spawner

__all__ = ["Event", "EventBus", "EventName", "Handler"]

log = logging.getLogger("lossless.events")


class EventName(StrEnum):
    """Every event lossless publishes."""

    SESSION_CREATED = "session_created"
    SESSION_LOADED = "session_loaded"
    SESSION_CLOSED = "session_closed"
    SESSION_FORKED = "session_forked"
    SECRETS_REDACTED = "secrets_redacted"
    LEDGER_UPDATED = "ledger_updated"
    MESSAGE_CREATED = "message_created"
    TOOL_UPDATED = "tool_updated"
    STREAM_INCOMPLETE = "stream_incomplete"
    LLM_RETRY = "llm_retry"
    LLM_FAILED = "llm_failed"
    PROFILE_ESCALATED = "profile_escalated"
    COMPACTION_TRIGGERED = "compaction_triggered"
    COMPACTION_COMPLETED = "compaction_completed"
    COMPACTION_FAILED = "compaction_failed"
    COMPACTION_STALLED = "compaction_stalled"
    PRUNE_COMPLETED = "prune_completed"
    DOOM_LOOP_DETECTED = "doom_loop_detected"
    FILE_ADDED = "file_added"
    MAP_STARTED = "map_started"
    MAP_ITEM_COMPLETED = "map_item_completed"
    MAP_COMPLETED = "map_completed"
    ARENA_ZONE_ADAPTED = "arena_zone_adapted"
    ARENA_CEILING_ENFORCED = "arena_ceiling_enforced"
    ARENA_FLOOR_UNMET_RECOVERED = "arena_floor_unmet_recovered"
    ARENA_FLOOR_UNMET_UNRECOVERABLE = "arena_floor_unmet_unrecoverable"
    ARENA_RESET = "arena_reset"
    COMPACTION_REQUESTED = "compaction_requested"
    EXTERNAL_RECALL_INJECTED = "external_recall_injected"
    EXTERNAL_RECALL_SKIPPED = "external_recall_skipped"
    REQUEST_USAGE = "request_usage"
    REQUEST_BUILT = "request_built"


@dataclass(frozen=True, slots=True)
class Event:
    """One published event."""

    name: EventName
    session_id: str
    payload: dict[str, Any] = field(default_factory=dict)


Handler = Callable[[Event], None] | Callable[[Event], Awaitable[None]]


class _Tape(Protocol):
    def append_event(self, session_id: str, name: str, payload_json: str) -> int: ...


class EventBus:
    """Publish/subscribe within one process.

    Sync handlers run inline, in subscription order; async handlers run as tasks in
    the owner's task group. A handler that raises is logged and never disturbs the
    publisher. With a tape, every event is appended to the store first.
    """

    def __init__(self, *, tape: _Tape | None = None, spawner: Spawner | None = None) -> None:
        self._handlers: dict[EventName | None, list[Handler]] = {}
        self._tape = tape
        self._spawner = spawner

    def attach(self, spawner: Spawner | None) -> None:
        """Set (or clear) the task group that runs async handlers."""
        self._spawner = spawner

    def subscribe(self, handler: Handler, name: EventName | None = None) -> Callable[[], None]:
        """Call ``handler`` for ``name`` (every event when None); returns an unsubscribe."""
        bucket = self._handlers.setdefault(name, [])
        bucket.append(handler)
        return lambda: bucket.remove(handler) if handler in bucket else None

    def publish(self, name: EventName, session_id: str, **payload: Any) -> Event:
        """Record and deliver one event. Writing it can wait on another writer: from
        async code, prefer :meth:`apublish`."""
        event = Event(name, session_id, payload)
        self._persist(event)
        self.deliver(event)
        return event

    async def apublish(
        self, name: EventName, session_id: str, *, via: _Tape | None = None, **payload: Any
    ) -> Event:
        """:meth:`publish` with the write in a worker thread, so the event loop never
        waits on another writer's lock; handlers still run on the loop. ``via`` writes
        it through another connection to the same database (the one the publisher
        works on, so it never waits for the turn's connection)."""
        event = Event(name, session_id, payload)
        await self.apersist(event, via=via)
        self.deliver(event)
        return event

    async def apersist(self, event: Event, *, via: _Tape | None = None) -> None:
        """Record an event already delivered, with the write in a worker thread."""
        if self._tape is not None:
            await anyio.to_thread.run_sync(self._persist, event, via)

    def _persist(self, event: Event, via: _Tape | None = None) -> None:
        tape = via or self._tape
        if tape is None:
            return
        try:
            payload_json = json.dumps(event.payload, default=str)
            tape.append_event(event.session_id, event.name.value, payload_json)
        except Exception:
            log.exception("could not persist event %s", event.name.value)

    def deliver(self, event: Event) -> None:
        """Hand ``event`` to its handlers without recording it (it was recorded with
        the write it reports)."""
        for handler in (*self._handlers.get(event.name, ()), *self._handlers.get(None, ())):
            self._deliver(handler, event)

    def _deliver(self, handler: Handler, event: Event) -> None:
        if inspect.iscoroutinefunction(handler):
            if self._spawner is None:
                log.warning(
                    "no task group for async handler %r of %s; skipped", handler, event.name.value
                )
                return
            self._spawner.start_soon(self._run_async, handler, event)
            return
        try:
            result = handler(event)
            # A sync callable that returned an awaitable: run that as a task too.
            if inspect.isawaitable(result) and self._spawner is not None:
                self._spawner.start_soon(_await, result)
        except Exception:
            log.exception("event handler %r failed on %s", handler, event.name.value)

    @staticmethod
    async def _run_async(handler: Handler, event: Event) -> None:
        try:
            result = handler(event)
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("event handler %r failed on %s", handler, event.name.value)


async def _await(awaitable: Awaitable[Any]) -> None:
    try:
        await awaitable
    except Exception:
        log.exception("event handler awaitable failed")
