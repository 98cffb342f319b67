"""Sessions an adapter keeps open by key, for the frameworks that hand over the whole
history on every model call (LangChain's middleware, PydanticAI's history processor)."""

from __future__ import annotations

import os
from contextlib import AbstractAsyncContextManager
from typing import Any

from lossless.config import Config
from lossless.recall.tools import RECALL_TOOLS, run_recall_tool
from lossless.session import Session
from lossless.session._keyed import SessionsByKey

__all__ = ["KeyedSessions", "recall_specs"]


class KeyedSessions:
    """The sessions of an adapter's conversations, by key, on one model."""

    def __init__(self, *, model: str, db: str | os.PathLike[str], config: Config | None) -> None:
        self.model = model
        self._sessions = SessionsByKey(db, config)

    def use(self, key: str, system: str | None) -> AbstractAsyncContextManager[Session]:
        """The session ``key`` names, with ``system`` as its prompt, for one call at
        a time."""
        return self._sessions.use(key, self.model, system)

    async def session(self, key: str, system: str | None) -> Session:
        """The session ``key`` names, with ``system`` as its prompt."""
        async with self.use(key, system) as session:
            return session

    def recall(self, key: str, name: str, arguments: str) -> str:
        """Answers a recall tool call on the session ``key`` names: the calling run's
        own conversation, whichever conversation another run sent last."""
        session = self._sessions.get(key)
        if session is None:
            return '{"error": "no conversation yet"}'
        return run_recall_tool(session, name, arguments)

    async def aclose(self) -> None:
        """Closes every open session."""
        await self._sessions.aclose()


def recall_specs() -> list[dict[str, Any]]:
    """The recall tools' definitions (Chat Completions ``function`` objects)."""
    return [tool["function"] for tool in RECALL_TOOLS]
