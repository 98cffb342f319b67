"""The session ledger: what must survive every compaction, typed and kept by subject.

Compaction reads the messages it takes out of the view into the ledger: rules,
hard constraints, facts with their values, decisions, preferences, goals and the
state of the work, and the files, commands and errors of the tool calls. Every
request carries it (the stable kinds in the system message, the rest next to the
newest user message) under its own caps (``ArenaConfig.ledger_tokens`` and
``ledger_work_tokens``). A value stated again replaces the old one in the request;
every value stays stored (:meth:`Ledger.history`). Pinned facts are its rules too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal, get_args

import anyio

from lossless import _native
from lossless.arena._types import ArenaEntry
from lossless.config import ArenaConfig
from lossless.errors import InvalidInputError

__all__ = [
    "Ledger",
    "LedgerItem",
    "LedgerKind",
    "LedgerUpdate",
    "ledger_caps",
    "ledger_subject",
]

LedgerKind = Literal[
    "rule",
    "constraint",
    "fact",
    "decision",
    "preference",
    "goal",
    "state",
    "error",
    "command",
    "file",
]
LedgerOrigin = Literal["extracted", "model", "caller", "pin"]

KINDS: tuple[LedgerKind, ...] = get_args(LedgerKind)
#: The key prefix of a pinned fact in the arena's ``truth`` zone.
PIN_PREFIX = "pin:"
#: At most these shares of the usable window go to the ledger's two parts: in a
#: small window its caps shrink, so the history it sits beside still fits.
STABLE_WINDOW_SHARE = 8
MIN_LEDGER_WINDOW = 1_024
VOLATILE_WINDOW_SHARE = 16


def ledger_caps(config: ArenaConfig, usable: int) -> tuple[int, int]:
    """The ledger's caps in a window of ``usable`` tokens: its configured caps, at
    most an eighth (stable part) and a sixteenth (the rest) of the window; none in a
    window under ``MIN_LEDGER_WINDOW``, which holds a summary and the newest
    messages at best (what the ledger would keep is in the summary)."""
    if usable < MIN_LEDGER_WINDOW:
        return (0, 0)
    return (
        min(config.ledger_tokens, usable // STABLE_WINDOW_SHARE),
        min(config.ledger_work_tokens, usable // VOLATILE_WINDOW_SHARE),
    )


def ledger_subject(text: str) -> str:
    """The subject the built-in rules give ``text``: "The vault code is QX7" and "The
    vault code changed to MM2" share ``vault code``, so the second replaces the first."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError("text: expected a non-empty str")
    return _native.ledger_subject(text)


@dataclass(frozen=True, slots=True)
class LedgerItem:
    """One value of a subject: the live one (from :meth:`Ledger.items`) or any stored
    one (from :meth:`Ledger.history`, where ``removed`` marks a removal)."""

    id: str
    kind: LedgerKind
    subject: str
    text: str
    origin: LedgerOrigin
    #: It replaced an earlier value of its subject.
    changed: bool = False
    removed: bool = False
    #: The position of its newest source message, and of the first one of its subject.
    seq: int = 0
    first_seq: int = 0
    #: The messages it was read from, when it was read from messages.
    message_ids: tuple[str, ...] = ()

    @classmethod
    def _of(cls, row: _native.LedgerItemRow) -> LedgerItem:
        return cls(
            id=row.id,
            kind=row.kind,  # type: ignore[arg-type]
            subject=row.subject,
            text=row.text,
            origin=row.origin,  # type: ignore[arg-type]
            changed=row.changed,
            removed=row.removed,
            seq=row.seq,
            first_seq=row.first_seq,
            message_ids=tuple(row.message_ids),
        )


@dataclass(frozen=True, slots=True)
class LedgerUpdate:
    """What a write to the ledger did, and its size in the request now."""

    added: int = 0
    changed: int = 0
    removed: int = 0
    #: The request's ledger text changed.
    rendered: bool = False
    #: Tokens of the part in the system message and of the part beside the newest
    #: user message.
    stable_tokens: int = 0
    volatile_tokens: int = 0
    #: Items the caps left out of the request, per kind (they stay stored).
    left_out: dict[str, int] = field(default_factory=dict)
    #: Messages up to this position have been read into it.
    absorbed_seq: int = 0

    @property
    def tokens(self) -> int:
        """The ledger's tokens in the request."""
        return self.stable_tokens + self.volatile_tokens

    @classmethod
    def _of(cls, row: _native.LedgerUpdateResult) -> LedgerUpdate:
        return cls(
            added=row.added,
            changed=row.changed,
            removed=row.removed,
            rendered=row.rendered,
            stable_tokens=row.stable_tokens,
            volatile_tokens=row.volatile_tokens,
            left_out=dict(row.left_out),
            absorbed_seq=row.absorbed_seq,
        )


