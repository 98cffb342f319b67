"""Opening a session's stores: its own connections, the one compaction works on,
and the parts sessions of one database share.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import ParamSpec, TypeVar

import anyio
import anyio.lowlevel

from lossless import _native
from lossless.config import Config, ModelConfig
from lossless.encryption import EncryptionKey
from lossless.errors import (
    InvalidInputError,
    LosslessError,
    SessionClosedError,
    StoreError,
    UnknownModelError,
)
from lossless.models import ModelLimits, resolve_limits_async
from lossless.store import database_path, open_native
from lossless.streams import gone_streams

log = logging.getLogger("lossless")
_T = TypeVar("_T")


_P = ParamSpec("_P")


@dataclass(frozen=True, slots=True)
class SharedSessionParts:
    """What a new session of one model and configuration needs besides its row: the
    connections it writes turns and compaction through, its token counter, its
    model's limits and compaction window, and the configuration snapshot stored with
    it. Made once, they serve any number of sessions (an AgenticMap's items), which
    then open no connection and resolve nothing of their own."""

    store: _native.Store
    compaction_store: _native.Store
    counter: _native.TokenCounter
    limits: ModelLimits
    compaction_window: int
    snapshot: str


async def shared_session_parts(
    model: str,
    db: str | os.PathLike[str] | _native.Store,
    config: Config,
    encryption_key: EncryptionKey | None = None,
) -> SharedSessionParts:
    """The parts of :class:`SharedSessionParts` for sessions of ``model`` in ``db`` (a
    path, opened with ``encryption_key``, or a native store to write turns through)."""
    limits = await resolve_limits_async(model, config.model)
    compaction_window = await _compaction_window(config, limits)
    if isinstance(db, _native.Store):
        store = db
    else:
        store = await _open_store(db, config, encryption_key=encryption_key)
    return SharedSessionParts(
        store=store,
        compaction_store=await _second_store(store, config),
        # The encoder's tables are compiled in: a counter costs microseconds.
        counter=_native.TokenCounter(model),
        limits=limits,
        compaction_window=compaction_window,
        # The snapshot lets `load` rebuild the session; a credential has no place in it.
        snapshot=config.model_dump_json(exclude={"llm": {"api_key"}}),
    )


def _check_stored(
    row: _native.SessionInfo, session_id: str, model: str, system_prompt: str | None
) -> None:
    """Refuses to open a stored session for another model or system prompt: both are
    fixed when the session is created."""
    if row.model != model:
        raise InvalidInputError(
            f"model: session {session_id} was created for {row.model!r}, not {model!r}"
        )
    if system_prompt is not None and system_prompt != row.system_prompt:
        raise InvalidInputError(
            f"system_prompt: session {session_id} was created with another system prompt; "
            "it cannot change"
        )


async def _compaction_window(config: Config, limits: ModelLimits) -> int:
    """The compaction model's window: configured, else from the model map, else the
    conversation model's. Resolved once, when the session opens: the config is frozen."""
    compaction = config.compaction
    if compaction.model_context_limit is not None:
        return compaction.model_context_limit
    if compaction.model is None:
        return limits.context_limit
    try:
        return (await resolve_limits_async(compaction.model, ModelConfig())).context_limit
    except UnknownModelError:
        return limits.context_limit


async def _open_store(
    db: str | os.PathLike[str] | _native.Store,
    config: Config,
    *,
    encryption_key: EncryptionKey | None = None,
) -> _native.Store:
    """A new connection to ``db``: a path or URL, opened with ``encryption_key`` (see
    :func:`lossless.store.open_native`), or an open native store, whose database is
    opened again with its options and key."""
    if isinstance(db, _native.Store):
        return await anyio.to_thread.run_sync(db.reopen)
    opened = partial(
        open_native,
        db,
        synchronous=config.store.synchronous,
        busy_timeout_ms=config.store.busy_timeout_ms,
        encryption_key=encryption_key,
    )
    return await anyio.to_thread.run_sync(opened)


# Pages the write-ahead log of a session's turn connection may hold before one of its
# commits copies them into the database file. SQLite's default (1,000, about 65 tool
# results) made one turn in that many wait for the copy; with compaction on its own
# connection, whose commits copy at the default, a turn rarely does it at all.
_TURN_CHECKPOINT_PAGES = 8_000


async def _second_store(store: _native.Store, config: Config) -> _native.Store:
    """Another connection to ``store``'s database for compaction; ``store`` itself for
    a private in-memory database, which no second connection could see. The second
    connection takes over most of the write-ahead log's checkpoints."""
    if store.path == ":memory:":
        return store
    compaction_store = await _open_store(store, config)
    store.set_checkpoint_pages(_TURN_CHECKPOINT_PAGES)
    return compaction_store


def _opened_by_session(
    db: str | os.PathLike[str] | _native.Store, shared: SharedSessionParts
) -> tuple[_native.Store, ...]:
    """The connections of ``shared`` that a new session made for itself: both, or
    only the compaction one when it writes turns through the caller's store."""
    opened: list[_native.Store] = []
    for store in (shared.store, shared.compaction_store):
        if store is not db and all(store is not seen for seen in opened):
            opened.append(store)
    return tuple(opened)


def _close_all(stores: Sequence[_native.Store]) -> None:
    """Closes ``stores`` in order (the last one on a file empties its log)."""
    for store in stores:
        store.close()


def _weakly(method: Callable[_P, _T]) -> Callable[_P, _T]:
    """``method`` (a bound method of a session) called through a weak reference: the
    caller does not keep the session alive."""
    ref = weakref.WeakMethod(method)

    def call(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        bound = ref()
        if bound is None:
            raise SessionClosedError("the session this belongs to is gone")
        return bound(*args, **kwargs)

    return call


def flush_search_index(store: _native.Store) -> None:
    """Indexes the search backlog of ``store``'s database; a failure is logged only."""
    try:
        store.flush_search_index()
    except LosslessError:
        # A search indexes what is still queued before it reads: nothing is lost.
        log.warning("could not index the search backlog while closing", exc_info=True)


def _close_gone_streams(store: _native.Store, session_id: str, stale_s: float) -> int:
    """Closes the session's replies whose streaming process is gone; returns how many."""
    gone = gone_streams(store, session_id, stale_s)
    return store.flag_interrupted(session_id, gone) if gone else 0


async def session_for_key(
    db: str | os.PathLike[str], key: str, *, encryption_key: EncryptionKey | None = None
) -> str | None:
    """The id of the session ``key`` names in ``db`` now (see ``Session.open``), or
    None. Reads only: a missing database file, or one of a version without keys,
    names none. An encrypted database needs its key (``encryption_key``, or the
    environment: see :mod:`lossless.encryption`)."""
    path = database_path(db)

    def lookup() -> str | None:
        if "://" not in path and not os.path.exists(path):
            return None
        store = open_native(path, read_only=True, encryption_key=encryption_key)
        try:
            return store.session_for_key(key)
        except StoreError:
            return None
        finally:
            store.close()

    return await anyio.to_thread.run_sync(lookup)
