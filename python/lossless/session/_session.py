"""Session: the object agents are written against.

A session persists every turn before anything else happens, assembles its context
in the native core, calls the model through litellm, and keeps its view inside the
budget with background compaction.
"""

from __future__ import annotations

import os
import weakref
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, Self

import anyio
import anyio.lowlevel

from lossless import _native
from lossless._background import Background
from lossless._writes import write_now_or_in_thread
from lossless.arena import ArenaWriteResult, Priority, SessionArena
from lossless.calibration import TokenCalibration
from lossless.compaction import CompactionEngine, CompactionResult, Summariser
from lossless.config import Config
from lossless.encryption import EncryptionKey, resolve_key
from lossless.errors import NotFoundError
from lossless.events import EventBus, EventName
from lossless.ledger import PIN_PREFIX, Ledger, ledger_caps

if TYPE_CHECKING:
    from lossless.files import FileHandleResult
    from lossless.telemetry import SessionTelemetry
from lossless.models import Budget, ModelLimits, resolve_limits_async
from lossless.profiles import ProfileName, profile_for
from lossless.session._open import (
    SharedSessionParts,
    _check_stored,
    _close_all,
    _close_gone_streams,
    _compaction_window,
    _open_store,
    _opened_by_session,
    _second_store,
    _weakly,
    flush_search_index,
    session_for_key,
    shared_session_parts,
)
from lossless.session._request_parts import RequestLogState, _Request
from lossless.session._sync import Syncing


