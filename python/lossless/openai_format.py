"""OpenAI chat messages in: the conversion behind :meth:`Session.record_messages`.

An agent loop holds its turns as OpenAI chat messages. :func:`to_turns` turns such a
list into the steps that store it: one :class:`Turn` per stored message, tool results
folded into the assistant turn that made the call, and a :class:`ToolResult` for each
result that answers a call an earlier list left open. The whole list is checked
before any step is returned, so a bad message stores nothing.

What is read: ``role``, ``content``, ``tool_calls`` and ``tool_call_id``; in a user
or ``tool`` message's content list, ``image_url`` parts (a base64 data URL or an
http(s) URL, with ``detail``) and ``file`` parts (a PDF as ``file_data``, with its
``filename``) as :class:`MediaPart` s, a tool result's images kept as parts of that
result; and an assistant's reasoning as litellm carries it (``thinking_blocks`` and
``reasoning_items``, each kept verbatim as a :class:`ReasoningPart`, and
``reasoning_content``, kept as text when no block carries it) when the caller names
the provider that produced it. Other fields (``name``, ``refusal``, ``annotations``,
provider extras) are not stored; a legacy ``function_call`` is rejected rather than
dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeAlias

from lossless import _native
from lossless.errors import InvalidInputError, MediaInputError
from lossless.media import data_url_bytes
from lossless.parts import (
    MediaPart,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolPart,
    has_lone_surrogate,
    identifier_problem,
    part_to_wire,
)
from lossless.reasoning import (
    call_signature,
    compaction_parts,
    part_of_block,
    signature_part,
    stored_call_id,
)

__all__ = [
    "OpenAIMessage",
    "SupportsModelDump",
    "ToolResult",
    "Turn",
    "mapping_of",
    "open_call_ids",
    "to_turns",
]

# The store rejects these per write; checking them here keeps a bad list from
# leaving its first turns stored. Same limit as rust/core/src/parts.rs.
_MAX_PART_BYTES = 8 * 1024 * 1024
# Text parts of one message are stored as separate parts and rendered joined by a
# blank line; a tool result is one string, joined the same way.
_PART_SEPARATOR = "\n\n"


class SupportsModelDump(Protocol):
    """A pydantic model, such as an ``openai`` or ``litellm`` message object."""

    def model_dump(self) -> dict[str, Any]: ...


OpenAIMessage: TypeAlias = Mapping[str, Any] | SupportsModelDump


@dataclass(frozen=True, slots=True)
class Turn:
    """One message to store; ``index`` is its position in the input list."""

    index: int
    role: Role
    parts: list[Part]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The result of a call stored earlier and still open, to set through ``update_tool``."""

    index: int
    call_id: str
    output: str
    media: list[MediaPart]


# Checks an image or a document (its field named) before anything is stored.
MediaCheck: TypeAlias = Callable[[MediaPart, str], None]


@dataclass(slots=True)
class _OpenAssistant:
    """An assistant turn being built: its tool calls wait for their results."""

    index: int
    text: list[TextPart]
    calls: list[tuple[str, str, str]]  # (name, call_id, arguments)
    outputs: dict[int, tuple[str, list[MediaPart]]]  # call position -> result
    reasoning: list[Part]


def to_turns(
    messages: Sequence[OpenAIMessage],
    *,
    system_prompt: str | None,
    open_calls: Callable[[], Iterable[str]],
    provider: str | None = None,
    check_media: MediaCheck | None = None,
) -> list[Turn | ToolResult]:
    """Convert OpenAI chat messages into the ordered steps that store them.

    ``system_prompt`` is the session's own: a leading system message equal to it is
    skipped. ``open_calls`` returns the call ids of the session that still wait for a
    result (an id once per open call); it is called at most once, and only when a
    ``tool`` message answers no call of the list. ``provider`` is the provider whose
    replies the list holds (as litellm names it): an assistant's reasoning is kept as
    that provider's, and not at all without one. ``check_media`` checks each image
    and document (the size limits of a session's config). Raises
    :class:`InvalidInputError` naming the index of the first bad message, a
    :class:`MediaInputError` for an image or a document that cannot be taken.
    """
    items = _as_list(messages)
    steps: list[Turn | _OpenAssistant | ToolResult] = []
    # call id -> (assistant, call position) of the list's calls still without a result,
    # newest last: a result goes to the newest open call, as in the store.
    waiting: dict[str, list[tuple[_OpenAssistant, int]]] = {}
    session_open: Counter[str] | None = None
    for index, raw in enumerate(items):
        message = _as_mapping(index, raw)
        role = _role(index, message)
        if role == "system":
            texts = _text_parts(f"messages[{index}].content", _required(index, message, "content"))
            if index == 0 and system_prompt is not None and _joined(texts) == system_prompt:
                continue
            steps.append(Turn(index, "system", list[Part](texts)))
        elif role == "user":
            field = f"messages[{index}].content"
            parts = _content_parts(field, _required(index, message, "content"), check_media)
            steps.append(Turn(index, "user", list[Part](parts)))
        elif role == "assistant":
            assistant = _assistant(index, message, provider)
            for position, (_, call_id, _) in enumerate(assistant.calls):
                waiting.setdefault(call_id, []).append((assistant, position))
            steps.append(assistant)
        else:
            call_id, output, media = _tool_result(index, message, check_media)
            pending = waiting.get(call_id)
            if pending:
                assistant, position = pending.pop()
                assistant.outputs[position] = (output, media)
                continue
            if session_open is None:
                session_open = Counter(open_calls())
            if session_open[call_id] <= 0:
                raise InvalidInputError(
                    f"messages[{index}].tool_call_id: {call_id!r} answers no call: none "
                    "earlier in the list, and none open in the session"
                )
            session_open[call_id] -= 1
            steps.append(ToolResult(index, call_id, output, media))
    return [_finish(step) if isinstance(step, _OpenAssistant) else step for step in steps]


