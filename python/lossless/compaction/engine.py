"""The compaction engine: when to compact, one round at a time, never raising."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, TypeVar

import anyio

from lossless import _native
from lossless._background import Spawner
from lossless.compaction.levels import Candidate, Summariser
from lossless.config import Config
from lossless.errors import CompactionBusyError
from lossless.events import Event, EventBus, EventName
from lossless.models import Budget

__all__ = ["CompactionEngine", "CompactionResult"]

log = logging.getLogger("lossless.compaction")

Status = Literal["completed", "not_needed", "stalled", "busy", "aborted", "failed"]

_T = TypeVar("_T")

# What a summary costs in the view beyond its text (the core's ``plan`` module holds
# this and every other rule of a round: its goal, tail, prune minimum, leaf target).
SUMMARY_FRAMING_TOKENS = _native.SUMMARY_FRAMING_TOKENS


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
    # Why lower levels were skipped on the way to the ones in ``levels``.
    attempts: list[str] = field(default_factory=list)
    # Tokens of the session's last request a provider's prompt cache can no longer
    # serve after this compaction (what follows the first place it changed); None
    # when it changed nothing or no request was sent yet.
    invalidated_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class _FirstSteps:
    """What a round did before its first model call, as ``Store.compaction_round``
    reports it: the prune, then either a committed built-in summary or the span a
    model is to summarise."""

    outcome: dict[str, Any]

    @property
    def span(self) -> _native.Span | None:
        """The span for the model; None when the round's store work is finished."""
        span: _native.Span | None = self.outcome["span"]
        return span

    @property
    def view_after(self) -> int | None:
        """The view's size read after the round's last write, when it is finished."""
        view_after: int | None = self.outcome["view_after"]
        return view_after


