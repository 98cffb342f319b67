"""Anthropic Messages in: the conversion behind ``record_messages(format="anthropic")``.

An agent that calls Anthropic's SDK holds its history as Messages: the system text
apart, turns of content blocks. :func:`to_openai` turns such a history into the
OpenAI chat messages :func:`lossless.openai_format.to_turns` stores: a ``system``
message per system text block, ``thinking``/``redacted_thinking`` blocks as the
assistant's ``thinking_blocks`` (kept verbatim), a provider's ``compaction`` blocks
as litellm's ``compaction_blocks`` (kept verbatim), ``tool_use`` blocks as its
``tool_calls`` (the input as compact JSON text), each ``tool_result`` block as a
``tool`` message, in order before the text of the user turn that carried it.
Images and documents become the Chat Completions content parts that carry them
(``image_url`` with a data URL or a URL, ``file`` with ``file_data``).
``cache_control`` marks, ``citations`` and ``is_error`` are not stored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from lossless.errors import InvalidInputError
from lossless.openai_format import OpenAIMessage, mapping_of

__all__ = ["BLOCK_TYPES", "to_openai", "tool_of"]

#: Content block types only Anthropic's messages have.
BLOCK_TYPES = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document", "compaction"}
)
_REASONING = ("thinking", "redacted_thinking")


def to_openai(messages: Sequence[OpenAIMessage], system: object = None) -> list[dict[str, Any]]:
    """``system`` (a string or text blocks) and ``messages`` as OpenAI chat messages.
    Raises :class:`InvalidInputError` naming the first block it cannot read."""
    out = _system(system)
    for index, raw in enumerate(messages):
        message = mapping_of(raw)
        if message is None:
            raise InvalidInputError(f"messages[{index}]: expected a dict")
        role = message.get("role")
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list | tuple):
            raise InvalidInputError(f"messages[{index}].content: expected a string or a list")
        if role == "assistant":
            out.append(_assistant(index, blocks))
        elif role in ("user", "system"):
            out.extend(_user(index, str(role), blocks))
        else:
            raise InvalidInputError(
                f"messages[{index}].role: expected 'user' or 'assistant', got {role!r}"
            )
    return out


def _system(system: object) -> list[dict[str, Any]]:
    if system is None:
        return []
    if isinstance(system, str):
        return [{"role": "system", "content": system}]
    if not isinstance(system, list | tuple):
        raise InvalidInputError("system: expected a string or a list of text blocks")
    out = []
    for position, raw in enumerate(system):
        block = mapping_of(raw)
        if block is None or block.get("type") != "text":
            raise InvalidInputError(f"system[{position}]: expected a text block")
        out.append({"role": "system", "content": block.get("text")})
    return out


def _blocks(index: int, blocks: Sequence[object]) -> list[tuple[str, Mapping[str, Any]]]:
    typed = []
    for position, raw in enumerate(blocks):
        block = mapping_of(raw)
        if block is None:
            raise InvalidInputError(f"messages[{index}].content[{position}]: expected a dict")
        typed.append((f"messages[{index}].content[{position}]", block))
    return typed


def _assistant(index: int, blocks: Sequence[object]) -> dict[str, Any]:
    texts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    thinking: list[dict[str, Any]] = []
    compaction: list[dict[str, Any]] = []
    for where, block in _blocks(index, blocks):
        kind = block.get("type")
        if kind == "text":
            texts.append({"type": "text", "text": block.get("text")})
        elif kind in _REASONING:
            thinking.append(dict(block))
        elif kind == "compaction":
            compaction.append(dict(block))
        elif kind == "tool_use":
            arguments = json.dumps(
                block.get("input", {}), ensure_ascii=False, separators=(",", ":")
            )
            call = {"name": block.get("name"), "arguments": arguments}
            calls.append({"id": block.get("id"), "type": "function", "function": call})
        else:
            raise InvalidInputError(
                f"{where}.type: {kind!r} is not an assistant block lossless keeps"
            )
    message: dict[str, Any] = {"role": "assistant", "content": texts or None}
    if calls:
        message["tool_calls"] = calls
    if thinking:
        message["thinking_blocks"] = thinking
    if compaction:
        # Where litellm carries them, and the Chat Completions reader keeps them.
        message["provider_specific_fields"] = {"compaction_blocks": compaction}
    if not texts and not calls:
        message["content"] = ""
    return message


def _user(index: int, role: str, blocks: Sequence[object]) -> list[dict[str, Any]]:
    """A user turn: a ``tool`` message per result, then the rest as one message."""
    results: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for where, block in _blocks(index, blocks):
        if block.get("type") == "tool_result":
            content = block.get("content", "")
            parts_of = [] if content is None else content
            items = (
                parts_of
                if isinstance(parts_of, str)
                else [
                    _part(f"{where}.content[{at}]", mapping_of(item))
                    for at, item in enumerate(parts_of)
                ]
            )
            results.append(
                {"role": "tool", "tool_call_id": block.get("tool_use_id"), "content": items}
            )
        else:
            parts.append(_part(where, block))
    if parts:
        only_text = len(parts) == 1 and parts[0]["type"] == "text"
        results.append({"role": role, "content": parts[0]["text"] if only_text else parts})
    return results


def _part(where: str, block: Mapping[str, Any] | None) -> dict[str, Any]:
    """A text, image or document block as a Chat Completions content part."""
    if block is None:
        raise InvalidInputError(f"{where}: expected a dict")
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text")}
    if kind not in ("image", "document"):
        raise InvalidInputError(f"{where}.type: {kind!r} is not a block lossless keeps")
    source = mapping_of(block.get("source")) or {}
    if source.get("type") == "base64":
        url = f"data:{source.get('media_type')};base64,{source.get('data')}"
    elif source.get("type") == "url":
        url = str(source.get("url"))
    else:
        raise InvalidInputError(f"{where}.source: expected a base64 or url source")
    if kind == "image":
        return {"type": "image_url", "image_url": {"url": url}}
    file: dict[str, Any] = {"file_data": url}
    if isinstance(block.get("title"), str):
        file["filename"] = block["title"]
    return {"type": "file", "file": file}


def tool_of(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A Chat Completions tool definition in Anthropic's schema; one already in it
    (no ``function`` key) as it is."""
    function = tool.get("function")
    if not isinstance(function, Mapping):
        return dict(tool)
    converted: dict[str, Any] = {"name": function.get("name")}
    if function.get("description"):
        converted["description"] = function["description"]
    converted["input_schema"] = function.get("parameters") or {"type": "object", "properties": {}}
    return converted
