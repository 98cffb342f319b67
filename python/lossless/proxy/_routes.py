"""What each endpoint's body holds of the conversation, and how the bounded request
goes back into it: everything else in the body is sent upstream unchanged."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lossless.formats import MessageFormat
from lossless.proxy._http import HttpError
from lossless.results import AnthropicContext, AnyContext, BuiltContext, ResponsesContext

__all__ = ["ROUTES", "Conversation", "Route", "conversation_of", "with_request"]


@dataclass(frozen=True, slots=True)
class Route:
    """An endpoint the proxy manages: its format, and the provider litellm names
    for the session's model (its tokenizer and limits)."""

    format: MessageFormat
    provider: str


ROUTES: dict[str, Route] = {
    "/v1/chat/completions": Route("openai", "openai"),
    "/v1/messages": Route("anthropic", "anthropic"),
    "/v1/responses": Route("responses", "openai"),
}


@dataclass(frozen=True, slots=True)
class Conversation:
    """What a body holds of the conversation."""

    model: str
    messages: list[Any]
    #: The system text the session keeps verbatim in front (None: none).
    system: str | None
    #: The body's tool definitions as Chat Completions ones, for their tokens.
    tools: list[dict[str, Any]] | None


def conversation_of(route: Route, body: Mapping[str, Any]) -> Conversation:
    """The conversation ``body`` holds, or :class:`HttpError` 400."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise HttpError(400, "the body names no model")
    key = "input" if route.format == "responses" else "messages"
    messages = body.get(key)
    if isinstance(messages, str) and route.format == "responses":
        messages = [{"role": "user", "content": messages}]
    if not isinstance(messages, list) or not messages:
        raise HttpError(400, f"the body has no {key} list")
    system: str | None = None
    if route.format == "openai":
        system, messages = _leading_system(messages)
    elif route.format == "anthropic":
        system = _text_of(body.get("system"))
    else:
        system = _text_of(body.get("instructions"))
    return Conversation(model, messages, system, _chat_tools(route, body.get("tools")))


def with_request(route: Route, body: Mapping[str, Any], request: AnyContext) -> dict[str, Any]:
    """``body`` with its conversation replaced by the bounded request."""
    sent = dict(body)
    if isinstance(request, BuiltContext):
        sent["messages"] = request.messages
    elif isinstance(request, AnthropicContext):
        sent["messages"] = request.messages
        if request.system:
            sent["system"] = request.system
        else:
            sent.pop("system", None)
    elif isinstance(request, ResponsesContext):
        # The instructions are the session's prompt, which leads the input now.
        sent["input"] = request.input
        sent.pop("instructions", None)
    return sent


def _leading_system(messages: list[Any]) -> tuple[str | None, list[Any]]:
    """A leading system message's text, taken as the session's prompt."""
    first = messages[0]
    if isinstance(first, Mapping) and first.get("role") in ("system", "developer"):
        text = _text_of(first.get("content"))
        if text is not None:
            return text, messages
    return None, messages


def _text_of(value: object) -> str | None:
    """A system text: a string, or the text of text blocks."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, list):
        texts = [
            block["text"]
            for block in value
            if isinstance(block, Mapping) and isinstance(block.get("text"), str)
        ]
        return "\n\n".join(texts) or None
    return None


def _chat_tools(route: Route, tools: object) -> list[dict[str, Any]] | None:
    """The body's tools as Chat Completions definitions (what lossless counts)."""
    if not isinstance(tools, list) or not tools:
        return None
    if route.format == "openai":
        return [tool for tool in tools if isinstance(tool, dict)]
    converted = []
    for tool in tools:
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            continue
        schema = tool.get("input_schema") or tool.get("parameters") or {"type": "object"}
        function = {"name": tool["name"], "parameters": schema}
        if isinstance(tool.get("description"), str):
            function["description"] = tool["description"]
        converted.append({"type": "function", "function": function})
    return converted or None
