"""What both map operators share: results, durable outcomes, and the stream that
runs items at a bounded concurrency and yields them as they complete.

Each item's outcome is written to the database (one transaction) before it is
yielded, so a run stopped in any way, a crash or a SIGKILL included, loses only the
items that were in flight, and :meth:`resume` runs only what has no outcome yet.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Self

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from pydantic import BaseModel

from lossless import _native
from lossless._background import Background
from lossless._writes import write_now_or_in_thread
from lossless.errors import MapConflictError
from lossless.events import EventBus, EventName

__all__ = ["MapResult", "MapStream", "Outcome", "Unencodable", "encode_item", "pending_items"]

log = logging.getLogger("lossless")


@dataclass(frozen=True, slots=True)
class MapResult:
    """One item's outcome.

    ``output`` is the reply (text, or with an output schema the validated value) on
    success; on failure ``error_kind`` says what went wrong (``timeout``,
    ``llm_error``, ``invalid_output``, ``length``, ``template_error``,
    ``bad_input``, ``max_turns``, ``empty``) and ``error`` how. ``attempts`` counts
    model calls, ``usage`` sums their tokens and cost. ``session_id`` is the
    sub-session of an AgenticMap item.
    """

    map_id: str
    index: int
    input: Any
    output: Any = None
    error_kind: str | None = None
    error: str | None = None
    attempts: int = 0
    usage: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the item succeeded."""
        return self.error_kind is None


@dataclass(slots=True)
class Outcome:
    """What running one item gave, before it is stored."""

    output: Any = None
    error_kind: str | None = None
    error: str | None = None
    attempts: int = 0
    usage: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None

    @classmethod
    def failed(cls, kind: str, error: str, **fields: Any) -> Outcome:
        return cls(error_kind=kind, error=error, **fields)

    def add_usage(
        self, input_tokens: int | None, output_tokens: int | None, cost: float | None
    ) -> None:
        for key, value in (
            ("input_tokens", input_tokens),
            ("output_tokens", output_tokens),
            ("cost", cost),
        ):
            if value is not None:
                self.usage[key] = self.usage.get(key, 0) + value