def open_call_ids(parts: Iterable[Part]) -> list[str]:
    """Call ids of the tool calls among ``parts`` that still wait for their result."""
    return [
        part.call_id
        for part in parts
        if isinstance(part, ToolPart)
        and part.status in ("pending", "running")
        and part.output is None
    ]


def _as_list(messages: Sequence[OpenAIMessage]) -> list[OpenAIMessage]:
    if isinstance(messages, Mapping | str | bytes) or not isinstance(messages, Iterable):
        raise InvalidInputError(
            f"messages: expected a list of chat messages, got {type(messages).__name__}"
        )
    return list(messages)


def _as_mapping(index: int, message: object) -> Mapping[str, Any]:
    mapping = mapping_of(message)
    if mapping is None:
        raise InvalidInputError(
            f"messages[{index}]: expected a dict or a model with model_dump(), "
            f"got {type(message).__name__}"
        )
    return mapping


def mapping_of(value: object) -> Mapping[str, Any] | None:
    """``value`` as a mapping: itself, or its ``model_dump()``; ``None`` if neither."""
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped = dump()
        if isinstance(dumped, Mapping):
            return dumped
    return None


def _role(index: int, message: Mapping[str, Any]) -> str:
    role = _required(index, message, "role")
    if role not in ("system", "user", "assistant", "tool"):
        raise InvalidInputError(
            f"messages[{index}].role: expected 'system', 'user', 'assistant' or 'tool', "
            f"got {role!r}"
        )
    if message.get("function_call") is not None:
        raise InvalidInputError(
            f"messages[{index}].function_call: the legacy function_call is not supported; "
            "use tool_calls"
        )
    return str(role)


def _required(index: int, message: Mapping[str, Any], key: str) -> Any:
    value = message.get(key)
    if value is None:
        raise InvalidInputError(f"messages[{index}].{key}: missing")
    return value


def _text_parts(field: str, content: object) -> list[TextPart]:
    """Content as text parts: a string, or a list of ``{"type": "text"}`` parts."""
    if isinstance(content, str):
        return [TextPart(_checked_text(field, content))]
    if not isinstance(content, list | tuple):
        raise InvalidInputError(
            f"{field}: expected a string or a list of content parts, got {type(content).__name__}"
        )
    parts: list[TextPart] = []
    for position, raw in enumerate(content):
        where = f"{field}[{position}]"
        item = mapping_of(raw)
        if item is None:
            raise InvalidInputError(f"{where}: expected a content part dict")
        kind = item.get("type")
        if kind != "text":
            raise MediaInputError(
                f"{where}: {kind!r} content parts are not supported here; a system or "
                "assistant message takes text parts only"
            )
        text = item.get("text")
        if not isinstance(text, str):
            raise InvalidInputError(f"{where}.text: expected a string")
        parts.append(TextPart(_checked_text(f"{where}.text", text)))
    if not parts:
        raise InvalidInputError(f"{field}: an empty list of content parts says nothing")
    return parts


