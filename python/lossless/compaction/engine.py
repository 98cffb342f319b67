"""The compaction engine: when to compact, one round at a time, never raising."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, TypeVar

import anyio

from lossless import _native, ledger
from lossless._background import Spawner
from lossless.compaction import ledger_model
from lossless.compaction._result import CompactionResult
from lossless.compaction._round import FirstSteps, RoundWork
from lossless.compaction.levels import Summariser
from lossless.config import Config
from lossless.errors import CompactionBusyError
from lossless.events import Event, EventBus, EventName
from lossless.ledger import LedgerUpdate
from lossless.models import Budget
from lossless.ports import CompactionTracing

__all__ = ["CompactionEngine", "CompactionResult"]

log = logging.getLogger("lossless.compaction")

_T = TypeVar("_T")

# What a summary costs in the view beyond its text (the core's ``plan`` module holds
# this and every other rule of a round: its goal, tail, prune minimum, leaf target).
SUMMARY_FRAMING_TOKENS = _native.SUMMARY_FRAMING_TOKENS


@dataclass(frozen=True, slots=True)
class _Opening:
    """What the first hop of a compaction did, holding the session's lease."""

    # The view's size once the lease was taken.
    before: int
    # The first round's steps, when a round was due.
    steps: FirstSteps | None = None
    # The view's size read as the lease was given back, when this hop gave it back.
    after: int | None = None
    # Why the first round stopped when the view changed under it; the round loop
    # plans again, still holding the lease.
    busy: CompactionBusyError | None = None


