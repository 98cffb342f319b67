"""The arena's public value types."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from lossless.config import ZoneName

__all__ = [
    "ArenaEntry",
    "ArenaWriteResult",
    "InjectionReport",
    "Priority",
    "ZoneInjection",
    "ZoneName",
]

Priority = Literal["critical", "high", "normal", "low"]
PRIORITIES: tuple[Priority, ...] = ("critical", "high", "normal", "low")


@dataclass(frozen=True, slots=True)
class ArenaEntry:
    """A live entry of a session's arena: the newest text written under its key in
    its zone (the same key in two zones is two entries)."""

    zone: ZoneName
    key: str
    text: str
    priority: Priority
    source: str
    tokens: int
    seq: int
    once: bool = False
    external: bool = False


@dataclass(frozen=True, slots=True)
class ArenaWriteResult:
    """What became of one write to the arena."""

    key: str
    accepted: bool
    tokens: int
    #: Tokens of the text before it was cut to its zone's cap, if it was.
    cut_from: int | None = None
    #: Keys the entry ceiling took out to make room.
    evicted: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ZoneInjection:
    """One zone of a turn's injection."""

    demand: int
    floor: int
    cap: int
    allocated: int
    accepted: int
    #: Keys of entries injected cut (head and tail kept).
    cut: list[str]
    #: Keys of entries left out (the first 32).
    dropped: list[str]
    #: How many entries were left out.
    dropped_count: int = 0
    #: Tokens the zone's entries lost when they were written, cut to the zone's cap
    #: (the controller counts them as truncation).
    cut_at_write: int = 0


@dataclass(frozen=True, slots=True)
class InjectionReport:
    """What the arena put into a request, zone by zone."""

    #: The global cap this turn (the configured cap, or less when the window had less free).
    cap: int
    #: Tokens of the injected entries, and of the rendered text in each place.
    tokens: int
    system_tokens: int
    block_tokens: int
    #: How far the floor cascade went: met, relaxed, critical_only or unrecoverable.
    stage: str
    relaxed: list[str]
    zones: dict[str, ZoneInjection]
    #: Keys of the injected entries, in the order they were chosen.
    injected: list[str]
    #: How full the window is with the history and the injection, in [0, 1].
    usage: float | None = None
    #: The best internal recall score this turn (None: nothing was recalled).
    recall_score: float | None = None
    #: Tokens of the session ledger in this request (docs/LEDGER.md).
    ledger_tokens: int = 0