def _content_parts(
    field: str, content: object, check_media: MediaCheck | None
) -> list[TextPart | MediaPart]:
    """A user's or a tool result's content: a string, or a list of ``text``,
    ``image_url`` and ``file`` parts, in order."""
    if isinstance(content, str) or not isinstance(content, list | tuple):
        return list[TextPart | MediaPart](_text_parts(field, content))
    parts: list[TextPart | MediaPart] = []
    for position, raw in enumerate(content):
        where = f"{field}[{position}]"
        item = mapping_of(raw)
        if item is None:
            raise InvalidInputError(f"{where}: expected a content part dict")
        kind = item.get("type")
        if kind == "image_url":
            part = _image_part(where, item)
        elif kind == "file":
            part = _file_part(where, item)
        elif kind == "text":
            text = item.get("text")
            if not isinstance(text, str):
                raise InvalidInputError(f"{where}.text: expected a string")
            parts.append(TextPart(_checked_text(f"{where}.text", text)))
            continue
        else:
            raise MediaInputError(
                f"{where}: {kind!r} content parts are not supported; text, image_url "
                "and file (PDF) parts are"
            )
        if check_media is not None:
            check_media(part, where)
        parts.append(part)
    if not parts:
        raise InvalidInputError(f"{field}: an empty list of content parts says nothing")
    return parts


def _image_part(where: str, item: Mapping[str, Any]) -> MediaPart:
    image = mapping_of(item.get("image_url"))
    url = None if image is None else image.get("url")
    if not isinstance(url, str):
        raise InvalidInputError(f"{where}.image_url.url: expected a string")
    detail = image.get("detail") if image is not None else None
    if detail not in (None, "low", "high", "auto"):
        raise InvalidInputError(f"{where}.image_url.detail: expected low, high or auto")
    if url.startswith("data:"):
        media_type, data = data_url_bytes(f"{where}.image_url.url", url)
        return MediaPart(data=data, media_type=media_type, detail=detail)
    if not url.lower().startswith(("http://", "https://")):
        raise MediaInputError(f"{where}.image_url.url: expected a data URL or an http(s) URL")
    return MediaPart(url=_checked_text(f"{where}.image_url.url", url), detail=detail)


def _file_part(where: str, item: Mapping[str, Any]) -> MediaPart:
    file = mapping_of(item.get("file"))
    if file is None:
        raise InvalidInputError(f"{where}.file: missing")
    data_url = file.get("file_data")
    if not isinstance(data_url, str):
        raise MediaInputError(
            f"{where}.file.file_data: expected the file as a data URL (a file_id names a "
            "file uploaded to a provider, whose bytes cannot be kept)"
        )
    media_type, data = data_url_bytes(f"{where}.file.file_data", data_url)
    filename = file.get("filename")
    if filename is not None and not isinstance(filename, str):
        raise InvalidInputError(f"{where}.file.filename: expected a string")
    return MediaPart(data=data, media_type=media_type or None, filename=filename)


def _assistant(index: int, message: Mapping[str, Any], provider: str | None) -> _OpenAssistant:
    content = message.get("content")
    texts = [] if content is None else _text_parts(f"messages[{index}].content", content)
    signed = _tool_calls(index, message.get("tool_calls"))
    calls = [(name, call_id, arguments) for name, call_id, arguments, _ in signed]
    # A provider's compaction block opens the turn, its reasoning follows: as it came.
    reasoning: list[Part] = []
    if provider is not None:
        reasoning.extend(compaction_parts(provider, message, f"messages[{index}]"))
        reasoning.extend(_reasoning(index, message, provider))
        for _, call_id, _, signature in signed:
            part = signature_part(provider, call_id, signature)
            reasoning.extend([] if part is None else [part])
    if not calls:
        if content is None:
            raise InvalidInputError(
                f"messages[{index}]: an assistant message needs content or tool_calls"
            )
        # A reply of only empty text is still a turn that happened: keep it.
        return _OpenAssistant(index, texts, [], {}, reasoning)
    return _OpenAssistant(index, [part for part in texts if part.text], calls, {}, reasoning)


def _reasoning(index: int, message: Mapping[str, Any], provider: str) -> list[ReasoningPart]:
    """An assistant's reasoning: each of its ``thinking_blocks`` and
    ``reasoning_items`` (the Responses API's, through litellm's bridge) kept whole,
    in order, and its ``reasoning_content`` as text when no block carries text. A block the
    store would refuse (a ``thinking`` block without its signature) is refused here,
    before anything of the list is stored."""
    parts = [
        *_blocks(index, message, "thinking_blocks", provider),
        *_blocks(index, message, "reasoning_items", provider),
    ]
    readable = message.get("reasoning_content")
    if isinstance(readable, str) and readable.strip() and not any(part.text for part in parts):
        text = _checked_text(f"messages[{index}].reasoning_content", readable)
        parts.append(ReasoningPart(provider, text))
    return parts


