"""Public message part types.

A message is a list of parts. A plain string wherever parts are accepted means one
:class:`TextPart`. Parts are frozen: what was said is never edited in place.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from lossless.errors import InvalidInputError

ToolStatus: TypeAlias = Literal["pending", "running", "completed", "error"]
Role: TypeAlias = Literal["system", "user", "assistant"]

TOOL_STATUSES: frozenset[str] = frozenset({"pending", "running", "completed", "error"})
ROLES: frozenset[str] = frozenset({"system", "user", "assistant"})

# What the store takes as a name or an id (rust/core/src/parts.rs, check_identifier),
# for the code that turns outside input into parts before the store sees it.
MAX_IDENTIFIER_BYTES = 512
# Rust's char::is_control (the Cc category), and the lone surrogates a Python str
# can hold but UTF-8 cannot.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def identifier_problem(value: str) -> str | None:
    """Why the store would refuse ``value`` as a name or an id; ``None`` if it would not."""
    if not value:
        return "must not be empty"
    if len(value.encode(errors="surrogatepass")) > MAX_IDENTIFIER_BYTES:
        return f"longer than {MAX_IDENTIFIER_BYTES} bytes"
    if _CONTROL.search(value):
        return "contains a control character (NUL, newline, ...)"
    if _SURROGATE.search(value):
        return "is not valid text (it holds a lone surrogate)"
    return None


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate: the store refuses such text."""
    return _SURROGATE.search(text) is not None


def storable_text(text: str) -> str:
    """``text`` with each lone surrogate, which UTF-8 cannot hold, replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def storable_name(name: str) -> str:
    """``name`` made into an identifier the store takes: control characters and lone
    surrogates replaced by U+FFFD, cut to the identifier limit on a character boundary."""
    cleaned = _SURROGATE.sub("\ufffd", _CONTROL.sub("\ufffd", name))
    return cleaned.encode()[:MAX_IDENTIFIER_BYTES].decode(errors="ignore")


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


def parts_to_wire(parts: Iterable[Part]) -> list[dict[str, Any]]:
    """Encode parts as the dicts the native store takes, naming ``parts[i]`` in errors."""
    return [part_to_wire(part, f"parts[{index}]") for index, part in enumerate(parts)]


def part_to_wire(part: Part, field: str = "part") -> dict[str, Any]:
    """Encode a part as the dict the native store takes; ``field`` names it in errors."""
    if isinstance(part, TextPart):
        return {"kind": "text", "text": part.text}
    if isinstance(part, ToolPart):
        return {
            "kind": "tool",
            "name": part.name,
            "call_id": part.call_id,
            "input": _input_json(f"{field}.input", part.input),
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


def _input_json(field: str, value: object) -> str:
    """A tool call's input as JSON text: text as given (kept verbatim, whatever it
    holds), a mapping encoded. A mapping JSON cannot encode is refused here, before
    anything is stored, rather than half-encoded."""
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            f"{field}: expected a dict (a JSON object) or its JSON text, got {type(value).__name__}"
        )
    try:
        return json.dumps(dict(value), allow_nan=False)
    except RecursionError:
        raise InvalidInputError(
            f"{field}: nested too deeply to encode as JSON; pass its JSON text instead"
        ) from None
    except (TypeError, ValueError) as err:
        raise InvalidInputError(f"{field}: not valid JSON: {err}") from None


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