class Unencodable:
    """Stands for an item JSON cannot hold: its repr is stored, and the item is
    recorded as failed (``bad_input``) without a model call."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def encode_item(item: Any) -> tuple[str, Any]:
    """The JSON text stored for ``item``, and what the run takes as the item."""
    try:
        return encode_input(item), item
    except (TypeError, ValueError, RecursionError) as err:
        reason = f"the item cannot be stored as JSON ({type(err).__name__}: {err})"
        return json.dumps(repr(item)[:10_000]), Unencodable(reason)


def encode_input(item: Any) -> str:
    """An item as the JSON text stored with the run; raises ``TypeError`` or
    ``ValueError`` for an item JSON cannot hold."""
    if isinstance(item, BaseModel):
        return item.model_dump_json()
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        item = dataclasses.asdict(item)
    return json.dumps(item, allow_nan=False, ensure_ascii=False)


Work = Callable[[int, Any], Awaitable[Outcome]]
Dump = Callable[[Any], Any]


class MapStream:
    """The results of a map run, in completion order: ``async for result in stream``.

    Items run at most ``concurrency`` at a time, in tasks of the event loop owned by
    the stream. :meth:`aclose` (or leaving ``async with stream``) cancels the items
    still running; their outcomes are not stored, so a later ``resume`` runs them.
    :meth:`collect` waits for every result and returns them in input order.
    """

    def __init__(
        self,
        *,
        prepare: Callable[
            [], Awaitable[tuple[str, _native.Store, list[tuple[int, Any]], Work, Dump]]
        ],
        concurrency: int,
        events: EventBus,
        parent_id: str | None,
        progress: bool,
        finish: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._prepare = prepare
        self._finish = finish
        self._concurrency = concurrency
        self.events = events
        self._parent_id = parent_id
        self._progress = progress
        self._background = Background()
        self._scope: anyio.CancelScope | None = None
        self._send: MemoryObjectSendStream[MapResult]
        self._receive: MemoryObjectReceiveStream[MapResult]
        self._send, self._receive = anyio.create_memory_object_stream[MapResult](math.inf)
        self._started = False
        self._closed = False
        self._failure: BaseException | None = None
        self._succeeded = 0
        self._failed = 0
        self.map_id: str | None = None

    # -- iteration ---------------------------------------------------------------

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> MapResult:
        await self.start()
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            if self._failure is not None:
                raise self._failure from None
            raise StopAsyncIteration from None

    async def start(self) -> str:
        """Store the run (when new) and start its items; returns the map id. Iterating
        starts the run too."""
        if not self._started:
            self._started = True
            try:
                map_id, store, pending, work, dump = await self._prepare()
            except BaseException:
                self._closed = True
                await self._send.aclose()
                raise
            self.map_id = map_id
            ready = anyio.Event()
            self._background.start_soon(self._drive, store, pending, work, dump, ready)
            await ready.wait()
        assert self.map_id is not None
        return self.map_id

    async def collect(self) -> list[MapResult]:
        """Every result of this run, in input order."""
        results = [result async for result in self]
        return sorted(results, key=lambda result: result.index)

    async def aclose(self) -> None:
        """Cancel the items still running and wait for them to stop."""
        self._closed = True
        if self._scope is not None:
            self._scope.cancel()
        await self._background.wait()
        await self._receive.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __del__(self) -> None:
        # A stream dropped without being closed still stops its items.
        if self._scope is not None:
            self._scope.cancel()

    # -- running -----------------------------------------------------------------

    async def _drive(
        self,
        store: _native.Store,
        pending: list[tuple[int, Any]],
        work: Work,
        dump: Dump,
        ready: anyio.Event,
    ) -> None:
        assert self.map_id is not None
        progress = _Progress(len(pending)) if self._progress else None
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                if self._closed:
                    scope.cancel()
                ready.set()
                await self._publish(EventName.MAP_STARTED, items=len(pending))
                queue = iter(pending)
                # The stream ends once the run's closing work is done, so a caller
                # that read every result finds the store as the run left it.
                async with self._send:
                    try:
                        async with anyio.create_task_group() as group:
                            for _ in range(min(self._concurrency, len(pending))):
                                group.start_soon(self._worker, store, queue, work, dump, progress)
                    except Exception as err:  # a bug in a worker: end the stream with it
                        log.exception("map %s failed", self.map_id)
                        self._failure = err
                    finally:
                        await self._close_run(progress)
                await self._publish(
                    EventName.MAP_COMPLETED, succeeded=self._succeeded, failed=self._failed
                )
        finally:
            # Nothing is left to cancel: a stream dropped after this, outside the
            # event loop, has no scope to reach for.
            self._scope = None

    async def _close_run(self, progress: _Progress | None) -> None:
        if progress is not None:
            progress.stop()
        if self._finish is not None:
            with anyio.CancelScope(shield=True):
                await self._finish()

    async def _worker(
        self,
        store: _native.Store,
        queue: Any,
        work: Work,
        dump: Dump,
        progress: _Progress | None,
    ) -> None:
        for index, item in queue:
            outcome = await work(index, item)
            result = MapResult(
                self.map_id or "",
                index,
                item,
                outcome.output,
                outcome.error_kind,
                outcome.error,
                outcome.attempts,
                outcome.usage,
                outcome.session_id,
            )
            try:
                # Not cancellable once begun: an outcome is stored whole or not at all.
                await write_now_or_in_thread(partial(_record, store, result, dump))
            except MapConflictError:
                log.warning(
                    "item %d of %s already succeeded; not recorded again", index, self.map_id
                )
                continue
            if result.ok:
                self._succeeded += 1
            else:
                self._failed += 1
            if progress is not None:
                progress.advance(result.ok)
            await self._publish(
                EventName.MAP_ITEM_COMPLETED,
                index=index,
                ok=result.ok,
                error_kind=result.error_kind,
                attempts=result.attempts,
            )
            if not self._closed:
                await self._send.send(result)

    async def _publish(self, name: EventName, **payload: Any) -> None:
        await self.events.apublish(
            name, self._parent_id or self.map_id or "", map_id=self.map_id, **payload
        )


def _record(store: _native.Store, result: MapResult, dump: Dump, *, wait: bool) -> bool | None:
    """Stores an item's outcome; without ``wait``, ``None`` where the write would wait."""
    output = None if not result.ok else json.dumps(dump(result.output), ensure_ascii=False)
    return _native.record_map_outcome(
        store,
        result.map_id,
        result.index,
        result.ok,
        output,
        result.error_kind,
        result.error,
        result.attempts,
        json.dumps(result.usage),
        result.session_id,
        wait=wait,
    )


def pending_items(
    store: _native.Store,
    map_id: str,
    *,
    retry_failed: bool,
    permanent: Sequence[str] = ("bad_input",),
) -> list[tuple[int, Any]]:
    """The items of a stored run still to run: those without an outcome, and with
    ``retry_failed`` those whose every outcome is a failure (but for failures no
    retry can mend)."""
    inputs = _native.map_inputs(store, map_id)
    outcomes = _native.map_outcomes(store, map_id)
    done: set[int] = set()
    for row in outcomes:
        if row.succeeded or not retry_failed or row.error_kind in permanent:
            done.add(row.idx)
    return [(index, json.loads(text)) for index, text in enumerate(inputs) if index not in done]


def stored_results(
    store: _native.Store, map_id: str, load: Callable[[Any], Any]
) -> list[MapResult]:
    """The outcome of each item of a run that has one, in input order: its success,
    else its last failure."""
    inputs = _native.map_inputs(store, map_id)
    latest: dict[int, _native.MapOutcome] = {}
    for row in _native.map_outcomes(store, map_id):
        if row.idx in latest and latest[row.idx].succeeded:
            continue
        latest[row.idx] = row
    return [
        MapResult(
            map_id,
            index,
            json.loads(inputs[index]),
            load(json.loads(row.output)) if row.succeeded and row.output is not None else None,
            None if row.succeeded else row.error_kind,
            row.error,
            row.attempts,
            json.loads(row.usage),
            row.session_id,
        )
        for index, row in sorted(latest.items())
    ]


class _Progress:
    """A rich progress bar on stderr, advanced as items complete."""

    def __init__(self, total: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self._bar = Progress(
            TextColumn("map"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[failed]} failed"),
            TimeElapsedColumn(),
        )
        self._task = self._bar.add_task("map", total=total, failed=0)
        self._failed = 0
        self._bar.start()

    def advance(self, ok: bool) -> None:
        self._failed += 0 if ok else 1
        self._bar.update(self._task, advance=1, failed=self._failed)

    def stop(self) -> None:
        self._bar.stop()
