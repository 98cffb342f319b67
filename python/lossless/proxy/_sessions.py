"""Which session a request belongs to, and the sessions the proxy keeps open.

A client names its conversation with the ``X-Lossless-Session`` header; without
one, a conversation is known by its opening (the endpoint, the system text and the
first message), which every request of it repeats. Requests of one session take
turns; a bounded number of sessions stay open, the least recently used closed first.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio

from lossless.config import Config
from lossless.errors import InvalidInputError
from lossless.proxy._routes import Conversation, Route
from lossless.session import Session

__all__ = ["SESSION_HEADER", "OpenSessions", "session_key"]

SESSION_HEADER = "x-lossless-session"


def session_key(route: Route, headers: Mapping[str, str], conversation: Conversation) -> str:
    """The key of the session a request belongs to."""
    named = headers.get(SESSION_HEADER, "").strip()
    if named:
        return named
    opening = [route.format, conversation.system, _plain(conversation.messages[0])]
    digest = hashlib.sha256(json.dumps(opening, sort_keys=True).encode()).hexdigest()
    return f"proxy:{digest[:32]}"


def _plain(message: Any) -> Any:
    dump = getattr(message, "model_dump", None)
    return dump() if callable(dump) else message


class OpenSessions:
    """Sessions of one database, opened by key on first use and kept open."""

    def __init__(self, db: str | os.PathLike[str], config: Config | None, most: int) -> None:
        self._db = db
        self._config = config
        self._most = most
        self._open: OrderedDict[str, Session] = OrderedDict()
        self._locks: dict[str, anyio.Lock] = {}

    @asynccontextmanager
    async def use(self, key: str, model: str, system: str | None) -> AsyncIterator[Session]:
        """The session ``key`` names, for one request at a time."""
        lock = self._locks.setdefault(key, anyio.Lock())
        async with lock:
            session = self._open.pop(key, None)
            if session is not None and (session.model, session.system_prompt) != (model, system):
                await session.close()
                session = None
            if session is None:
                session = await self._opened(key, model, system)
            self._open[key] = session
            await self._close_least_used()
            yield session

    async def _opened(self, key: str, model: str, system: str | None) -> Session:
        try:
            return await Session.open_keyed(
                key, model=model, db=self._db, config=self._config, system_prompt=system
            )
        except InvalidInputError:
            # The key's session has another model or system text: a fresh start,
            # which the key names from now on (the old one stays stored).
            return await Session.create(
                model=model, db=self._db, config=self._config, system_prompt=system, key=key
            )

    async def _close_least_used(self) -> None:
        while len(self._open) > self._most:
            key, session = self._open.popitem(last=False)
            if not self._locks[key].locked():
                await session.close()
                del self._locks[key]
            else:
                self._open[key] = session
                return

    async def close(self) -> None:
        """Closes every open session."""
        while self._open:
            _, session = self._open.popitem()
            await session.close()
