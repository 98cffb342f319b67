"""What the owner of the data may do that the library never does by itself: erase
a session, a message or everything about a subject, and keep sessions only for a
time (see docs/GOVERNANCE.md).

Every function takes the database as a path, a ``postgresql://`` URL, an open
:class:`~lossless.store.Store` or a :class:`~lossless.session.Session` (its store).
A path is opened for writing (and created or upgraded), as a ``Store`` would.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from lossless import _native
from lossless.errors import InvalidInputError
from lossless.ports import SessionView
from lossless.store import Store

__all__ = [
    "ErasureReceipt",
    "MaintenanceReport",
    "RetentionRule",
    "add_subject",
    "erase",
    "erasure_receipts",
    "maintain",
    "retention_rules",
    "set_retention",
    "subjects",
]

ErasureReceipt = _native.ErasureReceipt
"""One erasure: ``target_kind`` and ``target``, ``erased_by``, ``reason``,
``erased_at`` (ms since the epoch), ``counts`` (JSON of what was removed) and
``scrubbed`` (the bytes left the disk after the commit)."""

RetentionRule = _native.RetentionRuleRow
"""A time to live in force: ``target_kind`` (``session`` or ``subject``),
``target`` and ``ttl_ms``."""


@dataclass(frozen=True)
class MaintenanceReport:
    """What :func:`maintain` did: the receipt of each session erased for its time
    to live, and how long it took."""

    receipts: list[Any] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def erased_sessions(self) -> list[str]:
        """The ids of the sessions erased (forks and sub-sessions included)."""
        erased: list[str] = []
        for receipt in self.receipts:
            erased.extend(json.loads(receipt.counts)["sessions"])
        return erased


def _native_store(db: object) -> _native.Store:
    if isinstance(db, SessionView):
        return db.store
    if isinstance(db, Store):
        return db.native
    if isinstance(db, _native.Store):
        return db
    if isinstance(db, str | os.PathLike):
        return Store(db).native
    raise InvalidInputError(f"db: expected a path, a Store or a Session, got {type(db).__name__}")


def _session_id(session: object) -> str:
    if isinstance(session, SessionView):
        return session.id
    if isinstance(session, str):
        return session
    raise InvalidInputError(
        f"session: expected a session id or a Session, got {type(session).__name__}"
    )


def erase(
    db: object,
    *,
    session: object = None,
    message: str | None = None,
    subject: str | None = None,
    by: str = "lossless",
    reason: str = "",
) -> Any:
    """Erase one ``session`` (with its forks and the sessions its operators ran), one
    ``message`` (from its session and every fork that shares it) or every session of
    a ``subject``, in one transaction; returns the :data:`ErasureReceipt`.

    The content leaves every table, the search index, the files and images nothing
    else references, and every summary built on it (which keeps its place with an
    ``[erased]`` marker). The receipt records ``by`` and ``reason`` but no content.
    Exactly one target is given; an unknown session raises
    :class:`~lossless.errors.SessionNotFoundError`, an unknown message
    :class:`~lossless.errors.NotFoundError`, and nothing changes.

    A :class:`~lossless.session.Session` still open on an erased session must not
    write to it again; a message erased from a history the caller keeps itself
    must also leave that history, or the next ``sync`` stores it again.
    """
    targets = [
        (kind, value)
        for kind, value in (("session", session), ("message", message), ("subject", subject))
        if value is not None
    ]
    if len(targets) != 1:
        raise InvalidInputError("erase: give exactly one of session=, message= or subject=")
    kind, value = targets[0]
    target = _session_id(value) if kind == "session" else str(value)
    return _native_store(db).erase(kind, target, by, reason)


def erasure_receipts(db: object) -> list[Any]:
    """Every erasure receipt of the database, oldest first."""
    return _native_store(db).erasure_receipts()


def add_subject(db: object, session: object, subject: str) -> None:
    """Attach ``subject`` (a person or customer id of yours) to ``session``, for
    :func:`erase` by subject and per-subject retention."""
    _native_store(db).add_subject(_session_id(session), subject)


def subjects(db: object, session: object) -> list[str]:
    """The subjects attached to ``session``."""
    return _native_store(db).subjects(_session_id(session))


def _ttl_ms(ttl: timedelta | float | None) -> int | None:
    if ttl is None:
        return None
    seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else ttl
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
        raise InvalidInputError(f"ttl: expected a positive timedelta or seconds, got {ttl!r}")
    return max(1, round(seconds * 1000))


def set_retention(
    db: object,
    *,
    ttl: timedelta | float | None,
    session: object = None,
    subject: str | None = None,
) -> None:
    """Keep ``session`` (or every session of ``subject``) for ``ttl`` after its
    newest message; ``ttl=None`` lifts the rule. :func:`maintain` erases what
    expired. A session's own rule wins over its subjects'; of several subject
    rules, the shortest applies."""
    if (session is None) == (subject is None):
        raise InvalidInputError("set_retention: give exactly one of session= or subject=")
    kind: Literal["session", "subject"] = "session" if session is not None else "subject"
    target = _session_id(session) if session is not None else str(subject)
    _native_store(db).set_retention(kind, target, _ttl_ms(ttl))


def retention_rules(db: object) -> list[Any]:
    """The retention rules in force."""
    return _native_store(db).retention_rules()


def maintain(
    db: object, *, now: datetime | None = None, by: str = "retention"
) -> MaintenanceReport:
    """Erase every session past its time to live, in short transactions.

    A large session loses its oldest messages a batch at a time, each batch holding
    the write lock for about 40 ms, so sessions recording meanwhile barely wait;
    each step leaves a valid, shorter session, and a run cut short is finished by
    the next. Call it from a scheduler, or run ``lossless maintain``.
    """
    started = time.perf_counter()
    now_ms = round((now or datetime.now().astimezone()).timestamp() * 1000)
    receipts = _native_store(db).apply_retention(now_ms, by)
    return MaintenanceReport(receipts=list(receipts), seconds=time.perf_counter() - started)