def _blocks(index: int, message: Mapping[str, Any], key: str, provider: str) -> list[ReasoningPart]:
    """The reasoning blocks (or Responses API items) an assistant carries under
    ``key``, each kept whole, in order, and checked as the store checks them."""
    blocks = message.get(key)
    if blocks is None:
        return []
    if not isinstance(blocks, list | tuple):
        raise InvalidInputError(
            f"messages[{index}].{key}: expected a list, got {type(blocks).__name__}"
        )
    parts: list[ReasoningPart] = []
    for position, raw in enumerate(blocks):
        where = f"messages[{index}].{key}[{position}]"
        block = mapping_of(raw)
        if block is None:
            raise InvalidInputError(f"{where}: expected a dict, got {type(raw).__name__}")
        part = part_of_block(provider, block)
        payload = _checked_text(where, part_to_wire(part, where)["payload"])
        _native.check_reasoning_payload(payload, where)
        parts.append(part)
    return parts


def _tool_calls(index: int, value: object) -> list[tuple[str, str, str, str | None]]:
    """An assistant's calls as (name, stored id, arguments, thought signature)."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise InvalidInputError(
            f"messages[{index}].tool_calls: expected a list, got {type(value).__name__}"
        )
    calls: list[tuple[str, str, str, str | None]] = []
    seen: set[str] = set()
    for position, raw in enumerate(value):
        where = f"messages[{index}].tool_calls[{position}]"
        call = mapping_of(raw)
        if call is None:
            raise InvalidInputError(f"{where}: expected a dict, got {type(raw).__name__}")
        kind = call.get("type", "function")
        if kind != "function":
            raise InvalidInputError(
                f"{where}.type: only 'function' tool calls are supported, got {kind!r}"
            )
        call_id = _call_id(f"{where}.id", call.get("id"))
        if call_id in seen:
            raise InvalidInputError(f"{where}.id: {call_id!r} appears twice in one message")
        seen.add(call_id)
        function = mapping_of(call.get("function"))
        if function is None:
            raise InvalidInputError(f"{where}.function: missing")
        name = _identifier(f"{where}.function.name", function.get("name"))
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            raise InvalidInputError(
                f"{where}.function.arguments: expected the arguments' JSON text (a string), "
                f"got {type(arguments).__name__}"
            )
        arguments = _checked_text(f"{where}.function.arguments", arguments)
        calls.append((name, call_id, arguments, call_signature(call)))
    return calls


def _call_id(field: str, value: object) -> str:
    """A call's id as stored: an id carrying a thought signature past the store's
    limit is stored without it (the signature is kept in a part of its own)."""
    return _identifier(field, stored_call_id(value) if isinstance(value, str) else value)


def _tool_result(
    index: int, message: Mapping[str, Any], check_media: MediaCheck | None
) -> tuple[str, str, list[MediaPart]]:
    """A tool result's call id, its text, and its images (a screenshot), each made
    a part of that call's result."""
    call_id = _call_id(f"messages[{index}].tool_call_id", message.get("tool_call_id"))
    field = f"messages[{index}].content"
    parts = _content_parts(field, _required(index, message, "content"), check_media)
    output = _joined([part for part in parts if isinstance(part, TextPart)])
    media = [replace(part, call_id=call_id) for part in parts if isinstance(part, MediaPart)]
    return call_id, _checked_text(field, output), media


def _finish(assistant: _OpenAssistant) -> Turn:
    # Reasoning first, in its order: it opens the turn it came with.
    parts: list[Part] = [*assistant.reasoning, *assistant.text]
    media: list[Part] = []
    for position, (name, call_id, arguments) in enumerate(assistant.calls):
        output, images = assistant.outputs.get(position, (None, []))
        parts.append(
            ToolPart(
                name=name,
                call_id=call_id,
                input=arguments,
                output=output,
                status="pending" if output is None else "completed",
            )
        )
        media.extend(images)
    # The results' images after the calls: each names the call it belongs to.
    parts.extend(media)
    return Turn(assistant.index, "assistant", parts)


def _joined(parts: Sequence[TextPart]) -> str:
    return _PART_SEPARATOR.join(part.text for part in parts)


def _identifier(field: str, value: object) -> str:
    if value is None:
        raise InvalidInputError(f"{field}: missing")
    if not isinstance(value, str):
        raise InvalidInputError(f"{field}: expected a string, got {type(value).__name__}")
    problem = identifier_problem(value)
    if problem is not None:
        raise InvalidInputError(f"{field}: {problem}")
    return value


def _checked_text(field: str, text: str) -> str:
    if has_lone_surrogate(text):
        raise InvalidInputError(f"{field}: is not valid text (it holds a lone surrogate)")
    # A character is at most four bytes: only long strings need encoding to be measured.
    if len(text) * 4 > _MAX_PART_BYTES and len(text.encode()) > _MAX_PART_BYTES:
        raise InvalidInputError(
            f"{field}: over the {_MAX_PART_BYTES}-byte limit of one part; "
            "store large content as a file reference"
        )
    return text
