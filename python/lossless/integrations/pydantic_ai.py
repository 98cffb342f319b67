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
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import Tool
from pydantic_ai.toolsets import FunctionToolset

from lossless.config import Config
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
        key = self._key(ctx) if callable(self._key) else self._key
        system, history = _to_openai(messages)
        async with self.sessions.lock(key):
            session = await self.sessions.session(key, system)
            bounded = await session.sync(history, format="openai")
        return _from_openai(bounded.messages)

    def get_toolset(self) -> FunctionToolset[Any] | None:
        """The recall tools, offered to the agent."""
        if not self._recall:
            return None
        return FunctionToolset([self._recall_tool(spec) for spec in recall_specs()])

    def _recall_tool(self, spec: dict[str, Any]) -> Tool[Any]:
        name = spec["name"]

        async def invoke(**arguments: Any) -> str:
            return await anyio.to_thread.run_sync(self.sessions.recall, name, json.dumps(arguments))

        return Tool.from_schema(
            invoke, name=name, description=spec["description"], json_schema=spec["parameters"]
        )

    async def aclose(self) -> None:
        """Closes the sessions this processor opened."""
        await self.sessions.aclose()


def _to_openai(messages: list[ModelMessage]) -> tuple[str | None, list[dict[str, Any]]]:
    """The run's messages as Chat Completions messages, and the leading system text."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            converted.extend(_request_messages(message))
        else:
            converted.append(_response_message(message))
    system = None
    if converted and converted[0]["role"] == "system":
        system = converted[0]["content"]
    return system, converted


def _request_messages(request: ModelRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in request.parts:
        if isinstance(part, SystemPromptPart):
            out.append({"role": "system", "content": part.content})
        elif isinstance(part, UserPromptPart):
            content = part.content
            text = (
                content
                if isinstance(content, str)
                else " ".join(item for item in content if isinstance(item, str))
            )
            out.append({"role": "user", "content": text})
        elif isinstance(part, ToolReturnPart):
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": part.tool_call_id,
                    "content": part.model_response_str(),
                }
            )
        elif isinstance(part, RetryPromptPart):
            if part.tool_name is not None:
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": part.tool_call_id,
                        "content": part.model_response(),
                    }
                )
            else:
                out.append({"role": "user", "content": part.model_response()})
    return out


def _response_message(response: ModelResponse) -> dict[str, Any]:
    texts = [part.content for part in response.parts if isinstance(part, TextPart)]
    calls = [
        {
            "id": part.tool_call_id,
            "type": "function",
            "function": {"name": part.tool_name, "arguments": part.args_as_json_str()},
        }
        for part in response.parts
        if isinstance(part, ToolCallPart)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _from_openai(messages: list[dict[str, Any]]) -> list[ModelMessage]:
    """Chat Completions messages as PydanticAI's; results of one turn in one request."""
    out: list[ModelMessage] = []
    names: dict[str, str] = {}
    pending: list[ModelRequestPart] = []

    def flush() -> None:
        if pending:
            out.append(ModelRequest(parts=list(pending)))
            pending.clear()

    for message in messages:
        role, content = message["role"], message.get("content")
        text = content if isinstance(content, str) else _text(content)
        if role == "assistant":
            flush()
            parts: list[Any] = [TextPart(text)] if text else []
            for call in message.get("tool_calls") or ():
                names[call["id"]] = call["function"]["name"]
                parts.append(
                    ToolCallPart(
                        call["function"]["name"],
                        call["function"]["arguments"],
                        tool_call_id=call["id"],
                    )
                )
            out.append(ModelResponse(parts=parts))
        elif role == "tool":
            call_id = message["tool_call_id"]
            pending.append(ToolReturnPart(names.get(call_id, "tool"), text, tool_call_id=call_id))
        elif role == "system":
            pending.append(SystemPromptPart(text))
        else:
            pending.append(UserPromptPart(text))
    flush()
    return out


def _text(content: object) -> str:
    if isinstance(content, list):
        return "\n".join(str(block.get("text", "")) for block in content if isinstance(block, dict))
    return "" if content is None else str(content)
