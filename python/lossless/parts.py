"""Public message part types.

A message is a list of parts. A plain string wherever parts are accepted means one
:class:`TextPart`. Parts are frozen: what was said is never edited in place.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from lossless.errors import InvalidInputError

ToolStatus: TypeAlias = Literal["pending", "running", "completed", "error"]
Role: TypeAlias = Literal["system", "user", "assistant"]

TOOL_STATUSES: frozenset[str] = frozenset({"pending", "running", "completed", "error"})
ROLES: frozenset[str] = frozenset({"system", "user", "assistant"})


@dataclass(frozen=True, slots=True)
class TextPart:
    """Plain text said by a participant."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolPart:
    """One tool call and, once it ran, its result.

    ``input`` is the call's arguments: a JSON object (dict) or its JSON text.
    ``output`` stays ``None`` until the tool finished.
    """

    name: str
    call_id: str
    input: Mapping[str, Any] | str = ""
    output: str | None = None
    status: ToolStatus = "completed"
    error: str | None = None


@dataclass(frozen=True, slots=True)
class FileRefPart:
    """A reference to a file kept outside the context, by content id."""

    file_id: str
    path: str
    file_type: str = "text"
    token_count: int = 0
    summary: str = ""


Part: TypeAlias = TextPart | ToolPart | FileRefPart
PartsInput: TypeAlias = str | Part | Iterable[str | Part]


def normalize_parts(parts: PartsInput) -> list[Part]:
    """Turn what a caller passed into a list of parts, rejecting anything else."""
    if isinstance(parts, str | TextPart | ToolPart | FileRefPart):
        items: list[Any] = [parts]
    elif isinstance(parts, Iterable) and not isinstance(parts, bytes | Mapping):
        items = list(parts)
    else:
        raise InvalidInputError(
            f"parts: expected str, a part or a list of them, got {type(parts).__name__}"
        )
    result: list[Part] = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            result.append(TextPart(item))
        elif isinstance(item, TextPart | ToolPart | FileRefPart):
            result.append(item)
        else:
            raise InvalidInputError(
                f"parts[{index}]: expected str, TextPart, ToolPart or FileRefPart, "
                f"got {type(item).__name__}"
            )
    if not result:
        raise InvalidInputError("parts: a message needs at least one part")
    return result


def part_to_wire(part: Part) -> dict[str, Any]:
    """Encode a part as the dict the native store takes."""
    if isinstance(part, TextPart):
        return {"kind": "text", "text": part.text}
    if isinstance(part, ToolPart):
        tool_input = part.input if isinstance(part.input, str) else json.dumps(part.input)
        return {
            "kind": "tool",
            "name": part.name,
            "call_id": part.call_id,
            "input": tool_input,
            "output": part.output,
            "status": part.status,
            "error": part.error,
        }
    return {
        "kind": "file_ref",
        "file_id": part.file_id,
        "path": part.path,
        "file_type": part.file_type,
        "token_count": part.token_count,
        "summary": part.summary,
    }


def part_from_wire(wire: Mapping[str, Any]) -> Part:
    """Decode a part dict returned by the native store."""
    kind = wire["kind"]
    if kind == "text":
        return TextPart(wire["text"])
    if kind == "tool":
        return ToolPart(
            name=wire["name"],
            call_id=wire["call_id"],
            input=wire["input"],
            output=wire.get("output"),
            status=wire["status"],
            error=wire.get("error"),
        )
    return FileRefPart(
        file_id=wire["file_id"],
        path=wire["path"],
        file_type=wire["file_type"],
        token_count=wire["token_count"],
        summary=wire["summary"],
    )
