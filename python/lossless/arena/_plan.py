"""What a turn of the arena is planned from and what a plan is: the native rules,
this turn's recall candidates, the plan as the session uses it, and what it costs
in a request."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

from lossless import _native
from lossless.arena._ports import RecallHit
from lossless.arena._types import InjectionReport, ZoneInjection
from lossless.config import ZONES, ArenaConfig

#: The zones every request carries ahead of older history.
_ESSENTIAL_ZONES = ("identity", "truth", "task_state")
#: What a zone's tags cost around its entries (``<truth>\n`` … ``\n</truth>``).
_ZONE_TAG_TOKENS = 12
#: What the system part's joint and the block's message and ``<context>`` wrapper
#: cost together, at most.
_PART_FRAMING_TOKENS = 16
#: The system message's joint and the block's message and ``<context>`` wrapper.
STABLE_JOINT_TOKENS = 3
BLOCK_FRAMING_TOKENS = 4


def rules_of(config: ArenaConfig, max_cap: int) -> _native.ArenaRules:
    """The native rules of ``config``."""
    return _native.ArenaRules(
        [config.floor(zone) for zone in ZONES],
        [config.cap(zone) for zone in ZONES],
        relax_order=list(config.relax_order),
        cascade=config.floor_cascade,
        min_cut_tokens=config.min_cut_tokens,
        max_entries=config.max_entries,
        policy=config.degradation_policy,
        adaptive=config.adaptive,
        alpha=config.ema_alpha,
        warmup_turns=config.warmup_turns,
        step_tokens=config.step_tokens,
        max_shift_tokens=config.max_shift_tokens,
        truncation_ratio=config.upshift_truncation_ratio,
        idle_ratio=config.downshift_idle_ratio,
        max_cap=max_cap,
    )


@dataclass(slots=True)
class Prepared:
    """What a turn found to recall before it planned: this turn's candidates."""

    question: str | None = None
    internal: list[_native.RecallHitRow] = field(default_factory=list)
    external: list[RecallHit] = field(default_factory=list)
    candidates: list[tuple[str, str, str, str, str]] | None = field(default=None, repr=False)

    @property
    def best_internal(self) -> float | None:
        return max((hit.score for hit in self.internal), default=None)

    def transient(self) -> list[tuple[str, str, str, str, str]]:
        """This turn's candidates as the core plans them (made once)."""
        if self.candidates is None:
            self.candidates = self._candidates()
        return self.candidates

    def _candidates(self) -> list[tuple[str, str, str, str, str]]:
        candidates = [
            (
                "memory_recall",
                f"recall:{hit.part_id}",
                "recall",
                "normal",
                f"[{hit.message_id}] {hit.text}",
            )
            for hit in self.internal
        ]
        candidates.extend(
            ("rag_external", external_key(hit), "external", "normal", hit.text)
            for hit in self.external
        )
        return candidates


def external_key(hit: RecallHit) -> str:
    digest = hashlib.sha256((hit.id or hit.text).encode()).hexdigest()[:16]
    return f"external:{digest}"


@dataclass(slots=True)
class Planned:
    """A turn's plan as the session uses it."""

    raw: _native.ArenaPlanRow
    report: InjectionReport
    prepared: Prepared
    #: The report with the window's usage of the last build that asked for it.
    reported: InjectionReport | None = None

    def report_with(self, usage: float | None) -> InjectionReport:
        """The report with ``usage`` filled in (the same object while it is unchanged)."""
        if self.reported is None or self.reported.usage != usage:
            self.reported = replace(self.report, usage=usage)
        return self.reported


def rendered_tokens(raw: _native.ArenaPlanRow) -> int:
    """What a plan costs in a request: its rendered system part with the joint to
    the system prompt, and its block as a message of its own."""
    stable = raw.stable_tokens + STABLE_JOINT_TOKENS if raw.stable else 0
    volatile = raw.volatile_tokens + BLOCK_FRAMING_TOKENS if raw.volatile else 0
    return stable + volatile


def essential_unmet(raw: _native.ArenaPlanRow) -> int:
    """Tokens the essential zones asked for and were not given, with their tags and
    the framing of the parts they go in."""
    unmet = 0
    for zone in _ESSENTIAL_ZONES:
        report = raw.zones[zone]
        missing = report.demand - report.accepted
        if missing > 0:
            unmet += missing + _ZONE_TAG_TOKENS
    return unmet + _PART_FRAMING_TOKENS if unmet else 0


def report_of(raw: _native.ArenaPlanRow, prepared: Prepared) -> InjectionReport:
    zones: dict[str, ZoneInjection] = {name: ZoneInjection(**raw.zones[name]) for name in ZONES}
    return InjectionReport(
        cap=raw.cap,
        tokens=raw.tokens,
        system_tokens=raw.stable_tokens,
        block_tokens=raw.volatile_tokens,
        stage=raw.stage,
        relaxed=list(raw.relaxed),
        zones=zones,
        injected=list(raw.injected),
        recall_score=prepared.best_internal,
        ledger_tokens=raw.ledger_tokens,
    )
