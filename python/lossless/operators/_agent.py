"""The loop an AgenticMap item runs in its sub-session: model turns, the caller's
tools answered between them, until the agent answers without calling a tool."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lossless.errors import LLMError
from lossless.operators._run import Outcome
from lossless.parts import ToolPart

if TYPE_CHECKING:
    from lossless.session import Message, Session, TurnResult

__all__ = ["AgentTool", "Conversation"]

ToolHandler = Callable[[dict[str, Any]], str | Awaitable[str]]


@dataclass(frozen=True)
class AgentTool:
    """A tool the agents of an AgenticMap may call: its name, description and JSON
    Schema of arguments (as the model sees them), and the handler that answers a
    call with text (sync or async). A handler that raises answers the call with an
    error the model reads; the item goes on."""

    name: str
    handler: ToolHandler
    description: str = ""
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )

    def definition(self) -> dict[str, Any]:
        """The tool as an OpenAI tool definition."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


class Conversation:
    """One item's turns in its session, counted against ``max_turns``."""

    def __init__(
        self,
        session: Session,
        tools: Sequence[AgentTool],
        *,
        max_turns: int,
        continuation: str | None,
        outcome: Outcome,
    ) -> None:
        self.session = session
        self.tools = {tool.name: tool for tool in tools}
        self.definitions = [tool.definition() for tool in tools] or None
        self.max_turns = max_turns
        self.continuation = continuation
        self.outcome = outcome
        self.turns = 0

    async def start(self, prompt: str) -> None:
        """A new item: its prompt, then the loop."""
        await self._loop(lambda: self.session.send(prompt, tools=self.definitions))

    async def resume(self, history: list[Message]) -> None:
        """An item whose session holds turns already: go on from where it stopped."""
        self.turns = sum(1 for m in history if m.role == "assistant")
        last = history[-1]
        if last.role == "assistant" and last.status == "complete":
            if self._finished(last):
                self._succeed(last.text)
                return
            if await self._answer_calls(_open_calls(last)):
                await self._loop(lambda: self.session.respond(tools=self.definitions))
                return
        await self._loop(self._next_model_turn)

    def _finished(self, message: Message) -> bool:
        reason = message.usage.get("finish_reason")
        return not _open_calls(message) and bool(message.text.strip()) and reason != "length"

    async def _next_model_turn(self) -> TurnResult:
        if self.continuation:
            return await self.session.send(self.continuation, tools=self.definitions)
        return await self.session.respond(tools=self.definitions)

    async def _loop(self, first: Callable[[], Awaitable[TurnResult]]) -> None:
        step = first
        while True:
            if self.turns >= self.max_turns:
                self._fail("max_turns", f"the agent had not finished after {self.max_turns} turns")
                return
            try:
                result = await step()
            except LLMError as err:
                self._fail("llm_error", str(err))
                return
            self.turns += 1
            self.outcome.attempts = self.turns
            self.outcome.add_usage(result.input_tokens, result.output_tokens, result.cost)
            if result.finish_reason == "length":
                self._fail("length", "a reply was cut short at the output token limit")
                return
            if result.tool_calls:
                await self._answer_calls(result.tool_calls)
                step = self._respond
                continue
            if result.text.strip():
                self._succeed(result.text)
                return
            if not self.continuation:
                self._fail("empty", "the agent ended its turn without an answer")
                return
            step = self._continue

    async def _respond(self) -> TurnResult:
        return await self.session.respond(tools=self.definitions)

    async def _continue(self) -> TurnResult:
        assert self.continuation is not None
        return await self.session.send(self.continuation, tools=self.definitions)

    async def _answer_calls(self, calls: Sequence[ToolPart]) -> bool:
        """Answers each call with its tool's output, or an error; whether any was."""
        for call in calls:
            tool = self.tools.get(call.name)
            if tool is None:
                await self.session.update_tool(
                    call.call_id, status="error", error=f"no tool named {call.name!r}"
                )
                continue
            try:
                arguments = (
                    call.input
                    if isinstance(call.input, Mapping)
                    else json.loads(call.input or "{}")
                )
                answer = tool.handler(dict(arguments))
                if inspect.isawaitable(answer):
                    answer = await answer
                await self.session.update_tool(call.call_id, status="completed", output=str(answer))
            except Exception as err:
                await self.session.update_tool(
                    call.call_id, status="error", error=f"{type(err).__name__}: {err}"
                )
        return bool(calls)

    def _succeed(self, text: str) -> None:
        self.outcome.output = text
        self.outcome.attempts = self.turns

    def _fail(self, kind: str, error: str) -> None:
        self.outcome.error_kind, self.outcome.error = kind, error
        self.outcome.attempts = self.turns


def _open_calls(message: Message) -> list[ToolPart]:
    return [
        part
        for part in message.parts
        if isinstance(part, ToolPart) and part.status in ("pending", "running")
    ]