class Session(Syncing):
    """One conversation, stored in full, sent to the model within its budget.

    Create it with :meth:`open`, :meth:`create` or :meth:`load`, ideally as
    ``async with Session.open(...) as session``. Background compaction runs as a
    task of the event loop that the session waits for when it closes, so sessions
    open and close in any order and from any task.
    """

    def __init__(
        self,
        *,
        store: _native.Store,
        session_id: str,
        model: str,
        config: Config,
        system_prompt: str | None,
        limits: ModelLimits,
        compaction_window: int,
        counter: _native.TokenCounter,
        compaction_store: _native.Store | None = None,
    ) -> None:
        self._store = store
        store.set_media_policy(config.media.max_inline, config.media.max_inline_tokens)
        redaction = config.redaction
        store.configure_redaction(
            session_id, redaction.enabled, redaction.defaults, list(redaction.rules)
        )
        self.id = session_id
        self.model = model
        self.config = config
        self.system_prompt = system_prompt
        self._limits = limits
        self._count = counter.count
        self._system_tokens = counter.count(system_prompt) + 4 if system_prompt else 0
        self.profile: ProfileName = profile_for(
            model, config.model.profile, api_base=config.llm.api_base
        )
        self._calibration = TokenCalibration(model, config.model.token_correction)
        self.budget = Budget.of(limits, config, self._system_tokens, self._calibration.correction)
        self.events = EventBus(tape=store)
        self._telemetry = self._make_telemetry()
        self._background = Background()
        self._closed = False
        self._owns_store = True
        # The connections this session opened itself, ended when it closes: on a
        # database server each holds one of its limited connection slots.
        self._opened: tuple[_native.Store, ...] = ()
        # The view's size right after this session's last write (a turn, a tool
        # result, a reply), taken by the next model turn; None once anything else
        # may have written.
        # The last request sent, to count how much of the next one repeats it.
        self._last_request: _Request | None = None
        self._last_request_at: float | None = None
        self._request_log = RequestLogState()
        # The messages of the last request, as sent.
        self._last_messages: list[dict[str, Any]] | None = None
        # The last tool definitions sent (as JSON) and their tokens.
        self._counted_tools: tuple[str, int] = ("", 0)
        # User turns recorded by this object: a new one re-plans the arena's block.
        self._user_turns = 0
        self._sending = False
        # The tokens of the last request :meth:`context` gave, until its usage is
        # reported.
        self._awaiting_usage: int | None = None
        self._recent_calls: deque[str] = deque(maxlen=config.doom_loop_threshold)
        # Compaction works on a connection of its own (when the database is a file), so
        # no call of a turn waits for a round's native work to let go of a connection.
        compaction_store = compaction_store or store
        summariser = Summariser(
            compaction_store, config, count=self._count, compaction_window=compaction_window
        )
        # The parts a session owns call back into it through weak references: a cycle
        # would keep the session, and its connections, alive until a full collection,
        # which a heap frozen after litellm's import may never run on it.
        summariser.conversation = _weakly(self._conversation_for_summary)
        self._summariser = summariser
        self._compaction_store = compaction_store
        self.compaction = self._make_compaction()
        self.arena = SessionArena(
            weakref.proxy(self),
            check_open=_weakly(self._check_open),
            request_compaction=_weakly(self._request_compaction),
        )
        self.key: str | None = None
        self.parent_id: str | None = None
        self._sync_lock = anyio.Lock()
        self._synced_format = None

    def _make_compaction(self) -> CompactionEngine:
        """The compaction engine of the session this object is now."""
        engine = CompactionEngine(
            store=self._compaction_store,
            session_id=self.id,
            config=self.config,
            budget=_weakly(self._current_budget),
            bus=self.events,
            summariser=self._summariser,
        )
        engine.measure_invalidated = _weakly(self._invalidated_since_last_request)
        engine.tracing = self._telemetry
        return engine

    def _make_telemetry(self) -> SessionTelemetry | None:
        """The session's spans and metrics, when ``config.telemetry`` is enabled.
        Imported only then: with telemetry off, OpenTelemetry is never loaded."""
        settings = self.config.telemetry
        if not settings.enabled:
            return None
        from lossless.telemetry import SessionTelemetry

        return SessionTelemetry(
            settings,
            model=self.model,
            llm=self.config.llm,
            events=self.events,
            session_id=_weakly(self._current_id),
        )

    def _rebind(self) -> None:
        self.compaction = self._make_compaction()
        self.arena.forget_plans()
        self._last_request = None
        self._last_request_at = None
        self._request_log.reset()
        self._last_messages = None
        self._awaiting_usage = None
        self._recent_calls.clear()

    @classmethod
    async def create(
        cls,
        *,
        model: str,
        db: str | os.PathLike[str] = "lossless.db",
        config: Config | None = None,
        system_prompt: str | None = None,
        key: str | None = None,
        encryption_key: EncryptionKey | None = None,
    ) -> Session:
        """Start a new session stored in ``db``. With ``key`` (a name from outside:
        an SDK's session id, a conversation's name) the key names the new session
        from now on; a session it named before stays stored under its id.

        ``encryption_key`` opens an encrypted database (a new file is created
        encrypted); without it ``LOSSLESS_DB_KEY`` or ``LOSSLESS_DB_KEY_FILE`` do,
        when set (see :mod:`lossless.encryption`)."""
        return await cls._new(
            model=model,
            db=db,
            config=config,
            system_prompt=system_prompt,
            key=key,
            encryption_key=encryption_key,
        )

    @classmethod
    async def _new(
        cls,
        *,
        model: str,
        db: str | os.PathLike[str],
        config: Config | None,
        system_prompt: str | None,
        link: tuple[str, str, int] | None = None,
        shared: SharedSessionParts | None = None,
        key: str | None = None,
        reuse_key: bool = False,
        encryption_key: EncryptionKey | None = None,
    ) -> Session:
        """:meth:`create`; with ``link`` (parent id, map id, item index) the session is
        created linked to its parent, in the same transaction (an AgenticMap item).
        With ``shared`` (made once by :func:`shared_session_parts` for ``model`` and
        ``config``) the session works on its connections, counter and limits instead
        of making its own; whoever made them indexes the search backlog. ``key``
        names the new session; with ``reuse_key`` a session the key already names is
        loaded instead (see :meth:`open`)."""
        config = config or Config()
        if shared is None:
            shared = await shared_session_parts(model, db, config, encryption_key)
            owns_store = True
        else:
            owns_store = False
        store = shared.store
        if key is not None:
            session_id, created = store.named_session(
                key, model, shared.snapshot, system_prompt, reuse_key
            )
            if not created:
                # Another process named a session with the key first: that one.
                if owns_store:
                    _close_all(_opened_by_session(db, shared))
                return await cls._load(
                    session_id,
                    db=db,
                    config=config,
                    expected=(model, system_prompt),
                    encryption_key=encryption_key,
                )
        elif link is None:
            session_id = store.create_session(model, shared.snapshot, system_prompt)
        else:
            session_id = await write_now_or_in_thread(
                partial(
                    _native.create_child_session,
                    store,
                    model,
                    shared.snapshot,
                    system_prompt,
                    *link,
                )
            )
        session = cls(
            store=store,
            session_id=session_id,
            model=model,
            config=config,
            system_prompt=system_prompt,
            limits=shared.limits,
            compaction_window=shared.compaction_window,
            counter=shared.counter,
            compaction_store=shared.compaction_store,
        )
        session._owns_store = owns_store
        session.key = key
        if owns_store:
            session._opened = _opened_by_session(db, shared)
        await session._start()
        session.events.publish(
            EventName.SESSION_CREATED, session_id, model=model, usable=session.budget.usable
        )
        return session

    @classmethod
    async def load(
        cls,
        session_id: str,
        *,
        db: str | os.PathLike[str] = "lossless.db",
        config: Config | None = None,
        encryption_key: EncryptionKey | None = None,
    ) -> Session:
        """Reopen a stored session (of an encrypted database with ``encryption_key``,
        as :meth:`create` takes it).

        Replies left streaming by a process that is gone (a process on this host that
        no longer runs, or one elsewhere silent for ``store.stream_stale_s``) are
        closed as incomplete with the text they had checkpointed; replies another
        live process is streaming are left to it.
        """
        return await cls._load(session_id, db=db, config=config, encryption_key=encryption_key)

    @classmethod
    async def _load(
        cls,
        session_id: str,
        *,
        db: str | os.PathLike[str] | _native.Store,
        config: Config | None,
        expected: tuple[str, str | None] | None = None,
        encryption_key: EncryptionKey | None = None,
    ) -> Session:
        """:meth:`load`; with ``expected`` (model, system prompt or None), a session
        stored otherwise is refused before anything is written or published. ``db``
        may be an open native store: its database is opened again, with its key."""
        store = await _open_store(db, config or Config(), encryption_key=encryption_key)
        row = store.get_session(session_id)
        if expected is not None:
            _check_stored(row, session_id, *expected)
        stored = (
            Config.model_validate_json(row.config_json) if row.config_json != "{}" else Config()
        )
        config = config or stored

        limits = await resolve_limits_async(row.model, config.model)
        compaction_window = await _compaction_window(config, limits)
        counter = _native.TokenCounter(row.model)
        compaction_store = await _second_store(store, config)
        session = cls(
            store=store,
            session_id=session_id,
            model=row.model,
            config=config,
            system_prompt=row.system_prompt,
            limits=limits,
            compaction_window=compaction_window,
            counter=counter,
            compaction_store=compaction_store,
        )
        session._opened = (store,) if compaction_store is store else (store, compaction_store)
        session.key = store.key_of(session_id)
        fork = store.fork_of(session_id)
        session.parent_id = fork.parent_id if fork is not None else None
        flagged = await anyio.to_thread.run_sync(
            _close_gone_streams, store, session_id, config.store.stream_stale_s
        )
        await session._start()
        session.events.publish(EventName.SESSION_LOADED, session_id, interrupted_flagged=flagged)
        return session

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        *,
        model: str,
        db: str | os.PathLike[str] = "lossless.db",
        session_id: str | None = None,
        config: Config | None = None,
        system_prompt: str | None = None,
        key: str | None = None,
        encryption_key: EncryptionKey | None = None,
    ) -> AsyncIterator[Session]:
        """Create a session (``session_id=None``) or load a stored one, closed on exit.

        With ``key`` and no ``session_id``: the session the key names (see
        :meth:`create`) is loaded, or, when it names none, a new one is created and
        named by it, in one transaction, so processes that open one key at once
        agree on one session. The key follows a session's forks (:meth:`sync`).

        ``async with Session.open(model=..., db=..., session_id=saved_id) as session:``.
        When loading, ``config=None`` keeps the stored configuration, and ``model`` and
        a given ``system_prompt`` must match the stored ones: both are fixed when the
        session is created, so a different value raises :class:`InvalidInputError`
        instead of being silently ignored. ``encryption_key`` is as :meth:`create`
        takes it.
        """
        if session_id is None and key is not None:
            session = await cls.open_keyed(
                key,
                model=model,
                db=db,
                config=config,
                system_prompt=system_prompt,
                encryption_key=encryption_key,
            )
        elif session_id is None:
            session = await cls.create(
                model=model,
                db=db,
                config=config,
                system_prompt=system_prompt,
                encryption_key=encryption_key,
            )
        else:
            expected = (model, system_prompt)
            session = await cls._load(
                session_id, db=db, config=config, expected=expected, encryption_key=encryption_key
            )
        try:
            yield session
        finally:
            await session.close()

    @classmethod
    async def open_keyed(
        cls,
        key: str,
        *,
        model: str,
        db: str | os.PathLike[str] = "lossless.db",
        config: Config | None = None,
        system_prompt: str | None = None,
        encryption_key: EncryptionKey | None = None,
    ) -> Session:
        """The session ``key`` names, loaded, or a new one named by it (see
        :meth:`open`, which closes it on exit; close this one yourself). A stored
        session of another ``model`` or ``system_prompt`` raises
        :class:`InvalidInputError`. ``encryption_key`` is as :meth:`create` takes it."""
        # Resolved once: a callback is asked for the key once per opening.
        secret = await anyio.to_thread.run_sync(resolve_key, encryption_key)
        found = await session_for_key(db, key, encryption_key=secret)
        if found is None:
            return await cls._new(
                model=model,
                db=db,
                config=config,
                system_prompt=system_prompt,
                key=key,
                reuse_key=True,
                encryption_key=secret,
            )
        return await cls._load(
            found, db=db, config=config, expected=(model, system_prompt), encryption_key=secret
        )

    async def _start(self) -> None:
        self.events.attach(self._background)

    async def close(self) -> None:
        """Finish background work and release the session. Closing twice is harmless.

        Sessions close in any order and from any task: the session's background work
        (a compaction round, async event handlers) runs on the event loop, not in a
        task group of the task that opened it, and closing waits for it to end.
        """
        if self._closed:
            return
        self._closed = True
        await self.compaction.wait_for_pending()
        # Closing is idle time: index what the turns queued for search, so the next
        # reader of the file (the CLI, an MCP client) does not pay for it. Sessions on
        # shared connections leave that to whoever made them, once for them all.
        if self._owns_store:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(flush_search_index, self._store)
        self.events.publish(EventName.SESSION_CLOSED, self.id)
        await self._background.wait()
        self.events.attach(None)
        # Off the loop: the last connection to a file copies its write-ahead log
        # into it, which takes as long as the log is large.
        opened, self._opened = self._opened, ()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_close_all, opened)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def fork(self, at: str | None = None, *, key: str | None = None) -> Session:
        """A new session that shares this one's history up to message ``at`` (its
        id; None: the newest message), summaries included, without a copy, and goes
        its own way from there: what either stores later, and compaction in either,
        never touches the other. The fork starts with this session's pinned facts and
        task state, its model, configuration and system prompt; ``key`` names it.

        This is how a retry, an edit of an earlier message, or a sub-agent that starts
        from the parent's context are expressed (:meth:`sync` forks by itself when a
        history it is handed no longer extends the stored one). Returns the fork,
        open on its own connections: close it (or use ``async with``)."""
        self._check_open()
        store = self._store
        seq = store.newest_seq(self.id) if at is None else store.message_seq(self.id, at)
        sync_from = store.sync_positions_within(self.id, seq)
        child = await anyio.to_thread.run_sync(
            partial(store.fork_session, self.id, seq, sync_from, key)
        )
        await self.events.apublish(
            EventName.SESSION_FORKED, child, parent_id=self.id, fork_seq=seq, reason="fork"
        )
        # A new connection like this session's own: the same database and key.
        return await Session._load(child, db=store, config=self.config)

    async def add_file(
        self, path: str | os.PathLike[str], *, record: bool = True
    ) -> FileHandleResult:
        """Hand the model a file: under ``files.inline_threshold`` tokens as text, else
        as a reference to its bytes, stored whole (see :mod:`lossless.files`).

        With ``record`` (the default) the part is stored at once as a user message;
        otherwise pass ``result.part`` in the next :meth:`send`. A missing, empty or
        unreadable path, a directory or a file over ``files.max_file_bytes`` raises a
        :class:`~lossless.errors.FileInputError` and stores nothing.
        """
        self._check_open()
        from lossless.files import LargeFileHandler

        handler = LargeFileHandler(self._store, config=self.config.files, model=self.model)
        result = await handler.handle(path)
        if record:
            await self.record("user", [result.part])
        await self.events.apublish(
            EventName.FILE_ADDED,
            self.id,
            file_id=result.file_id,
            inline=result.inline,
            tokens=result.token_count,
        )
        return result

    async def read_file(self, file_id: str, lines: tuple[int, int] | None = None) -> str:
        """The text of a stored file, whole or ``lines=(first, last)`` (from 1, both
        included). An unknown id raises :class:`~lossless.errors.NotFoundError`."""
        from lossless.files import LargeFileHandler

        handler = LargeFileHandler(self._store, config=self.config.files, model=self.model)
        return await handler.read(file_id, lines)

    async def read_media(self, media_id: str) -> bytes:
        """The exact bytes of a stored image or document (``image_…``,
        ``document_…``). An unknown id, or an image known only by its URL, raises
        :class:`~lossless.errors.NotFoundError`."""
        found = await anyio.to_thread.run_sync(self._store.read_media, media_id)
        if found is None:
            raise NotFoundError(f"no image or document with bytes stored as {media_id!r}")
        return found[1]

    async def pin(self, text: str, *, key: str | None = None, priority: Priority = "high") -> str:
        """Pin a fact: it goes into the system message of every request (the
        ``truth`` zone) and survives every compaction. Returns its key (given, or
        made from the text's subject: a new value of the same fact replaces it, as
        pinning again under a key does). Pinned facts are the ledger's rules."""
        if key is None:
            # Keyed by its subject, so a new value of the same fact replaces it (a
            # text that is no string is refused by the write, for what it is).
            key = PIN_PREFIX + (_native.ledger_subject(text) if isinstance(text, str) else "")
        await self.arena.add("truth", key, text, priority=priority)
        assert key is not None
        return key

    @property
    def ledger(self) -> Ledger:
        """The session's ledger: the rules, constraints, facts, decisions,
        preferences, goals and records compaction keeps in every request."""
        return Ledger(
            self.store,
            self.id,
            ledger_caps(self.config.arena, self.budget.usable),
            pins=self.arena.entries,
            unpin=self.unpin,
        )

    async def unpin(self, key: str) -> bool:
        """Take a pinned fact out; whether it was pinned. Only a pinned fact: an entry
        of another zone under the same key stays."""
        return await self.arena.remove("truth", key)

    async def set_task(self, text: str) -> ArenaWriteResult:
        """Set the task state (the ``task_state`` zone), shown next to the newest
        user message of every request until it is set again."""
        return await self.arena.add("task_state", "task", text, priority="critical")

    async def set_working_memory(self, text: str) -> ArenaWriteResult:
        """Set the working memory (the ``memory_working`` zone); text longer than the
        zone's cap is cut to it, head and tail kept, as the result reports."""
        return await self.arena.add("memory_working", "working", text, priority="critical")

    async def compact(self) -> CompactionResult:
        """Run one compaction now, even under the soft threshold. Never raises."""
        self._check_open()
        await self.compaction.wait_for_pending()
        return await self.compaction.run_compaction(force=True)
