"""The compaction engine: when to compact, one round at a time, never raising."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup

from lossless import _native
from lossless.compaction.levels import MIN_SUMMARY_TOKENS, Candidate, Summariser
from lossless.config import Config
from lossless.errors import CompactionBusyError
from lossless.events import EventBus, EventName
from lossless.models import Budget

__all__ = ["CompactionEngine", "CompactionResult"]

log = logging.getLogger("lossless.compaction")

Status = Literal["completed", "not_needed", "stalled", "busy", "aborted", "failed"]

# Share of the soft limit a summary may not use, so the view lands clearly below it
# and the next turn does not start another round at once.
HEADROOM = 0.1


@dataclass
class CompactionResult:
    """What one call of :meth:`CompactionEngine.run_compaction` did."""

    session_id: str
    status: Status = "completed"
    reason: str = ""
    rounds: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    summary_ids: list[str] = field(default_factory=list)
    levels: list[int] = field(default_factory=list)
    messages_covered: int = 0
    pruned_parts: int = 0
    pruned_tokens: int = 0
    duration_s: float = 0.0
    error: str | None = None


class CompactionEngine:
    """Keeps one session's view within its budget.

    A soft-threshold crossing starts a round in the session's task group; a
    hard-threshold crossing makes the caller wait for it. Rounds of one session
    never overlap: within a process an ``anyio.Lock`` orders them, across
    processes a lease row in the store does.
    """

    def __init__(
        self,
        *,
        store: _native.Store,
        session_id: str,
        config: Config,
        budget: Callable[[], Budget],
        bus: EventBus,
        summariser: Summariser,
    ) -> None:
        self._store = store
        self._session_id = session_id
        self._config = config
        self._budget = budget
        self._bus = bus
        self._summariser = summariser
        self._lock = anyio.Lock()
        self._done: anyio.Event | None = None
        self._abort = False
        self._holder = f"{uuid.uuid4().hex}"
        self.last_result: CompactionResult | None = None

    @property
    def pending(self) -> bool:
        """A background round was started and has not finished."""
        return self._done is not None and not self._done.is_set()

    def is_soft_overflow(self, view_tokens: int) -> bool:
        return self._config.compaction.enabled and view_tokens > self._budget().soft_limit

    def is_hard_overflow(self, view_tokens: int) -> bool:
        return view_tokens > self._budget().usable

    def check_and_trigger(self, view_tokens: int, task_group: TaskGroup | None) -> bool:
        """Start a background round if the view is over the soft threshold and none runs."""
        if not self.is_soft_overflow(view_tokens) or self.pending or task_group is None:
            return False
        self._bus.publish(
            EventName.COMPACTION_TRIGGERED,
            self._session_id,
            view_tokens=view_tokens,
            soft_limit=self._budget().soft_limit,
        )
        done = anyio.Event()
        self._done = done
        task_group.start_soon(self._background, done)
        return True

    async def _background(self, done: anyio.Event) -> None:
        try:
            await self.run_compaction()
        finally:
            done.set()

    async def wait_for_pending(self) -> None:
        """Return once the background round (if any) finished."""
        if self._done is not None:
            await self._done.wait()

    def abort(self) -> None:
        """Ask a running compaction to stop before its next step; nothing half-done is kept."""
        self._abort = True

    async def run_compaction(self, *, force: bool = False) -> CompactionResult:
        """Compact until the view is under the soft threshold, or no round helps.

        Never raises: a failure is published as an event and leaves the store as it
        was (every commit is one transaction).
        """
        started = time.perf_counter()
        result = CompactionResult(self._session_id)
        self._abort = False
        try:
            async with self._lock:
                await self._with_lease(result, force)
        except Exception as err:
            log.exception("compaction of %s failed", self._session_id)
            result.status, result.error = "failed", f"{type(err).__name__}: {err}"
            result.reason = "an unexpected error stopped the round; the store is unchanged by it"
        result.duration_s = time.perf_counter() - started
        try:
            result.tokens_after = await self._view_tokens()
        except Exception:
            result.tokens_after = result.tokens_before
        self.last_result = result
        self._publish_result(result)
        return result

    def _publish_result(self, result: CompactionResult) -> None:
        name = {
            "failed": EventName.COMPACTION_FAILED,
            "stalled": EventName.COMPACTION_STALLED,
        }.get(result.status, EventName.COMPACTION_COMPLETED)
        self._bus.publish(
            name,
            self._session_id,
            status=result.status,
            reason=result.reason,
            rounds=result.rounds,
            levels=result.levels,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            messages_covered=result.messages_covered,
            summary_ids=result.summary_ids,
            pruned_parts=result.pruned_parts,
            pruned_tokens=result.pruned_tokens,
            duration_s=round(result.duration_s, 6),
            error=result.error,
        )

    async def _call(self, func: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(partial(func, *args))

    async def _view_tokens(self) -> int:
        stats = await self._call(self._store.view_stats, self._session_id)
        return int(stats["tokens"])

    async def _with_lease(self, result: CompactionResult, force: bool) -> None:
        ttl_ms = int(self._config.compaction.lease_ttl_s * 1000)
        if not await self._call(self._store.acquire_compaction_lease, self._session_id, self._holder, ttl_ms):
            result.status, result.reason = "busy", "another process holds this session's compaction lease"
            return
        try:
            await self._rounds(result, force)
        finally:
            with anyio.CancelScope(shield=True):
                await self._call(self._store.release_compaction_lease, self._session_id, self._holder)

    async def _rounds(self, result: CompactionResult, force: bool) -> None:
        result.tokens_before = await self._view_tokens()
        for _ in range(self._config.compaction.max_rounds):
            before = await self._view_tokens()
            soft = self._budget().soft_limit
            if before <= soft and not (force and result.rounds == 0):
                result.status = "completed" if result.rounds else "not_needed"
                result.reason = f"view holds {before} tokens, within the soft limit of {soft}"
                return
            if self._abort:
                result.status, result.reason = "aborted", "aborted before the next round"
                return
            result.rounds += 1
            try:
                await self._one_round(result)
            except CompactionBusyError as err:
                # Sources left the view under us (another writer compacted): plan again.
                result.reason = str(err)
                continue
            after = await self._view_tokens()
            if after >= before:
                result.status = "stalled"
                result.reason = self._stall_reason(before, soft)
                return
        after = await self._view_tokens()
        if after > self._budget().soft_limit:
            result.status = "stalled"
            result.reason = f"{self._config.compaction.max_rounds} rounds left {after} tokens in the view"

    def _stall_reason(self, tokens: int, soft: int) -> str:
        return (
            f"no progress: the view holds {tokens} tokens (soft limit {soft}) and what remains is the "
            f"protected tail of the last {self._config.compaction.protect_user_turns} user turns, "
            "summaries that cannot shrink further, or both"
        )

    async def _one_round(self, result: CompactionResult) -> None:
        compaction = self._config.compaction
        pruned = await self._call(
            self._store.prune,
            self._session_id,
            compaction.prune_protect_tokens,
            compaction.prune_minimum_tokens,
            list(compaction.protected_tools),
            compaction.protect_user_turns,
        )
        if pruned["pruned_parts"]:
            result.pruned_parts += pruned["pruned_parts"]
            result.pruned_tokens += pruned["tokens_saved"]
            self._bus.publish(EventName.PRUNE_COMPLETED, self._session_id, **pruned)
        span = await self._call(self._store.compaction_span, self._session_id, compaction.protect_user_turns)
        if span["message_ids"] and not self._abort:
            budget = self._budget()
            rest = span["view_tokens"] - span["tokens"]
            room = int(budget.soft_limit * (1 - HEADROOM)) - rest
            target = min(compaction.summary_max_tokens, max(room, MIN_SUMMARY_TOKENS))
            candidate = await self._summariser.summarise(span["message_ids"], target, span["tokens"])
            if candidate.token_count < span["tokens"] and not self._abort:
                await self._commit(candidate, result)
        await self._condense(result)

    async def _condense(self, result: CompactionResult) -> None:
        for _ in range(self._config.compaction.max_rounds):
            if self._abort or await self._view_tokens() <= self._budget().soft_limit:
                return
            live = await self._call(self._store.live_summaries, self._session_id)
            if len(live) < 2:
                return
            target = min(self._config.compaction.summary_max_tokens, sum(int(row["token_count"]) for row in live) // 2)
            candidate = await self._summariser.condense(live, target)
            if candidate.token_count >= sum(int(row["token_count"]) for row in live):
                return
            await self._commit(candidate, result)

    async def _commit(self, candidate: Candidate, result: CompactionResult) -> None:
        committed = await self._call(
            self._store.commit_summary,
            self._session_id,
            candidate.text,
            candidate.level,
            candidate.message_ids,
            candidate.summary_ids,
        )
        result.summary_ids.append(committed["summary_id"])
        result.levels.append(candidate.level)
        result.messages_covered += len(candidate.message_ids)
