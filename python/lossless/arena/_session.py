"""A session's arena: its writes, each turn's plan and where the plan goes."""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from lossless import _native
from lossless.arena._external import search_port, valid_hits
from lossless.arena._plan import (
    Planned,
    Prepared,
    essential_unmet,
    external_key,
    rendered_tokens,
    report_of,
    rules_of,
)
from lossless.arena._ports import LexicalRecallPort, RecallPort
from lossless.arena._types import (
    PRIORITIES,
    ArenaEntry,
    ArenaWriteResult,
    Priority,
)
from lossless.config import ZONES, ZoneName
from lossless.errors import ArenaFullError, InvalidInputError
from lossless.events import Event, EventName
from lossless.parts import Part, ToolPart

if TYPE_CHECKING:
    from lossless.ports import ArenaHost

__all__ = ["Prepared", "SessionArena"]

log = logging.getLogger("lossless")

#: Tool calls whose names the arena remembers, to know which tool a later update is for.
_CALLS_KEPT = 4_096

Write = tuple[str, str, str, str, str | None, bool, bool, int]

#: Plans made at most to fit a plan's rendered cost into its allowance.
_FIT_ATTEMPTS = 4


class SessionArena:
    """The arena of one session: ``session.arena``.

    Entries persist with the session; the newest write of a key wins. Use
    :meth:`add` for any zone, or the session's shortcuts (``pin``, ``set_task``,
    ``set_working_memory``). Failed tool calls enter ``tool_failures`` by themselves,
    and ``memory_recall`` is filled each turn from the session's own store.
    """

    def __init__(
        self,
        host: ArenaHost,
        *,
        check_open: Callable[[], None],
        request_compaction: Callable[[str], bool],
    ) -> None:
        self._host = host
        #: Raises when the session is closed; the arena writes nothing then.
        self._check_open = check_open
        #: Asks the session for a background round (the reason names why).
        self._request_compaction = request_compaction
        self.config = host.config.arena
        self._rules = rules_of(self.config, self.config.injection_cap_tokens)
        self._calls: OrderedDict[str, str] = OrderedDict()
        self._failing: OrderedDict[str, None] | None = None
        self._open_calls_read = False
        if self.enabled and self.config.reset_on_compaction:
            host.events.subscribe(self._after_compaction, EventName.COMPACTION_COMPLETED)
        self._default_port: RecallPort | None = None
        # The last recall and plan: the core hands back the same objects while
        # nothing they depend on changed, and so the turn reuses what it made of them.
        # The generation of the core's recall the kept `Prepared` was made from.
        self._recalled = 0
        self._prepared = Prepared()
        self._planned: Planned | None = None
        #: Writes made through :meth:`add` and :meth:`remove` (pins, task, working
        #: memory, identity): the session re-plans its block after any of them.
        self.user_writes = 0

    def forget_plans(self) -> None:
        """Drops what was kept of the last recall, plan and tool calls: the session
        goes on as another (a fork), whose arena is read afresh."""
        self._calls.clear()
        self._failing = None
        self._open_calls_read = False
        self._recalled = 0
        self._prepared = Prepared()
        self._planned = None

    @property
    def enabled(self) -> bool:
        return self.config.enabled

    # -- writing -------------------------------------------------------------

    async def add(
        self,
        zone: ZoneName,
        key: str,
        text: str,
        *,
        priority: Priority = "normal",
        once: bool = False,
    ) -> ArenaWriteResult:
        """Write ``text`` under ``key`` in ``zone``; the newest write of a key wins.

        Text longer than the zone's cap is cut to it (head and tail kept), which the
        result reports. An unknown zone or priority, a key that is not a non-empty
        string or an empty text raise :class:`InvalidInputError`; a new key refused at
        the entry ceiling raises :class:`ArenaFullError`. Either way nothing changes.
        """
        write = self._entry_write(zone, key, text, priority, once=once, source="user")
        self.user_writes += 1
        result = (await self._write([write]))[0]
        if not result.accepted:
            raise ArenaFullError(
                f"arena of session {self._host.id} is at its ceiling of "
                f"{self.config.max_entries} entries; {key!r} was not added "
                f"(policy {self.config.degradation_policy})"
            )
        return result

    async def remove(self, zone: ZoneName, key: str) -> bool:
        """Take the entry of ``key`` in ``zone`` out of the arena; whether it was
        there. Keys are per zone: an entry of another zone under the same key stays."""
        if zone not in ZONES:
            raise InvalidInputError(f"zone: unknown zone {zone!r}; expected one of {ZONES}")
        _check_key(key)
        write: Write = (zone, key, "user", "normal", None, False, False, 0)
        self.user_writes += 1
        return (await self._write([write]))[0].accepted

    def entries(self) -> list[ArenaEntry]:
        """The live entries, oldest first."""
        return [ArenaEntry(**row) for row in self._host.store.arena_entries(self._host.id)]

    def _entry_write(
        self,
        zone: str,
        key: object,
        text: object,
        priority: str,
        *,
        once: bool = False,
        source: str = "user",
        external: bool = False,
        cap: int | None = None,
    ) -> Write:
        if zone not in ZONES:
            raise InvalidInputError(f"zone: unknown zone {zone!r}; expected one of {ZONES}")
        _check_key(key)
        if not isinstance(text, str):
            raise InvalidInputError(f"text: expected str, got {type(text).__name__}")
        if not text.strip():
            raise InvalidInputError("text: must not be empty")
        if priority not in PRIORITIES:
            raise InvalidInputError(f"priority: expected one of {PRIORITIES}, got {priority!r}")
        limit = self.config.cap(zone) if cap is None else cap
        assert isinstance(key, str)
        return (zone, key, source, priority, text, once, external, limit)

    async def _write(self, writes: list[Write]) -> list[ArenaWriteResult]:
        rows = await self._write_rows(writes)
        return [
            ArenaWriteResult(row.key, row.accepted, row.tokens, row.cut_from, row.evicted)
            for row in rows
        ]

    async def _write_rows(self, writes: list[Write]) -> list[_native.ArenaWriteRow]:
        """The writes applied, as the core reports them (with each entry's ``seq``)."""
        host = self._host
        self._check_open()
        rows = await anyio.to_thread.run_sync(
            partial(host.store.arena_write, host.id, writes, self._rules)
        )
        for write, row in zip(writes, rows, strict=True):
            if row.enforced:
                await host.events.apublish(
                    EventName.ARENA_CEILING_ENFORCED,
                    host.id,
                    policy=self.config.degradation_policy,
                    key=row.key,
                    zone=write[0],
                    accepted=row.accepted,
                    evicted=row.evicted,
                )
            if row.compact:
                self._request_compaction("entry_ceiling")
        if self._failing is not None:
            for write, row in zip(writes, rows, strict=True):
                if write[0] == "tool_failures" and row.accepted:
                    self._note_failing(write[1], write[4] is not None)
        return rows

    async def _after_compaction(self, event: Event) -> None:
        """With ``reset_on_compaction``: a round that committed a summary starts the
        arena's learned state afresh."""
        summaries = event.payload.get("summary_ids") or []
        if event.session_id != self._host.id or not summaries:
            return
        host = self._host
        reset = Event(EventName.ARENA_RESET, host.id, {"reason": "compaction"})
        reset.payload["summary_ids"] = list(summaries)
        await anyio.to_thread.run_sync(
            host.store.arena_reset,
            host.id,
            reset.name.value,
            json.dumps(reset.payload),
        )
        host.events.deliver(reset)

    # -- tool failures ---------------------------------------------------------

    async def note_parts(self, parts: Sequence[Part]) -> None:
        """Takes in a stored turn's tool calls: failures enter ``tool_failures``, a
        success of a tool that failed takes its failure out."""
        if not self.enabled or self.config.tool_failures_kept == 0:
            return
        writes: list[Write] = []
        for part in parts:
            if not isinstance(part, ToolPart):
                continue
            self._remember_call(part.call_id, part.name)
            writes.extend(
                self._tool_outcome(part.name, part.status, part.output, part.error, part.input)
            )
        if writes:
            await self._write(writes)

    async def before_update(self, call_id: str) -> None:
        """Learns, once, the calls still open that were recorded before this session
        object existed (by another process, or before a load), so that an update of
        one of them is known by its tool's name."""
        if call_id in self._calls or self._open_calls_read or not self.enabled:
            return
        self._open_calls_read = True
        host = self._host
        calls = await anyio.to_thread.run_sync(host.store.open_tool_calls, host.id)
        for open_id, name in calls:
            self._calls.setdefault(open_id, name)

    async def note_update(
        self, call_id: str, status: str, output: str | None, error: str | None
    ) -> None:
        """Takes in an update of a recorded tool call (see :meth:`note_parts`)."""
        name = self._calls.get(call_id)
        if not self.enabled or name is None or self.config.tool_failures_kept == 0:
            return
        writes = self._tool_outcome(name, status, output, error, None)
        if writes:
            await self._write(writes)

    def _remember_call(self, call_id: str, name: str) -> None:
        self._calls[call_id] = name
        if len(self._calls) > _CALLS_KEPT:
            self._calls.popitem(last=False)

    def _tool_outcome(
        self, name: str, status: str, output: str | None, error: str | None, arguments: object
    ) -> list[Write]:
        failing = self._failing_tools()
        key = f"tool:{name}"
        if status == "completed" and key in failing:
            return [("tool_failures", key, "tool_failures", "high", None, False, False, 0)]
        if status != "error":
            return []
        lines = [f"{name} failed" + (f": {error}" if error else "")]
        if arguments not in (None, "", {}):
            lines.append(f"arguments: {json.dumps(arguments, default=str)[:300]}")
        if output:
            lines.append(output)
        text = "\n".join(lines)
        writes: list[Write] = [
            (
                "tool_failures",
                key,
                "tool_failures",
                "high",
                text,
                False,
                False,
                self.config.tool_failure_tokens,
            )
        ]
        # The newest few failures are kept; the oldest leaves for a new tool.
        others = [k for k in failing if k != key]
        excess = len(others) + 1 - self.config.tool_failures_kept
        for old in others[: max(0, excess)]:
            writes.append(("tool_failures", old, "tool_failures", "high", None, False, False, 0))
        return writes

    def _failing_tools(self) -> OrderedDict[str, None]:
        if self._failing is None:
            self._failing = OrderedDict(
                (entry.key, None) for entry in self.entries() if entry.zone == "tool_failures"
            )
        return self._failing

    def _note_failing(self, key: str, present: bool) -> None:
        assert self._failing is not None
        self._failing.pop(key, None)
        if present:
            self._failing[key] = None

    # -- a turn ----------------------------------------------------------------

    def recall_internal(self) -> Prepared:
        """This turn's internal recall for the newest user message (a core call of a
        few milliseconds at most, made directly). With internal recall off but
        external recall on, the newest user message without hits: the question
        external recall asks."""
        config = self.config
        internal = config.recall and config.recall_hits > 0
        if not (self.enabled and (internal or self._external_on)):
            return Prepared()
        host = self._host
        question, hits, generation = host.store.recall_newest(
            host.id, config.recall_hits if internal else 0, config.recall_hit_tokens
        )
        if generation != self._recalled:
            self._recalled, self._prepared = generation, Prepared(question, hits)
        return self._prepared

    async def prepare(self) -> Prepared:
        """Internal recall, then external recall when it is on and the internal best
        score is below the threshold. A port that fails is skipped with an event."""
        prepared = self.recall_internal()
        config = self.config
        if not (self.enabled and self._external_on and prepared.question):
            return prepared
        best = prepared.best_internal
        threshold = config.external_min_internal_score
        if best is not None and best >= threshold:
            await self._skipped(prepared, "internal_score_sufficient")
            return prepared
        port = config.recall_port or await self._builtin_port()
        try:
            with anyio.fail_after(config.external_timeout_s):
                found = await search_port(port, prepared.question or "", config.external_hits)
        except TimeoutError:
            await self._skipped(prepared, "timeout")
            return prepared
        except Exception as err:
            log.warning("external recall failed", exc_info=True)
            await self._skipped(prepared, "port_error", error=f"{type(err).__name__}: {err}")
            return prepared
        hits = valid_hits(found)
        if hits is None:
            await self._skipped(prepared, "junk", returned=type(found).__name__)
        elif not hits:
            await self._skipped(prepared, "no_hits")
        else:
            return Prepared(prepared.question, prepared.internal, hits[: config.external_hits])
        return prepared

    @property
    def _external_on(self) -> bool:
        return self.config.external_recall or self.config.recall_port is not None

    async def _builtin_port(self) -> RecallPort:
        if self._default_port is None:
            host = self._host
            self._default_port = await anyio.to_thread.run_sync(
                partial(LexicalRecallPort.from_store, host.store, exclude_session=host.id)
            )
        return self._default_port

    async def _skipped(self, prepared: Prepared, reason: str, **extra: Any) -> None:
        await self._host.events.apublish(
            EventName.EXTERNAL_RECALL_SKIPPED,
            self._host.id,
            reason=reason,
            query=prepared.question,
            internal_score=prepared.best_internal,
            threshold=self.config.external_min_internal_score,
            **extra,
        )

    def plan(self, free: int, prepared: Prepared, *, most: int | None = None) -> Planned | None:
        """The turn's plan; ``None`` when nothing is injected at all.

        Its rendered cost (zone tags and the block's message included) stays under
        its allowance: the configured cap or the window's ``free`` tokens beside the
        history, whichever is less. When the history leaves too little for the zones
        every request must carry (identity, pinned facts, the task), those zones take
        what they need from the history instead, up to ``most`` tokens (what the
        history can give up while keeping its instruction): older history is left
        out of the request, never a pin (decision 175).
        """
        if not self.enabled:
            return None
        config_cap = self.config.injection_cap_tokens
        allowance = max(0, min(config_cap, free))
        raw = self._plan_within(allowance, prepared)
        if most is not None and allowance < config_cap:
            essential = essential_unmet(raw)
            if essential:
                wider = max(0, min(config_cap, most, allowance + essential))
                if wider > allowance:
                    allowance = wider
                    raw = self._plan_within(allowance, prepared)
        kept = self._planned
        if kept is not None and kept.raw.generation == raw.generation and kept.prepared == prepared:
            return kept
        demand = sum(raw.zones[zone].demand for zone in ZONES)
        if demand == 0:
            return None
        self._planned = Planned(raw, report_of(raw, prepared), prepared)
        return self._planned

    def _plan_within(self, allowance: int, prepared: Prepared) -> _native.ArenaPlanRow:
        """The core's plan whose rendered cost is at most ``allowance``. The core
        plans entries' tokens under a cap; the zone tags and the block's framing
        come on top, so a plan that renders over its allowance is made again under
        a cap smaller by the excess (a few core calls at most, only when the window
        is that tight)."""
        host = self._host
        cap = allowance
        for _ in range(_FIT_ATTEMPTS):
            raw = host.store.arena_plan(host.id, self._rules, cap, prepared.transient())
            excess = rendered_tokens(raw) - allowance
            if excess <= 0 or cap == 0:
                return raw
            # Under the entries it took, less the excess: a cap the plan did not
            # fill would give the same plan again.
            cap = max(0, min(cap, raw.tokens) - excess)
        return host.store.arena_plan(host.id, self._rules, 0, prepared.transient())

    async def after_turn(self, planned: Planned | None) -> None:
        """Takes in a sent turn: external hits it injected are written back, the
        controller observes it, and the floor cascade's outcome is published."""
        if planned is None:
            return
        host = self._host
        raw, prepared = planned.raw, planned.prepared
        injected = set(raw.injected)
        shown = [hit for hit in prepared.external if external_key(hit) in injected]
        once: list[tuple[str, str, int]] = [(zone, key, seq) for zone, key, seq in raw.once]
        if shown:
            writes = [
                self._entry_write(
                    "rag_external",
                    external_key(hit),
                    hit.text,
                    "normal",
                    once=True,
                    source="external",
                    external=True,
                )
                for hit in shown
            ]
            rows = await self._write_rows(writes)
            # Written after they were shown: the versions written are the ones shown.
            once.extend(("rag_external", row.key, row.seq) for row in rows if row.accepted)
            await host.events.apublish(
                EventName.EXTERNAL_RECALL_INJECTED,
                host.id,
                query=prepared.question,
                hits=len(prepared.external),
                injected=len(shown),
                internal_score=prepared.best_internal,
            )
        reports = [raw.zones[zone] for zone in ZONES]
        zones = [(report.demand, report.accepted, report.cut_at_write) for report in reports]
        observed = await anyio.to_thread.run_sync(
            partial(
                host.store.arena_observe,
                host.id,
                self._rules,
                zones,
                once,
                EventName.ARENA_ZONE_ADAPTED.value,
            )
        )
        if observed.shifts:
            shifts = [{"from": f, "to": t, "tokens": n} for f, t, n in observed.shifts]
            host.events.deliver(
                Event(
                    EventName.ARENA_ZONE_ADAPTED,
                    host.id,
                    {"shifts": shifts, "caps": observed.caps, "turn": observed.turns},
                )
            )
        await self._floor_events(raw)

    async def _floor_events(self, raw: _native.ArenaPlanRow) -> None:
        stage = raw.stage
        if stage == "met":
            return
        host = self._host
        name = (
            EventName.ARENA_FLOOR_UNMET_UNRECOVERABLE
            if stage == "unrecoverable"
            else EventName.ARENA_FLOOR_UNMET_RECOVERED
        )
        await host.events.apublish(name, host.id, stage=stage, relaxed=raw.relaxed, cap=raw.cap)
        if stage == "unrecoverable" and self.config.compact_on_floor_unmet:
            self._request_compaction("floor_unmet")


def _check_key(key: object) -> None:
    if not isinstance(key, str):
        raise InvalidInputError(f"key: expected str, got {type(key).__name__}")
    if not key.strip():
        raise InvalidInputError("key: must not be empty")
