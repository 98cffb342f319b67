"""Public message part types.

A message is a list of parts. A plain string wherever parts are accepted means one
:class:`TextPart`. Parts are frozen: what was said is never edited in place.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, TypeAlias

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

    kind: ClassVar[str] = "text"
    text: str


@dataclass(frozen=True, slots=True)
class ToolPart:
    """One tool call and, once it ran, its result.

    ``input`` is the call's arguments: a JSON object (dict) or its JSON text.
    ``output`` stays ``None`` until the tool finished.
    """

    kind: ClassVar[str] = "tool"
    name: str
    call_id: str
    input: Mapping[str, Any] | str = ""
    output: str | None = None
    status: ToolStatus = "completed"
    error: str | None = None


@dataclass(frozen=True, slots=True)
class FileRefPart:
    """A reference to a file kept outside the context, by content id."""

    kind: ClassVar[str] = "file_ref"
    file_id: str
    path: str
    file_type: str = "text"
    token_count: int = 0
    summary: str = ""


@dataclass(frozen=True, slots=True)
class ReasoningPart:
    """Reasoning a model did before it answered, as its provider sent it.

    ``provider`` is the provider that produced it, as litellm names providers
    (``anthropic``, ``bedrock``, ``openai``, ``deepseek``, ...). ``text`` is the
    readable reasoning, if any. ``payload`` is the provider's block (a dict, or its
    JSON text), kept verbatim: an Anthropic ``thinking`` block with its
    ``signature``, or a ``redacted_thinking`` block. A block goes back to the
    provider that signed it within the tool loop that produced it, where the
    provider requires it; readable text alone is never sent back. Read back from the
    store, ``payload`` is the JSON text exactly as stored.
    """

    kind: ClassVar[str] = "reasoning"
    provider: str
    text: str | None = None
    payload: Mapping[str, Any] | str | None = None


@dataclass(frozen=True, slots=True)
class MediaPart:
    """An image or a document: a screenshot a tool returned, a photo or a PDF a
    user attached.

    Give ``data`` (the bytes: PNG, JPEG, GIF, WebP or PDF, their format read from
    their header) or ``url`` (an http(s) image URL, kept as it is and never
    fetched). ``media_type`` is the MIME type it was declared with, checked against
    the bytes. ``caption`` is its caption or alt text, ``detail`` OpenAI's setting
    (``low``, ``high``, ``auto``), ``filename`` a document's name, and ``call_id``
    the tool call whose result it is part of.

    The bytes are stored once per content; the part is referenced as
    ``image_<32 hex>`` or ``document_<32 hex>`` (``media_id``, the first digits of
    their SHA-256). Read back from the store, a part holds what it is (``media_id``,
    ``media_kind``, ``byte_size``, ``width``, ``height``, ``pages``) without its
    bytes: :meth:`Session.read_media` gives them back.
    """

    kind: ClassVar[str] = "media"
    data: bytes | None = field(default=None, repr=False)
    url: str | None = None
    media_type: str | None = None
    caption: str | None = None
    detail: Literal["low", "high", "auto"] | None = None
    filename: str | None = None
    call_id: str | None = None
    media_id: str | None = None
    media_kind: Literal["image", "document"] | None = None
    byte_size: int | None = None
    width: int | None = None
    height: int | None = None
    pages: int | None = None

    @classmethod
    def image(
        cls,
        data: bytes,
        *,
        media_type: str | None = None,
        caption: str | None = None,
        detail: Literal["low", "high", "auto"] | None = None,
        call_id: str | None = None,
    ) -> MediaPart:
        """An image from its bytes."""
        return cls(
            data=data, media_type=media_type, caption=caption, detail=detail, call_id=call_id
        )

    @classmethod
    def image_url(
        cls,
        url: str,
        *,
        caption: str | None = None,
        detail: Literal["low", "high", "auto"] | None = None,
        call_id: str | None = None,
    ) -> MediaPart:
        """An image at an http(s) URL, which is never fetched."""
        return cls(url=url, caption=caption, detail=detail, call_id=call_id)

    @classmethod
    def document(
        cls, data: bytes, *, filename: str | None = None, caption: str | None = None
    ) -> MediaPart:
        """A PDF document from its bytes."""
        return cls(data=data, media_type="application/pdf", filename=filename, caption=caption)


# The fields a caller gives a media part; the rest are read from its bytes.
MEDIA_INPUT_FIELDS: tuple[str, ...] = (
    "data",
    "url",
    "media_type",
    "caption",
    "detail",
    "filename",
    "call_id",
)


@dataclass(frozen=True, slots=True)
class ProviderCompactionPart:
    """What a provider's own compaction returned in place of the conversation before
    it, kept verbatim: an Anthropic ``compaction`` block (its summary as
    ``content``) or an OpenAI Responses ``compaction`` item (``encrypted_content``).

    ``provider`` made it (as litellm names providers); ``payload`` is the block (a
    dict, or its JSON text; read back from the store, the JSON text exactly as
    stored); ``text`` its readable summary, if any. It goes back to its provider as
    that provider requires, and to another only as its readable summary. The
    messages it stands for stay stored (see ``docs/COMPACTION.md``).
    """

    kind: ClassVar[str] = "provider_compaction"
    provider: str
    payload: Mapping[str, Any] | str
    text: str | None = None


Part: TypeAlias = (
    TextPart | ToolPart | FileRefPart | ReasoningPart | MediaPart | ProviderCompactionPart
)
PartsInput: TypeAlias = str | Part | Iterable[str | Part]

# Every part type, as the core declares its kinds (rust/core/src/parts/): the wire
# dict of a part is its ``kind`` and its fields, by name.
PART_TYPES: tuple[type[Part], ...] = (
    TextPart,
    ToolPart,
    FileRefPart,
    ReasoningPart,
    MediaPart,
    ProviderCompactionPart,
)
_TYPE_OF_KIND: dict[str, type[Part]] = {cls.kind: cls for cls in PART_TYPES}
_FIELDS_OF_KIND: dict[str, tuple[str, ...]] = {
    cls.kind: tuple(field.name for field in fields(cls)) for cls in PART_TYPES
}
_TYPE_NAMES = ", ".join(["str", *(cls.__name__ for cls in PART_TYPES)])


def normalize_parts(parts: PartsInput) -> list[Part]:
    """Turn what a caller passed into a list of parts, rejecting anything else."""
    if isinstance(parts, (str, *PART_TYPES)):
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
        elif isinstance(item, PART_TYPES):
            result.append(item)
        else:
            raise InvalidInputError(
                f"parts[{index}]: expected one of {_TYPE_NAMES}, got {type(item).__name__}"
            )
    if not result:
        raise InvalidInputError("parts: a message needs at least one part")
    return result


def parts_to_wire(parts: Iterable[Part]) -> list[dict[str, Any]]:
    """Encode parts as the dicts the native store takes, naming ``parts[i]`` in errors."""
    return [part_to_wire(part, f"parts[{index}]") for index, part in enumerate(parts)]


def part_to_wire(part: Part, field: str = "part") -> dict[str, Any]:
    """Encode a part as the dict the native store takes; ``field`` names it in errors."""
    if isinstance(part, MediaPart):
        return _media_wire(part, field)
    wire: dict[str, Any] = {"kind": part.kind}
    for name in _FIELDS_OF_KIND[part.kind]:
        wire[name] = getattr(part, name)
    if isinstance(part, ToolPart):
        wire["input"] = _input_json(f"{field}.input", part.input)
    elif isinstance(part, ReasoningPart | ProviderCompactionPart) and part.payload is not None:
        wire["payload"] = _payload_json(f"{field}.payload", part.payload)
    return wire


def _media_wire(part: MediaPart, field: str) -> dict[str, Any]:
    """A media part's wire dict: what a caller gives; the store reads the rest from
    the bytes. A part read back from the store holds no bytes and is refused here."""
    if part.data is None and part.url is None:
        hint = (
            f"; read the bytes of {part.media_id} with Session.read_media" if part.media_id else ""
        )
        raise InvalidInputError(f"{field}: a media part needs data or a url{hint}")
    if part.data is not None and not isinstance(part.data, bytes | bytearray | memoryview):
        raise InvalidInputError(f"{field}.data: expected bytes, got {type(part.data).__name__}")
    wire: dict[str, Any] = {"kind": part.kind}
    for name in MEDIA_INPUT_FIELDS:
        wire[name] = getattr(part, name)
    if part.data is not None:
        wire["data"] = bytes(part.data)
    return wire


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


def _payload_json(field: str, value: object) -> str:
    """A reasoning block as JSON text: text as given (kept byte for byte), a mapping
    encoded once, its keys in their order and its text unescaped."""
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            f"{field}: expected the provider's block (a dict) or its JSON text, "
            f"got {type(value).__name__}"
        )
    try:
        return json.dumps(dict(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except RecursionError:
        raise InvalidInputError(f"{field}: nested too deeply to encode as JSON") from None
    except (TypeError, ValueError) as err:
        raise InvalidInputError(f"{field}: not valid JSON: {err}") from None


def part_from_wire(wire: Mapping[str, Any]) -> Part:
    """Decode a part dict returned by the native store."""
    kind = wire["kind"]
    return _TYPE_OF_KIND[kind](
        **{name: wire[name] for name in _FIELDS_OF_KIND[kind] if name in wire}
    )