class CompactionEngine:
    """Keeps one session's view within its budget.

    A soft-threshold crossing starts a round in the background; a
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
        self._running = False
        self._abort = False
        self._scope: anyio.CancelScope | None = None
        self._holder = f"{uuid.uuid4().hex}"
        self._work = RoundWork(
            store=lambda: self._store,
            session_id=session_id,
            config=config,
            bus=bus,
            summariser=summariser,
            rules=self._rules,
            abortable=self._abortable,
            aborted=lambda: self._abort,
        )
        # A write crossed the soft limit while a round ran (see check_and_trigger).
        self._grew_during_round = False
        self.last_result: CompactionResult | None = None
        # Tells how many tokens of the last request's cached prefix the view as it is
        # now no longer repeats (the session sets it); None when it cannot tell.
        self.measure_invalidated: Callable[[], int | None] = lambda: None
        #: Compactions that changed the view (a summary or a prune), counted.
        self.changes = 0
        #: A span around each compaction (the session's telemetry, when on).
        self.tracing: CompactionTracing | None = None

    @property
    def pending(self) -> bool:
        """A background round was started and has not finished."""
        return self._done is not None and not self._done.is_set()

    def is_soft_overflow(self, view_tokens: int) -> bool:
        return self._config.compaction.enabled and view_tokens > self._budget().soft_limit

    def is_hard_overflow(self, view_tokens: int) -> bool:
        return self._config.compaction.enabled and view_tokens > self._budget().usable

    def is_far_behind(self, view_tokens: int) -> bool:
        """The view has grown past twice the usable budget: turns are being recorded
        faster than rounds can summarise them (decision 74)."""
        return self._config.compaction.enabled and view_tokens > 2 * self._budget().usable

    def check_and_trigger(self, view_tokens: int, background: Spawner | None) -> bool:
        """Start a background round if the view is over the soft threshold and none runs.
        A write that finds a round running is remembered: the round may have read the
        view before it, so the view is checked again when the round ends."""
        if not self.is_soft_overflow(view_tokens) or background is None:
            return False
        if self.pending:
            self._grew_during_round = True
            return False
        self._start(background, self._triggered(view_tokens), force=False)
        return True

    def request(self, reason: str, background: Spawner | None) -> bool:
        """Start a background round even under the soft threshold (the arena asks
        for one when its floors cannot be met), unless one runs already."""
        if not self._config.compaction.enabled or self.pending or background is None:
            return False
        requested = Event(EventName.COMPACTION_REQUESTED, self._session_id, {"reason": reason})
        self._start(background, requested, force=True)
        return True

    def _start(self, background: Spawner, cause: Event, *, force: bool) -> None:
        """Starts a round in the background for ``cause``: handlers hear of it before
        the turn returns; the round records it."""
        self._bus.deliver(cause)
        done = anyio.Event()
        self._done = done
        background.start_soon(self._background, done, cause, force)

    async def _background(self, done: anyio.Event, triggered: Event, force: bool = False) -> None:
        self._grew_during_round = False
        try:
            await self._bus.apersist(triggered, via=self._store)
            await self.run_compaction(force=force)
            while self._grew_during_round:
                # Turns written while the round ran found it pending and started none;
                # a round that stalled or ended on the view it had read would leave
                # them over the soft limit until the next model turn's hard-limit wait.
                self._grew_during_round = False
                view_tokens = await self._view_tokens()
                if not self.is_soft_overflow(view_tokens):
                    break
                again = self._triggered(view_tokens)
                self._bus.deliver(again)
                await self._bus.apersist(again, via=self._store)
                await self.run_compaction()
        finally:
            done.set()

    def _triggered(self, view_tokens: int) -> Event:
        return Event(
            EventName.COMPACTION_TRIGGERED,
            self._session_id,
            {"view_tokens": view_tokens, "soft_limit": self._budget().soft_limit},
        )

    async def wait_for_pending(self) -> None:
        """Return once the background round (if any) finished."""
        if self._done is not None:
            await self._done.wait()

    def abort(self) -> None:
        """Stop the running (or started) compaction before its next step.

        A summariser call in flight is cancelled; nothing half-done is kept, since
        every commit is one transaction. Does nothing when no compaction runs.
        """
        if not (self._running or self.pending):
            return
        self._abort = True
        if self._scope is not None:
            self._scope.cancel()

    async def run_compaction(self, *, force: bool = False) -> CompactionResult:
        """Compact until the view is under the soft threshold, or no round helps.

        With ``force``, one round runs even under the threshold. Never raises: a
        failure is published as an event and leaves the store as it was (every
        write is one transaction).
        """
        if self.tracing is None:
            return await self._run_compaction(force)
        with self.tracing.compaction():
            return await self._run_compaction(force)

    async def _run_compaction(self, force: bool) -> CompactionResult:
        started = time.perf_counter()
        result = CompactionResult(self._session_id)
        after: int | None = None
        try:
            async with self._lock:
                self._running = True
                try:
                    after = await self._with_lease(result, force)
                finally:
                    self._running = False
                    self._abort = False
        except Exception as err:
            log.exception("compaction of %s failed", self._session_id)
            result.status, result.error = "failed", f"{type(err).__name__}: {err}"
            result.reason = (
                "an unexpected error stopped the round; what it had not committed was dropped"
            )
        if result.summary_ids:
            result.ledger = await self._absorb_ledger()
        result.duration_s = time.perf_counter() - started
        try:
            result.tokens_after = await self._view_tokens() if after is None else after
        except Exception:
            result.tokens_after = result.tokens_before
        if result.summary_ids or result.pruned_parts:
            self.changes += 1
            result.invalidated_tokens = self._invalidated()
        self.last_result = result
        await self._publish_result(result)
        return result

    async def _absorb_ledger(self) -> LedgerUpdate | None:
        """Reads the messages the round took out of the view into the ledger. A
        failure leaves the ledger as it was; the next round reads them (it starts
        where the stored mark says)."""
        arena = self._config.arena
        if not (arena.enabled and arena.ledger):
            return None
        try:
            caps = ledger.ledger_caps(arena, self._budget().usable)
            update = await self._call(ledger.absorb, self._store, self._session_id, caps)
        except Exception:
            log.warning("could not update the ledger of %s", self._session_id, exc_info=True)
            return None
        try:
            update = await self._model_items(caps, update)
        except Exception:
            log.warning(
                "could not add the model's ledger items of %s", self._session_id, exc_info=True
            )
        if update.added or update.removed:
            await self._bus.apublish(
                EventName.LEDGER_UPDATED,
                self._session_id,
                via=self._store,
                added=update.added,
                changed=update.changed,
                stable_tokens=update.stable_tokens,
                volatile_tokens=update.volatile_tokens,
                left_out=update.left_out,
            )
        return update

    async def _model_items(self, caps: tuple[int, int], update: LedgerUpdate) -> LedgerUpdate:
        """The items the summarisation model reads out of the spans it summarised,
        checked (``ledger_model.check_items``) and stored after the built-in rules'
        own, which stand whatever the model gets wrong."""
        sources, self._summariser.ledger_sources = self._summariser.ledger_sources, []
        model = self._summariser.model
        if model is None or not sources or not self._config.compaction.ledger_model:
            return update
        for source in sources:
            try:
                reply = await ledger_model.ask_model(
                    model, source, self._config.llm, max_tokens=max(caps[0], 256)
                )
            except Exception as err:
                log.warning("the ledger's model call for %s failed: %s", self._session_id, err)
                continue
            checked = ledger_model.check_items(reply, source)
            for reason in checked.refused:
                log.info("a model's ledger item was refused: %s", reason)
            if checked.edits:
                row = await self._call(
                    self._store.ledger_edit, self._session_id, checked.edits, *caps, "model"
                )
                update = replace(
                    ledger.LedgerUpdate._of(row),
                    added=update.added + row.added,
                    changed=update.changed + row.changed,
                    absorbed_seq=update.absorbed_seq,
                )
        return update

    def _invalidated(self) -> int | None:
        try:
            return self.measure_invalidated()
        except Exception:
            # A figure for the report: a failure to tell it changes nothing stored.
            log.warning("could not measure the cache a compaction invalidated", exc_info=True)
            return None

    async def _publish_result(self, result: CompactionResult) -> None:
        name = {
            "failed": EventName.COMPACTION_FAILED,
            "stalled": EventName.COMPACTION_STALLED,
        }.get(result.status, EventName.COMPACTION_COMPLETED)
        await self._bus.apublish(
            name,
            self._session_id,
            via=self._store,
            status=result.status,
            reason=result.reason,
            rounds=result.rounds,
            level=max(result.levels) if result.levels else None,
            levels=result.levels,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            messages_covered=result.messages_covered,
            summary_ids=result.summary_ids,
            pruned_parts=result.pruned_parts,
            pruned_tokens=result.pruned_tokens,
            duration_s=round(result.duration_s, 6),
            attempts=result.attempts,
            error=result.error,
            invalidated_tokens=result.invalidated_tokens,
        )

    async def _call(self, func: Callable[..., _T], *args: Any) -> _T:
        return await anyio.to_thread.run_sync(partial(func, *args))

    async def _abortable(self, func: Callable[..., Awaitable[_T]], *args: Any) -> _T | None:
        """``await func(*args)`` (a model call) while the lease is renewed, or None if
        :meth:`abort` cancelled it or the lease was lost meanwhile."""
        with anyio.CancelScope() as scope:
            self._scope = scope
            if self._abort:
                scope.cancel()
            try:
                return await self._renewing_lease(scope, func, *args)
            finally:
                self._scope = None
        return None

    async def _renewing_lease(
        self, scope: anyio.CancelScope, func: Callable[..., Awaitable[_T]], *args: Any
    ) -> _T:
        """``await func(*args)`` while a task renews the lease every third of its
        lifetime, so a slow model call cannot outlive it. A lease another process took
        meanwhile (this one expired) aborts the round and cancels ``scope``."""
        ttl_s = self._config.compaction.lease_ttl_s
        results: list[_T] = []

        async def renew() -> None:
            while True:
                await anyio.sleep(ttl_s / 3)
                held = await self._call(
                    self._store.acquire_compaction_lease,
                    self._session_id,
                    self._holder,
                    int(ttl_s * 1000),
                )
                if not held:
                    log.warning("compaction of %s lost its lease", self._session_id)
                    self._abort = True
                    scope.cancel()
                    return

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(renew)
                results.append(await func(*args))
                group.cancel_scope.cancel()
        except BaseExceptionGroup as group_error:
            # The call's own failure, not a group of one: callers handle it by type.
            if len(group_error.exceptions) == 1:
                raise group_error.exceptions[0] from None
            raise
        return results[0]

    async def _view_tokens(self) -> int:
        stats = await self._call(self._store.view_stats, self._session_id)
        return stats.tokens

    def _rules(self) -> _native.RoundRules:
        """The limits of a round under the current budget."""
        compaction = self._config.compaction
        return _native.RoundRules(
            self._budget().soft_limit,
            tail_tokens=compaction.tail_tokens,
            tail_messages=compaction.tail_messages,
            user_turns=compaction.protect_user_turns,
            prune_protect_tokens=compaction.prune_protect_tokens,
            prune_minimum_tokens=compaction.prune_minimum_tokens,
            protected_tools=list(compaction.protected_tools),
            summary_max_tokens=compaction.summary_max_tokens,
            leaf_chunk_tokens=compaction.leaf_chunk_tokens,
            usable=self._budget().usable,
        )

    def _goal(self) -> int:
        """Where a round aims the view: summaries are sized to land there and
        condensed while the view is above it."""
        return self._rules().goal

    @property
    def goal(self) -> int:
        """Where a round aims the view under the current budget."""
        return self._goal()

    async def _with_lease(self, result: CompactionResult, force: bool) -> int | None:
        """Runs the rounds holding the session's compaction lease; returns the view's
        size once the lease is given back (None when another process held it)."""
        ttl_ms = int(self._config.compaction.lease_ttl_s * 1000)
        opening = await self._call(self._open, ttl_ms, force)
        if opening is None:
            result.status, result.reason = (
                "busy",
                "another process holds this session's compaction lease",
            )
            return None
        try:
            await self._rounds(result, force, opening)
        finally:
            if opening.after is None:
                with anyio.CancelScope(shield=True):
                    after = await self._call(self._release_lease)
            else:
                after = opening.after
        return after

    def _open(self, ttl_ms: int, force: bool) -> _Opening | None:
        """The first hop of a compaction, in one worker thread: takes the lease (None if
        another process holds it), reads the view's size and, when a round is due,
        takes its first steps. When those end the compaction (the view is within the
        round's goal, or no round is due) the lease is given back in the same hop."""
        if not self._store.acquire_compaction_lease(self._session_id, self._holder, ttl_ms):
            return None
        try:
            before = self._store.view_stats(self._session_id).tokens
            if self._abort or (before <= self._budget().soft_limit and not force):
                return _Opening(before, after=self._release_lease())
            rules = self._rules()
            try:
                steps = self._work.first_steps(rules, before)
            except CompactionBusyError as err:
                return _Opening(before, busy=err)
            if steps.view_after is not None and steps.view_after <= rules.goal:
                return _Opening(before, steps, self._release_lease())
            return _Opening(before, steps)
        except BaseException:
            self._store.release_compaction_lease(self._session_id, self._holder)
            raise

    def _release_lease(self) -> int:
        """Gives the lease back; returns the view's size."""
        self._store.release_compaction_lease(self._session_id, self._holder)
        return self._store.view_stats(self._session_id).tokens

    async def _rounds(self, result: CompactionResult, force: bool, opening: _Opening) -> None:
        before = result.tokens_before = opening.before
        # The first round's steps were taken in the opening hop.
        steps, busy = opening.steps, opening.busy
        for _ in range(self._config.compaction.max_rounds):
            soft = self._budget().soft_limit
            forced = force and result.rounds == 0
            if before <= soft and not forced:
                result.status = "completed" if result.rounds else "not_needed"
                result.reason = f"view holds {before} tokens, within the soft limit of {soft}"
                return
            if self._abort:
                result.status, result.reason = "aborted", "aborted before the next round"
                return
            if steps is None and opening.after is not None:
                # The opening hop found the view within the goal and gave the lease
                # back; the budget has shrunk since. The next compaction starts here.
                result.status = "completed" if result.rounds else "not_needed"
                result.reason = (
                    f"view holds {before} tokens; the soft limit fell to {soft} after this "
                    "compaction gave its lease back"
                )
                return
            result.rounds += 1
            self._work.view_after_round = None
            first, steps = steps, None
            try:
                if busy is not None:
                    err, busy = busy, None
                    raise err
                saved = await self._work.one_round(result, before, first)
                # Progress is what the round took out of the view: turns recorded
                # meanwhile may have added more than that.
                if saved <= 0 and before > soft and not self._abort:
                    saved = await self._work.last_resort_prune(result)
            except CompactionBusyError as err:
                # The view changed under the round (a turn recorded meanwhile, another
                # process): plan again.
                result.reason = str(err)
                before = await self._view_tokens()
                continue
            if self._abort:
                result.status, result.reason = (
                    "aborted",
                    "aborted during the round; its uncommitted work was dropped",
                )
                return
            if saved <= 0:
                if before <= soft:
                    result.status = "not_needed"
                    result.reason = f"nothing to compact: {self._stall_reason(before, result)}"
                else:
                    result.status, result.reason = "stalled", self._stall_reason(before, result)
                return
            # A round that ended in its first steps read the view right after its
            # last write, in the same worker thread.
            if self._work.view_after_round is not None:
                before = self._work.view_after_round
            else:
                before = await self._view_tokens()
        after = before
        soft = self._budget().soft_limit
        if after > soft:
            result.status = "stalled"
            result.reason = (
                f"{self._config.compaction.max_rounds} rounds (compaction.max_rounds) left "
                f"{after} tokens in the view, over the soft limit of {soft}"
            )
        else:
            result.reason = f"view holds {after} tokens, within the soft limit of {soft}"

    def _stall_reason(self, tokens: int, result: CompactionResult) -> str:
        compaction = self._config.compaction
        reason = (
            f"no progress: the view holds {tokens} tokens (soft limit "
            f"{self._budget().soft_limit}) and what remains is the protected tail (at most "
            f"{self._rules().tail_tokens} tokens, {compaction.tail_messages} messages and "
            f"{compaction.protect_user_turns} user turns, and always the newest message), the "
            "newest user message, tool calls still running, summaries that cannot shrink "
            "further, or a mix of these"
        )
        if result.attempts:
            reason += f"; last summariser attempt: {result.attempts[-1]}"
        return reason
