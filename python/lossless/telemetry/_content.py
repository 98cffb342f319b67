"""What was said, in the GenAI conventions' message form, for ``capture_content``.

Only with ``TelemetryConfig(capture_content=True)``: turning a request into this
form walks its messages, which a session otherwise never does on a turn. Images,
documents and provider-signed blocks go as their type alone, never their bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from lossless.parts import ReasoningPart, ToolPart

__all__ = ["reply_messages", "request_messages"]


def request_messages(context: object) -> str:
    """The messages of a request (any format a session gives) as JSON."""
    rows: list[dict[str, Any]] = []
    system = getattr(context, "system", None)
    if isinstance(system, list) and system:
        rows.append({"role": "system", "parts": [_part(block) for block in system]})
    messages = getattr(context, "messages", None)
    if messages is None:
        messages = getattr(context, "input", None) or []
    rows.extend(_message(message) for message in messages if isinstance(message, Mapping))
    return json.dumps(rows, default=str)


def reply_messages(
    text: str,
    tool_calls: Sequence[ToolPart],
    reasoning: Sequence[ReasoningPart],
    finish: str | None,
) -> str:
    """A model's reply as JSON: one assistant message."""
    parts: list[dict[str, Any]] = [
        {"type": "reasoning", "content": part.text} for part in reasoning if part.text
    ]
    if text:
        parts.append({"type": "text", "content": text})
    parts.extend(
        {"type": "tool_call", "id": call.call_id, "name": call.name, "arguments": call.input}
        for call in tool_calls
    )
    message = {"role": "assistant", "parts": parts, "finish_reason": finish or "stop"}
    return json.dumps([message], default=str)


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    kind = message.get("type")
    if kind == "function_call":
        role, parts = "assistant", [_part(message)]
    elif kind == "function_call_output":
        role, parts = "tool", [_part(message)]
    elif kind is not None and kind != "message":
        role, parts = "assistant", [_part(message)]
    else:
        role = str(message.get("role", "user"))
        parts = _parts(message.get("content"))
        if role == "tool":
            parts = [
                {
                    "type": "tool_call_response",
                    "id": message.get("tool_call_id"),
                    "result": _text(message.get("content")),
                }
            ]
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            parts.append(
                {
                    "type": "tool_call",
                    "id": call.get("id"),
                    "name": function.get("name"),
                    "arguments": function.get("arguments"),
                }
            )
    return {"role": role, "parts": parts}


def _parts(content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}] if content else []
    if isinstance(content, list):
        return [_part(block) for block in content if isinstance(block, Mapping)]
    return []


def _part(block: Mapping[str, Any]) -> dict[str, Any]:
    """One content block or item of Chat Completions, Anthropic or Responses."""
    kind = block.get("type")
    if kind in ("text", "input_text", "output_text"):
        return {"type": "text", "content": block.get("text", "")}
    if kind == "thinking":
        return {"type": "reasoning", "content": block.get("thinking", "")}
    if kind in ("tool_use", "function_call"):
        call_id = block.get("id") if kind == "tool_use" else block.get("call_id")
        arguments = block.get("input") if kind == "tool_use" else block.get("arguments")
        return {
            "type": "tool_call",
            "id": call_id,
            "name": block.get("name"),
            "arguments": arguments,
        }
    if kind == "tool_result":
        result = _text(block.get("content"))
        return {"type": "tool_call_response", "id": block.get("tool_use_id"), "result": result}
    if kind == "function_call_output":
        result = _text(block.get("output"))
        return {"type": "tool_call_response", "id": block.get("call_id"), "result": result}
    return {"type": str(kind)}


def _text(content: object) -> str:
    """The text of a tool result: a string, or the text blocks of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, Mapping) and "text" in block
        )
    return ""