@dataclass(frozen=True, slots=True)
class _Opening:
    """What the first hop of a compaction did, holding the session's lease."""

    # The view's size once the lease was taken.
    before: int
    # The first round's steps, when a round was due.
    steps: _FirstSteps | None = None
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
        # The view's size read in the worker thread right after the current round's
        # last write, when the round ended in its first steps.
        self._view_after_round: int | None = None
        # A write crossed the soft limit while a round ran (see check_and_trigger).
        self._grew_during_round = False
        self.last_result: CompactionResult | None = None
        # Tells how many tokens of the last request's cached prefix the view as it is
        # now no longer repeats (the session sets it); None when it cannot tell.
        self.measure_invalidated: Callable[[], int | None] = lambda: None
        #: Compactions that changed the view (a summary or a prune), counted.
        self.changes = 0

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
                steps = self._first_steps(rules, before)
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
            self._view_after_round = None
            first, steps = steps, None
            try:
                if busy is not None:
                    err, busy = busy, None
                    raise err
                saved = await self._one_round(result, before, first)
                # Progress is what the round took out of the view: turns recorded
                # meanwhile may have added more than that.
                if saved <= 0 and before > soft and not self._abort:
                    saved = await self._last_resort_prune(result)
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
            if self._view_after_round is not None:
                before = self._view_after_round
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

    async def _last_resort_prune(self, result: CompactionResult) -> int:
        """When a round could neither summarise nor prune at its usual thresholds (a
        large output beside a call still running keeps its whole message out of
        every summary), tombstones every completed output before the tail, however
        little that saves. Returns the tokens saved."""
        rules = self._rules()
        pruned = await self._call(
            self._store.prune,
            self._session_id,
            0,
            1,
            list(self._config.compaction.protected_tools),
            rules.user_turns,
            rules.tail_tokens,
            rules.tail_messages,
        )
        if pruned["pruned_parts"]:
            result.pruned_parts += pruned["pruned_parts"]
            result.pruned_tokens += pruned["tokens_saved"]
            await self._bus.apublish(
                EventName.PRUNE_COMPLETED, self._session_id, via=self._store, **pruned
            )
        return int(pruned["tokens_saved"])

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

    async def _one_round(
        self, result: CompactionResult, before: int, steps: _FirstSteps | None
    ) -> int:
        """Prune or summarise the span before the protected tail, then condense when
        the view stays above the goal. A prune that writes is the round's one change
        (a provider's cache then loses the request once per round, not twice).
        ``before`` is the view's size as the round starts; ``steps`` its first steps
        when they were already taken. Returns the tokens taken out of the view."""
        rules = self._rules()
        if steps is None:
            steps = await self._call(self._first_steps, rules, before)
        saved = await self._record_steps(steps.outcome, result)
        span = steps.span
        pruned = bool(steps.outcome["pruned"]["pruned_parts"])
        if span is not None:
            saved += await self._model_leaf(span, rules, result)
        elif steps.view_after is not None and (
            pruned or steps.view_after <= rules.goal or self._abort
        ):
            # The round ended in its first steps: the view was read after its last write.
            self._view_after_round = steps.view_after
            return saved
        if self._abort:
            return saved
        return saved + await self._condense(result)

    async def _record_steps(self, outcome: dict[str, Any], result: CompactionResult) -> int:
        """Adds a round's first steps to ``result``; returns the tokens they saved."""
        pruned = outcome["pruned"]
        if pruned["pruned_parts"]:
            result.pruned_parts += pruned["pruned_parts"]
            result.pruned_tokens += pruned["tokens_saved"]
            await self._bus.apublish(
                EventName.PRUNE_COMPLETED, self._session_id, via=self._store, **pruned
            )
        result.attempts.extend(outcome["attempts"])
        for committed in outcome["committed"]:
            self._record(committed, committed["level"], committed["messages"], result)
        return int(outcome["saved"])

    async def _model_leaf(
        self, span: _native.Span, rules: _native.RoundRules, result: CompactionResult
    ) -> int:
        """The model's summaries of ``span``, one leaf per run of at most
        ``leaf_chunk_tokens`` of messages (the calls run at once, within
        ``leaf_concurrency``), each within its own run's budget and committed, oldest
        first, when it shrinks the view. Returns the tokens taken out of the view."""
        planned = rules.leaf_runs(span)
        runs = [run for run, _ in planned]
        # Two summaries or more live after the leaves: condensation can take the view
        # the rest of the way to the goal, so a summary that shrinks its run well is
        # worth more than a truncation to the run's budget.
        condensable = len(planned) > 1 or span.summary_tokens > 0
        limiter = anyio.CapacityLimiter(self._config.compaction.leaf_concurrency)

        async def summarise_all() -> list[Candidate | None]:
            candidates: list[Candidate | None] = [None] * len(runs)

            async def summarise(index: int, run: _native.Span, target: int) -> None:
                async with limiter:
                    ceiling = rules.leaf_ceiling(target, run.tokens, condensable)
                    candidates[index] = await self._summariser.summarise(run, target, ceiling)

            try:
                async with anyio.create_task_group() as group:
                    for index, (run, target) in enumerate(planned):
                        group.start_soon(summarise, index, run, target)
            except BaseExceptionGroup as failed:
                # One run's failure, as itself: callers handle errors by type.
                raise failed.exceptions[0] from None
            return candidates

        candidates = await self._abortable(summarise_all)
        if candidates is None or self._abort:
            return 0
        saved = 0
        for run, candidate in zip(runs, candidates, strict=True):
            if candidate is None or self._abort:
                break
            saved += await self._commit_leaf(run, candidate, result)
        return saved

    async def _commit_leaf(
        self, run: _native.Span, candidate: Candidate, result: CompactionResult
    ) -> int:
        result.attempts.extend(candidate.attempts)
        # What the summary replaces: the run, or (a capped transcript) its head.
        covered = run.tokens if candidate.span is None else candidate.span.tokens
        if _native.RoundRules.shrinks(candidate.token_count, covered):
            return await self._commit(candidate, result)
        result.attempts.append(
            f"level {candidate.level}: {candidate.token_count} tokens would not shrink "
            f"{covered} tokens of messages; not committed"
        )
        return 0

    def _first_steps(self, rules: _native.RoundRules, before: int) -> _FirstSteps:
        """The steps of a round up to its first model call, in one native call (in a
        worker thread): the prune, which is the round's one change when it writes, or
        else the span and, with the built-in summariser, its summary or truncation,
        committed when it shrinks the view."""
        model = self._summariser.model is not None
        outcome = self._store.compaction_round(self._session_id, rules, before, model)
        return _FirstSteps(outcome)

    async def _condense(self, result: CompactionResult) -> int:
        """Merge the live summaries while the view is above the goal, aiming at it.
        One live summary is condensed alone when the rest of the view is within the
        goal (in a small window, a summary written before the view grew around it).
        Returns the tokens taken out of the view."""
        saved = 0
        rules = self._rules()
        for _ in range(self._config.compaction.max_rounds):
            view = await self._view_tokens()
            if self._abort or view <= rules.goal:
                break
            live = await self._call(self._store.live_summaries, self._session_id)
            # A parent over a bounded number of children, the oldest first: expanding
            # any summary to its direct children stays a modest read.
            live = live[: self._config.compaction.condense_max_children]
            total = sum(int(row["token_count"]) for row in live)
            target = rules.condense_target(view, total)
            # A lone summary is worth condensing only when it is what keeps the view
            # above the goal, and only if it can shrink.
            alone = len(live) == 1 and (
                view - total >= rules.goal or not _native.RoundRules.shrinks(target, total)
            )
            if not live or alone:
                break
            candidate = await self._abortable(self._summariser.condense, live, target)
            if candidate is None or self._abort:
                break
            result.attempts.extend(candidate.attempts)
            if not _native.RoundRules.shrinks(candidate.token_count, total):
                result.attempts.append(
                    f"condense level {candidate.level}: {candidate.token_count} tokens would not "
                    f"shrink {len(live)} summaries of {total} tokens; not committed"
                )
                break
            saved += await self._commit(candidate, result)
        return saved

    async def _commit(self, candidate: Candidate, result: CompactionResult) -> int:
        """Commits ``candidate``; returns the tokens it took out of the view."""
        committed = await self._call(
            self._store.commit_summary,
            self._session_id,
            candidate.text,
            candidate.level,
            [] if candidate.span is None else candidate.span,
            candidate.summary_ids,
        )
        return self._record(committed, candidate.level, candidate.message_count, result)

    def _record(
        self, committed: dict[str, Any], level: int, messages: int, result: CompactionResult
    ) -> int:
        """Adds a commit (as ``Store.commit_summary`` reports it) to ``result``; returns
        the tokens it took out of the view."""
        result.summary_ids.append(committed["summary_id"])
        result.levels.append(level)
        result.messages_covered += messages
        return int(committed["tokens_before"]) - int(committed["tokens_after"])
