"""OpenAI Responses input items in: the conversion behind
``record_messages(format="responses")``.

An agent that calls the Responses API holds its history as input items. :func:`to_openai`
turns them into the OpenAI chat messages :func:`lossless.openai_format.to_turns`
stores: a ``message`` item as a message (``developer`` read as ``system``), the
``compaction``, ``reasoning``, ``message`` and ``function_call`` items of one model
output as one assistant message (its ``compaction`` items, verbatim, as litellm's
``compaction_blocks``; its ``reasoning`` items, verbatim, as its ``thinking_blocks``;
its calls as ``tool_calls``), a ``function_call_output`` as a ``tool`` message. Image
and file parts become the Chat Completions content parts that carry them. Item ids
and statuses, annotations and ``item_reference`` items are not stored (the last is
refused: it names something only OpenAI holds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lossless.errors import InvalidInputError
from lossless.openai_format import OpenAIMessage, mapping_of

__all__ = ["ITEM_TYPES", "PART_TYPES", "to_openai", "tool_of"]

#: Item types only the Responses API has.
ITEM_TYPES = frozenset(
    {"message", "function_call", "function_call_output", "reasoning", "compaction"}
)
#: Content part types only the Responses API has.
PART_TYPES = frozenset({"input_text", "output_text", "input_image", "input_file", "refusal"})


def to_openai(items: Sequence[OpenAIMessage]) -> list[dict[str, Any]]:
    """``items`` as OpenAI chat messages. Raises :class:`InvalidInputError` naming the
    first item it cannot read."""
    out: list[dict[str, Any]] = []
    turn: dict[str, Any] | None = None  # the model output being read
    for index, raw in enumerate(items):
        item = mapping_of(raw)
        if item is None:
            raise InvalidInputError(f"input[{index}]: expected a dict")
        kind = item.get("type", "message" if "role" in item else None)
        where = f"input[{index}]"
        if kind == "message" and item.get("role") != "assistant":
            turn = None
            role = "system" if item.get("role") == "developer" else item.get("role")
            out.append({"role": role, "content": _content(where, item.get("content"))})
        elif kind == "function_call_output":
            turn = None
            output = item.get("output")
            content = output if isinstance(output, str) else _content(where, output)
            out.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": content})
        elif kind in ("message", "function_call", "reasoning", "compaction"):
            turn = _model_output(out, turn, where, str(kind), item)
        else:
            raise InvalidInputError(f"{where}.type: {kind!r} is not an item lossless keeps")
    for message in out:
        # A model output of reasoning or compaction alone is still a turn.
        if message["role"] == "assistant" and message["content"] is None:
            message["content"] = None if message.get("tool_calls") else ""
    return out


def _model_output(
    out: list[dict[str, Any]],
    turn: dict[str, Any] | None,
    where: str,
    kind: str,
    item: Mapping[str, Any],
) -> dict[str, Any]:
    """Adds an output item to the assistant message being read; one item that comes
    after what a model output puts later (reasoning after text or calls, text after
    calls) starts the next message."""
    opening = ("content", "tool_calls", "thinking_blocks")
    later = {
        "compaction": opening,
        "reasoning": ("content", "tool_calls"),
        "message": ("tool_calls",),
    }.get(kind, ())
    if turn is None or any(turn.get(key) for key in later):
        turn = {"role": "assistant", "content": None}
        out.append(turn)
    if kind == "compaction":
        # Where litellm carries a provider's compaction, and the reader keeps it.
        fields = turn.setdefault("provider_specific_fields", {})
        fields.setdefault("compaction_blocks", []).append(dict(item))
    elif kind == "reasoning":
        turn.setdefault("thinking_blocks", []).append(dict(item))
    elif kind == "message":
        parts = _content(where, item.get("content"))
        texts = [{"type": "text", "text": parts}] if isinstance(parts, str) else parts
        turn["content"] = [*(turn["content"] or []), *texts]
    else:
        call = {"name": item.get("name"), "arguments": item.get("arguments")}
        entry = {"id": item.get("call_id"), "type": "function", "function": call}
        turn.setdefault("tool_calls", []).append(entry)
    return turn


def _content(where: str, content: object) -> str | list[dict[str, Any]]:
    """A message's content as Chat Completions content: a string as it is, parts
    as content parts."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list | tuple):
        raise InvalidInputError(f"{where}.content: expected a string or a list of parts")
    return [_part(f"{where}.content[{at}]", mapping_of(raw)) for at, raw in enumerate(content)]


def _part(where: str, part: Mapping[str, Any] | None) -> dict[str, Any]:
    if part is None:
        raise InvalidInputError(f"{where}: expected a dict")
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text"):
        return {"type": "text", "text": part.get("text")}
    if kind == "refusal":
        return {"type": "text", "text": part.get("refusal")}
    if kind == "input_image":
        return {"type": "image_url", "image_url": {"url": part.get("image_url")}}
    if kind == "input_file":
        file = {
            key: part[key]
            for key in ("file_data", "file_id", "filename")
            if isinstance(part.get(key), str)
        }
        if isinstance(part.get("file_url"), str):
            file["file_data"] = part["file_url"]
        return {"type": "file", "file": file}
    raise InvalidInputError(f"{where}.type: {kind!r} is not a part lossless keeps")


def tool_of(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A Chat Completions tool definition in the Responses schema (a function's
    fields at the top level); one already in it as it is."""
    function = tool.get("function")
    if not isinstance(function, Mapping):
        return dict(tool)
    converted: dict[str, Any] = {"type": "function", "name": function.get("name")}
    if function.get("description"):
        converted["description"] = function["description"]
    converted["parameters"] = function.get("parameters") or {"type": "object", "properties": {}}
    # Chat Completions checks arguments loosely unless told; the Responses API
    # strictly unless told: the definition keeps the meaning it was written with.
    converted["strict"] = bool(function.get("strict", False))
    return converted
