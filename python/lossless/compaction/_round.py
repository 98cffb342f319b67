"""One compaction round's work: its first steps in one native call, the model's
leaves, condensing and the commits. It is handed the round's rules and how to run
a model call that an abort may cancel; the lock, the lease and the triggers stay
with the engine (`engine.py`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypeVar

import anyio

from lossless import _native
from lossless.compaction._result import CompactionResult
from lossless.compaction.levels import Candidate, Summariser
from lossless.config import Config
from lossless.events import EventBus, EventName

__all__ = ["FirstSteps", "RoundWork"]

_T = TypeVar("_T")


class Abortable(Protocol):
    """Awaits ``func(*args)`` (a model call) while the lease is renewed; None when an
    abort cancelled it or the lease was lost meanwhile."""

    async def __call__(self, func: Callable[..., Awaitable[_T]], /, *args: Any) -> _T | None: ...


@dataclass(frozen=True, slots=True)
class FirstSteps:
    """What a round did before its first model call, as ``Store.compaction_round``
    reports it: the prune, then either a committed built-in summary or the span a
    model is to summarise."""

    outcome: _native.RoundResult

    @property
    def span(self) -> _native.Span | None:
        """The span for the model; None when the round's store work is finished."""
        return self.outcome.span

    @property
    def view_after(self) -> int | None:
        """The view's size read after the round's last write, when it is finished."""
        return self.outcome.view_after


class RoundWork:
    """The steps of one session's compaction rounds."""

    def __init__(
        self,
        *,
        store: Callable[[], _native.Store],
        session_id: str,
        config: Config,
        bus: EventBus,
        summariser: Summariser,
        rules: Callable[[], _native.RoundRules],
        abortable: Abortable,
        aborted: Callable[[], bool],
    ) -> None:
        self._store_of = store
        self._session_id = session_id
        self._config = config
        self._bus = bus
        self._summariser = summariser
        self._rules = rules
        self._abortable = abortable
        self._aborted = aborted
        #: The view's size read in the worker thread right after the current round's
        #: last write, when the round ended in its first steps.
        self.view_after_round: int | None = None

    @property
    def _store(self) -> _native.Store:
        """The session's store, as the engine holds it now."""
        return self._store_of()

    async def _call(self, func: Callable[..., _T], *args: Any) -> _T:
        return await anyio.to_thread.run_sync(partial(func, *args))

    async def _view_tokens(self) -> int:
        stats = await self._call(self._store.view_stats, self._session_id)
        return stats.tokens

    async def one_round(
        self, result: CompactionResult, before: int, steps: FirstSteps | None
    ) -> int:
        """Prune or summarise the span before the protected tail, then condense when
        the view stays above the goal. A prune that writes is the round's one change
        (a provider's cache then loses the request once per round, not twice).
        ``before`` is the view's size as the round starts; ``steps`` its first steps
        when they were already taken. Returns the tokens taken out of the view."""
        rules = self._rules()
        if steps is None:
            steps = await self._call(self.first_steps, rules, before)
        saved = await self._record_steps(steps.outcome, result)
        span = steps.span
        pruned = bool(steps.outcome.pruned.pruned_parts)
        if span is not None:
            saved += await self._model_leaf(span, rules, result)
        elif steps.view_after is not None and (
            pruned or steps.view_after <= rules.goal or self._aborted()
        ):
            # The round ended in its first steps: the view was read after its last write.
            self.view_after_round = steps.view_after
            return saved
        if self._aborted():
            return saved
        return saved + await self._condense(result)

    async def last_resort_prune(self, result: CompactionResult) -> int:
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
        await self._record_prune(pruned, result)
        return pruned.tokens_saved

    async def _record_steps(self, outcome: _native.RoundResult, result: CompactionResult) -> int:
        """Adds a round's first steps to ``result``; returns the tokens they saved."""
        await self._record_prune(outcome.pruned, result)
        result.attempts.extend(outcome.attempts)
        for committed in outcome.committed:
            self._record(committed, committed.level, committed.messages, result)
        return outcome.saved

    async def _record_prune(self, pruned: _native.PruneResult, result: CompactionResult) -> None:
        """Adds a prune to ``result`` and publishes it, when it tombstoned anything."""
        if not pruned.pruned_parts:
            return
        result.pruned_parts += pruned.pruned_parts
        result.pruned_tokens += pruned.tokens_saved
        # The event's payload is the prune's fields, by name.
        await self._bus.apublish(
            EventName.PRUNE_COMPLETED, self._session_id, via=self._store, **pruned
        )

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
        if candidates is None or self._aborted():
            return 0
        saved = 0
        for run, candidate in zip(runs, candidates, strict=True):
            if candidate is None or self._aborted():
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

    def first_steps(self, rules: _native.RoundRules, before: int) -> FirstSteps:
        """The steps of a round up to its first model call, in one native call (in a
        worker thread): the prune, which is the round's one change when it writes, or
        else the span and, with the built-in summariser, its summary or truncation,
        committed when it shrinks the view."""
        model = self._summariser.model is not None
        outcome = self._store.compaction_round(self._session_id, rules, before, model)
        return FirstSteps(outcome)

    async def _condense(self, result: CompactionResult) -> int:
        """Merge the live summaries while the view is above the goal, aiming at it.
        One live summary is condensed alone when the rest of the view is within the
        goal (in a small window, a summary written before the view grew around it).
        Returns the tokens taken out of the view."""
        saved = 0
        rules = self._rules()
        for _ in range(self._config.compaction.max_rounds):
            view = await self._view_tokens()
            if self._aborted() or view <= rules.goal:
                break
            live = await self._call(self._store.live_summaries, self._session_id)
            # A parent over a bounded number of children, the oldest first: expanding
            # any summary to its direct children stays a modest read.
            live = live[: self._config.compaction.condense_max_children]
            total = sum(row.token_count for row in live)
            target = rules.condense_target(view, total)
            # A lone summary is worth condensing only when it is what keeps the view
            # above the goal, and only if it can shrink.
            alone = len(live) == 1 and (
                view - total >= rules.goal or not _native.RoundRules.shrinks(target, total)
            )
            if not live or alone:
                break
            candidate = await self._abortable(self._summariser.condense, live, target)
            if candidate is None or self._aborted():
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
        self,
        committed: _native.CommitResult | _native.RoundCommit,
        level: int,
        messages: int,
        result: CompactionResult,
    ) -> int:
        """Adds a commit (as ``Store.commit_summary`` or a round reports it) to
        ``result``; returns the tokens it took out of the view."""
        result.summary_ids.append(committed.summary_id)
        result.levels.append(level)
        result.messages_covered += messages
        return committed.tokens_before - committed.tokens_after
