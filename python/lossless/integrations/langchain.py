"""A LangChain agent middleware that keeps the conversation in lossless (``pip install
'lossless[langchain]'``).

``create_agent(model, tools, middleware=[LosslessMiddleware(model="openai/gpt-4o")])``:
before each model call the agent's messages are synced into a lossless session (each
stored once, however often the agent hands them over), and the model gets lossless's
bounded request instead of the whole state: the system prompt with pinned facts in
front, summaries of what was compacted, the newest messages, within the window. The
agent's state itself keeps every message, as LangChain wants. The recall tools are
offered to the agent, so it can read back what was compacted. A drop-in for
``SummarizationMiddleware``; async agents only (``ainvoke``, ``astream``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from typing import Any, cast

import anyio
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import (
    AnyMessage,
    SystemMessage,
    convert_to_messages,
    convert_to_openai_messages,
)
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from lossless.config import Config
from lossless.integrations._sessions import KeyedSessions, recall_specs

__all__ = ["LosslessMiddleware"]


class LosslessMiddleware(AgentMiddleware):
    """Hands the model lossless's bounded request of the agent's conversation.

    ``model`` is the litellm name of the agent's model (its window bounds the
    request); ``db``, ``config`` those of the sessions. A conversation's session is
    named ``key``, else the run's ``thread_id`` (``config={"configurable":
    {"thread_id": ...}}``), else ``"langchain"``. ``recall`` offers the recall tools.
    """

    def __init__(
        self,
        *,
        model: str,
        db: str | os.PathLike[str] = "lossless.db",
        config: Config | None = None,
        key: str | None = None,
        recall: bool = True,
    ) -> None:
        super().__init__()
        self.sessions = KeyedSessions(model=model, db=db, config=config)
        self._key = key
        self.tools: list[BaseTool] = (
            [self._recall_tool(spec) for spec in recall_specs()] if recall else []
        )

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        key = self._conversation()
        system = request.system_message.text if request.system_message is not None else None
        history = convert_to_openai_messages(request.messages)
        tools = [convert_to_openai_tool(tool) for tool in request.tools]
        async with self.sessions.use(key, system or None) as session:
            bounded = await session.sync(history, format="openai", tools=tools or None)
        messages = bounded.messages
        lead = None
        if messages and messages[0].get("role") == "system":
            lead, messages = SystemMessage(content=messages[0]["content"]), messages[1:]
        bounded_messages = cast("list[AnyMessage]", convert_to_messages(messages))
        return await handler(request.override(messages=bounded_messages, system_message=lead))

    def _recall_tool(self, spec: dict[str, Any]) -> BaseTool:
        name = spec["name"]

        async def invoke(**arguments: Any) -> str:
            # A tool runs inside the graph's run, so the thread is the caller's own.
            key, call = self._conversation(), json.dumps(arguments)
            return await anyio.to_thread.run_sync(self.sessions.recall, key, name, call)

        return StructuredTool.from_function(
            coroutine=invoke,
            name=name,
            description=spec["description"],
            args_schema=spec["parameters"],
        )

    def _conversation(self) -> str:
        """The key of the running conversation's session."""
        return self._key or _thread_id() or "langchain"

    async def aclose(self) -> None:
        """Closes the sessions this middleware opened."""
        await self.sessions.aclose()


def _thread_id() -> str | None:
    """The running graph's ``thread_id``, if it has one."""
    try:
        from langgraph.config import get_config

        value = get_config().get("configurable", {}).get("thread_id")
    except RuntimeError:  # called outside a running graph
        return None
    return str(value) if value is not None else None
