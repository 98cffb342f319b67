"""PydanticAI's history, kept by lossless (``pip install 'lossless[pydantic-ai]'``).

``Agent(model, capabilities=[LosslessHistory(model="openai/gpt-4o")])``: before each
model request the run's messages are synced into a lossless session (each stored
once, however often they are handed over) and the model gets lossless's bounded
request instead: the system prompt with pinned facts in front, summaries of what was
compacted, the newest messages, within the window. The run's own history keeps every
message (``result.all_messages()`` is whole), and the recall tools are offered, so
the agent reads back what was compacted.

It is a capability, PydanticAI's hook around each model request, rather than a
``history_processors`` entry: a history processor's output replaces the run's
history, so the next turn would hand lossless a bounded list instead of the whole one.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from typing import Any

import anyio
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import Tool
from pydantic_ai.toolsets import FunctionToolset

from lossless.config import Config
from lossless.integrations._pydantic_messages import from_openai, to_openai
from lossless.integrations._sessions import KeyedSessions, recall_specs

__all__ = ["LosslessHistory"]

Key = str | Callable[[RunContext[Any]], str]


class LosslessHistory(AbstractCapability[Any]):
    """The bounded request for each model request: ``capabilities=[LosslessHistory(...)]``.

    ``model`` is the litellm name of the agent's model (its window bounds the
    request); ``db`` and ``config`` those of the sessions. ``key`` names the
    conversation's session: a string, or a function of the run's context (its
    ``deps``, say) for an agent that serves many conversations. ``recall`` offers
    the recall tools to the agent.
    """

    def __init__(
        self,
        *,
        model: str,
        db: str | os.PathLike[str] = "lossless.db",
        config: Config | None = None,
        key: Key = "pydantic-ai",
        recall: bool = True,
    ) -> None:
        self.sessions = KeyedSessions(model=model, db=db, config=config)
        self._key = key
        self._recall = recall

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds open sessions: not a spec of its own

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Sends the model the bounded request in place of the run's messages."""
        bounded = await self.bounded(ctx, request_context.messages)
        return dataclasses.replace(request_context, messages=bounded)

    async def bounded(
        self, ctx: RunContext[Any], messages: list[ModelMessage]
    ) -> list[ModelMessage]:
        """The run's ``messages`` synced into the conversation's session, and the
        bounded request of it, as PydanticAI messages."""
        key = self._key_of(ctx)
        system, history = to_openai(messages)
        async with self.sessions.use(key, system) as session:
            bounded = await session.sync(history, format="openai")
        return from_openai(bounded.messages)

    def _key_of(self, ctx: RunContext[Any]) -> str:
        return self._key(ctx) if callable(self._key) else self._key

    def get_toolset(self) -> FunctionToolset[Any] | None:
        """The recall tools, offered to the agent."""
        if not self._recall:
            return None
        return FunctionToolset([self._recall_tool(spec) for spec in recall_specs()])

    def _recall_tool(self, spec: dict[str, Any]) -> Tool[Any]:
        name = spec["name"]

        async def invoke(ctx: RunContext[Any], **arguments: Any) -> str:
            key, call = self._key_of(ctx), json.dumps(arguments)
            return await anyio.to_thread.run_sync(self.sessions.recall, key, name, call)

        return Tool.from_schema(
            invoke,
            name=name,
            description=spec["description"],
            json_schema=spec["parameters"],
            takes_ctx=True,
        )

    async def aclose(self) -> None:
        """Closes the sessions this processor opened."""
        await self.sessions.aclose()
