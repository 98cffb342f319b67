"""The message formats a session takes and gives: OpenAI Chat Completions
(``"openai"``), Anthropic Messages (``"anthropic"``) and OpenAI Responses input
items (``"responses"``).

Requests are converted in the core (``rust/core/src/formats``); this module reads
the formats in (as the Chat Completions messages ``record_messages`` stores),
detects a list's format, and converts tool definitions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias

from lossless import anthropic_format, responses_format
from lossless.errors import InvalidInputError
from lossless.openai_format import OpenAIMessage, mapping_of

__all__ = ["FORMATS", "MessageFormat", "detect_format", "format_tools", "to_openai"]

MessageFormat: TypeAlias = Literal["openai", "anthropic", "responses"]
FORMATS: tuple[MessageFormat, ...] = ("openai", "anthropic", "responses")

# What only Chat Completions messages carry.
_OPENAI_KEYS = ("tool_calls", "tool_call_id", "thinking_blocks", "function_call")
_OPENAI_PARTS = frozenset({"image_url", "input_audio", "file"})


def checked_format(value: object) -> MessageFormat:
    """``value`` as a format name; :class:`InvalidInputError` when it is none."""
    for name in FORMATS:
        if value == name:
            return name
    raise InvalidInputError(f"format: expected 'openai', 'anthropic' or 'responses', got {value!r}")


def detect_format(messages: Sequence[OpenAIMessage]) -> MessageFormat:
    """The format ``messages`` are in, read from what only one format has: content
    blocks typed ``tool_use``, ``tool_result``, ``thinking``, ... are Anthropic's;
    items typed ``message``, ``function_call``, ... or parts typed ``input_text``,
    ... are the Responses API's; ``tool`` messages, ``tool_calls`` and
    ``image_url`` parts are Chat Completions'. Plain role and string content is
    valid in every format and reads as Chat Completions. A list with the marks of
    two formats, or a message of none, raises :class:`InvalidInputError`."""
    found: dict[MessageFormat, int] = {}
    for index, raw in enumerate(messages):
        message = mapping_of(raw)
        if message is None:
            raise InvalidInputError(f"messages[{index}]: expected a dict")
        for name in _marks(message):
            found.setdefault(name, index)
    if len(found) > 1:
        (first, at), (second, other) = sorted(found.items(), key=lambda entry: entry[1])[:2]
        raise InvalidInputError(
            f"messages: mixed formats: messages[{at}] is {first}, messages[{other}] is "
            f"{second}; name the format, or convert the list to one"
        )
    return next(iter(found), "openai")


def _marks(message: Mapping[str, Any]) -> set[MessageFormat]:
    """The formats ``message`` shows the marks of (none for plain role and text)."""
    marks: set[MessageFormat] = set()
    kind = message.get("type")
    if kind is not None:
        if kind not in responses_format.ITEM_TYPES and kind != "item_reference":
            raise InvalidInputError(f"messages: an item of type {kind!r} is in no format")
        marks.add("responses")
    if message.get("role") in ("tool", "function") or any(
        message.get(key) is not None for key in _OPENAI_KEYS
    ):
        marks.add("openai")
    content = message.get("content")
    for raw in content if isinstance(content, list | tuple) else ():
        part = mapping_of(raw)
        part_type = part.get("type") if part is not None else None
        if part_type in anthropic_format.BLOCK_TYPES:
            marks.add("anthropic")
        elif part_type in responses_format.PART_TYPES:
            marks.add("responses")
        elif part_type in _OPENAI_PARTS:
            marks.add("openai")
    return marks


def to_openai(
    messages: Sequence[OpenAIMessage], format: MessageFormat, system: object = None
) -> Sequence[OpenAIMessage]:
    """``messages`` in ``format`` as Chat Completions messages; ``system`` is an
    Anthropic request's system text (a string or text blocks)."""
    if system is not None and format != "anthropic":
        raise InvalidInputError("system: only an Anthropic history has its system text apart")
    if format == "anthropic":
        return anthropic_format.to_openai(messages, system)
    if format == "responses":
        return responses_format.to_openai(messages)
    return messages


def format_tools(
    tools: Sequence[Mapping[str, Any]] | None, format: MessageFormat
) -> list[dict[str, Any]] | None:
    """Chat Completions tool definitions in ``format``'s schema."""
    if tools is None:
        return None
    if format == "anthropic":
        return [anthropic_format.tool_of(tool) for tool in tools]
    if format == "responses":
        return [responses_format.tool_of(tool) for tool in tools]
    return [dict(tool) for tool in tools]
