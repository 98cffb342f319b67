"""Sessions kept open by key, for the callers that serve many conversations from one
process (the proxy, the framework adapters): opened on first use, one caller at a
time per key, at most a bounded number open, the least recently used closed first."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from lossless.config import Config
from lossless.errors import InvalidInputError
from lossless.session._session import Session

__all__ = ["SessionsByKey"]


class SessionsByKey:
    """Sessions of one database by key.

    A key whose stored session has another model or system text starts a fresh
    session under it (both are fixed when a session is made); the old one stays
    stored under its id. With ``most``, at most that many stay open.
    """

    def __init__(
        self, db: str | os.PathLike[str], config: Config | None, most: int | None = None
    ) -> None:
        self._db = db
        self._config = config
        self._most = most
        self._open: OrderedDict[str, Session] = OrderedDict()
        self._locks: dict[str, anyio.Lock] = {}

    @asynccontextmanager
    async def use(self, key: str, model: str, system: str | None) -> AsyncIterator[Session]:
        """The session ``key`` names, with ``model`` and ``system``, for one caller at
        a time."""
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

    def get(self, key: str) -> Session | None:
        """The open session of ``key``, if it is open."""
        return self._open.get(key)

    async def _opened(self, key: str, model: str, system: str | None) -> Session:
        try:
            return await Session.open_keyed(
                key, model=model, db=self._db, config=self._config, system_prompt=system
            )
        except InvalidInputError:
            return await Session.create(
                model=model, db=self._db, config=self._config, system_prompt=system, key=key
            )

    async def _close_least_used(self) -> None:
        while self._most is not None and len(self._open) > self._most:
            key, session = self._open.popitem(last=False)
            if self._locks[key].locked():
                # In use: it stays, and the others wait for the next call.
                self._open[key] = session
                self._open.move_to_end(key, last=False)
                return
            await session.close()
            del self._locks[key]

    async def aclose(self) -> None:
        """Closes every open session."""
        while self._open:
            _, session = self._open.popitem()
            await session.close()
