"""What a recall call reads: a database (a path, a Store or a Session) and, when
asked, one session of it.

A path is opened read-only: reading never creates, migrates or writes a file, and
a missing path raises :class:`~lossless.errors.DatabaseNotFoundError` naming it.
"""

from __future__ import annotations

import os
import re
from typing import TypeAlias, cast

from lossless import _native
from lossless.errors import InvalidInputError
from lossless.ports import RecallTracing, SessionView
from lossless.store import Store, open_native

__all__ = [
    "Database",
    "SessionRef",
    "as_session",
    "is_id",
    "open_target",
    "session_id_of",
    "tracing_of",
]

Database: TypeAlias = "str | os.PathLike[str] | Store | SessionView"
"""A database to read: the path of its file, an open :class:`Store`, or a :class:`Session`."""

SessionRef: TypeAlias = "str | SessionView"
"""One session: its id (``ses_…``) or the :class:`Session` itself."""

# The shape of every id the store writes: a type prefix and letters or digits. A
# path (with a dot, a slash) never has it, so a path in the place of an id is
# refused rather than looked up as an id.
_ID = re.compile(r"[a-z]+_[0-9A-Za-z]+")


def as_session(value: object) -> SessionView | None:
    """``value`` if it is a session (a :class:`Session` or anything with its id,
    model and store)."""
    return value if isinstance(value, SessionView) else None


def is_id(value: str, prefix: str) -> bool:
    """Whether ``value`` has the shape of an id with ``prefix`` (``ses``, ``sum``, ``msg``)."""
    return value.startswith(prefix + "_") and _ID.fullmatch(value) is not None


def session_id_of(session: object) -> str | None:
    """The id of ``session`` (a Session or an id), refusing anything else."""
    if session is None:
        return None
    if (found := as_session(session)) is not None:
        return found.id
    if isinstance(session, str) and is_id(session, "ses"):
        return session
    shown = repr(session) if isinstance(session, str | os.PathLike) else type(session).__name__
    raise InvalidInputError(
        f"session: {shown} is not a session id (ses_…) or a Session; a database file goes in db="
    )


def open_target(db: object, session: object = None) -> tuple[_native.Store, str | None]:
    """The native store ``db`` names and the session ``session`` restricts to.

    Without ``db``, a :class:`Session` given as ``session`` names its own database.
    """
    session_id = session_id_of(session)
    if db is None:
        if (found := as_session(session)) is not None:
            return found.store, session_id
        raise InvalidInputError("db: name the database to read: a path, a Store or a Session")
    return _store(db), session_id


def _store(db: object) -> _native.Store:
    if (found := as_session(db)) is not None:
        return found.store
    if isinstance(db, Store):
        return db.native
    if isinstance(db, _native.Store):
        return db
    if not isinstance(db, str | os.PathLike):
        raise InvalidInputError(
            f"db: expected a path, a Store or a Session, got {type(db).__name__}"
        )
    return open_native(db, read_only=True)


def tracing_of(*targets: object) -> RecallTracing | None:
    """The telemetry of the first of ``targets`` that is a traced session (a
    :class:`Session` whose ``config.telemetry`` is on); None for a path, a Store, an
    id or a session without telemetry."""
    for target in targets:
        telemetry = getattr(target, "telemetry", None)
        if telemetry is not None:
            return cast(RecallTracing, telemetry)
    return None