class Ledger:
    """A session's ledger (``session.ledger``): read it, add to it, correct it,
    take items out. Every write is one transaction and renders the request's ledger
    again; earlier values stay stored."""

    def __init__(
        self,
        store: _native.Store,
        session_id: str,
        caps: tuple[int, int],
        *,
        pins: Callable[[], list[ArenaEntry]],
        unpin: Callable[[str], Awaitable[bool]],
    ) -> None:
        self._store = store
        self._session_id = session_id
        self._caps = caps
        self._pins = pins
        self._unpin = unpin

    async def items(self, kind: LedgerKind | None = None) -> list[LedgerItem]:
        """The live items (of ``kind`` alone, when given): pinned facts first (as
        rules), then the rest in the order they were written."""
        if kind is not None:
            _check_kind(kind)
        rows = await anyio.to_thread.run_sync(self._store.ledger_items, self._session_id)
        items = [*self._pinned(), *(LedgerItem._of(row) for row in rows)]
        return [item for item in items if kind is None or item.kind == kind]

    async def history(self, subject: str | None = None) -> list[LedgerItem]:
        """Every stored value (of ``subject`` alone, when given), oldest first,
        removals included: what a subject was before it changed."""
        rows = await anyio.to_thread.run_sync(self._store.ledger_history, self._session_id, subject)
        return [LedgerItem._of(row) for row in rows]

    async def add(
        self, text: str, *, kind: LedgerKind = "fact", subject: str | None = None
    ) -> LedgerUpdate:
        """Adds ``text`` as an item of ``kind``; its subject is ``subject`` or the one
        the built-in rules give it, so adding a new value of a subject replaces it."""
        _check_kind(kind)
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("text: expected a non-empty str")
        subject = _subject(subject) if subject is not None else ledger_subject(text)
        return await self._edit([("set", kind, subject, text.strip())])

    async def correct(
        self, subject: str, text: str, *, kind: LedgerKind | None = None
    ) -> LedgerUpdate:
        """Gives the live item of ``subject`` a new text (and ``kind``, when given).
        Raises :class:`InvalidInputError` when no item of that subject is live."""
        subject = _subject(subject)
        live = {item.subject: item for item in await self.items() if item.origin != "pin"}
        if subject not in live:
            raise InvalidInputError(f"subject: no live ledger item has subject {subject!r}")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("text: expected a non-empty str")
        chosen = live[subject].kind if kind is None else kind
        _check_kind(chosen)
        return await self._edit([("set", chosen, subject, text.strip())])

    async def remove(self, subject: str) -> bool:
        """Takes the item of ``subject`` out of the request (a pinned fact is
        unpinned); its values stay stored. Whether it was live."""
        subject = _subject(subject)
        if any(item.subject == subject for item in self._pinned()):
            return await self._unpin(PIN_PREFIX + subject)
        update = await self._edit([("remove", "", subject, "")])
        return update.removed > 0

    async def tokens(self) -> LedgerUpdate:
        """The ledger's size in the request now, and what its caps leave out."""
        _, _, row = await anyio.to_thread.run_sync(
            self._store.ledger_render, self._session_id, *self._caps
        )
        return LedgerUpdate._of(row)

    async def render(self) -> tuple[str, str]:
        """The ledger's two parts as the request carries them: the one in the system
        message and the one beside the newest user message."""
        stable, volatile, _ = await anyio.to_thread.run_sync(
            self._store.ledger_render, self._session_id, *self._caps
        )
        return stable, volatile

    async def _edit(self, edits: list[tuple[str, str, str, str]]) -> LedgerUpdate:
        row = await anyio.to_thread.run_sync(
            self._store.ledger_edit, self._session_id, edits, *self._caps
        )
        return LedgerUpdate._of(row)

    def _pinned(self) -> list[LedgerItem]:
        return [
            LedgerItem(
                id=f"{entry.zone}:{entry.key}",
                kind="rule",
                subject=entry.key[len(PIN_PREFIX) :],
                text=entry.text,
                origin="pin",
                seq=entry.seq,
                first_seq=entry.seq,
            )
            for entry in self._pins()
            if entry.zone == "truth" and entry.key.startswith(PIN_PREFIX)
        ]


def absorb(store: _native.Store, session_id: str, caps: tuple[int, int]) -> LedgerUpdate:
    """Reads what compaction took out of the view into the ledger, rendered within
    ``caps`` (a native call: run it in a worker thread)."""
    row = store.absorb_ledger(session_id, *caps)
    return LedgerUpdate._of(row)


def _check_kind(kind: object) -> None:
    if kind not in KINDS:
        raise InvalidInputError(f"kind: expected one of {', '.join(KINDS)}, got {kind!r}")


def _subject(subject: object) -> str:
    if not isinstance(subject, str) or not subject.strip():
        raise InvalidInputError("subject: expected a non-empty str")
    return subject.strip()
