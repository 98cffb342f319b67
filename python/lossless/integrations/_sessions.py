"""Sessions an adapter keeps open by key, for the frameworks that hand over the whole
history on every model call (LangChain's middleware, PydanticAI's history processor)."""

from __future__ import annotations

import os
from typing import Any

import anyio

from lossless.config import Config
from lossless.errors import InvalidInputError
from lossless.recall.tools import RECALL_TOOLS, run_recall_tool
from lossless.session import Session

__all__ = ["KeyedSessions", "recall_specs"]


class KeyedSessions:
    """Sessions of one database by key, opened on first use, one call at a time each.

    A key whose stored session has another system text starts a fresh session under
    it (a session's prompt is fixed); the old one stays stored.
    """

    def __init__(self, *, model: str, db: str | os.PathLike[str], config: Config | None) -> None:
        self.model = model
        self._db = db
        self._config = config
        self._open: dict[str, Session] = {}
        self._locks: dict[str, anyio.Lock] = {}

    def lock(self, key: str) -> anyio.Lock:
        return self._locks.setdefault(key, anyio.Lock())

    async def session(self, key: str, system: str | None) -> Session:
        """The session ``key`` names, with ``system`` as its prompt."""
        session = self._open.get(key)
        if session is not None and session.system_prompt == system:
            return session
        if session is not None:
            await session.close()
        try:
            session = await Session.open_keyed(
                key, model=self.model, db=self._db, config=self._config, system_prompt=system
            )
        except InvalidInputError:
            session = await Session.create(
                model=self.model, db=self._db, config=self._config, system_prompt=system, key=key
            )
        self._open[key] = session
        return session

    def recall(self, key: str, name: str, arguments: str) -> str:
        """Answers a recall tool call on the session ``key`` names: the calling run's
        own conversation, whichever conversation another run sent last."""
        session = self._open.get(key)
        if session is None:
            return '{"error": "no conversation yet"}'
        return run_recall_tool(session, name, arguments)

    async def aclose(self) -> None:
        """Closes every open session."""
        while self._open:
            _, session = self._open.popitem()
            await session.close()


def recall_specs() -> list[dict[str, Any]]:
    """The recall tools' definitions (Chat Completions ``function`` objects)."""
    return [tool["function"] for tool in RECALL_TOOLS]
