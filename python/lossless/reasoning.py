"""Reasoning as litellm hands it over, made into :class:`ReasoningPart` s.

litellm (Chat Completions format) puts a provider's reasoning on an assistant
message as ``thinking_blocks`` (Anthropic's ``thinking`` blocks, each with its
``signature``, and ``redacted_thinking`` blocks) and as ``reasoning_content``, the
readable text. While a reply streams, a delta carries pieces of a block: the text
of a ``thinking`` block arrives in pieces and its signature last, which ends the
block; a ``redacted_thinking`` block arrives whole.

Its Responses API bridge (``openai/responses/<model>``) hands over the Responses
API's ``reasoning`` items as ``reasoning_items``, each with its ``encrypted_content``
(when the call asked for it with ``include``) and its summary: streamed, they
arrive whole with the last delta.

Each block or item becomes one part with it as its payload and its text (a
thinking block's text, an item's summary) as the readable text;
``reasoning_content`` becomes a part of text alone only when no block carries text
(other providers show their reasoning only as text).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lossless import _native
from lossless.errors import InvalidInputError
from lossless.parts import (
    ProviderCompactionPart,
    ReasoningPart,
    identifier_problem,
    storable_text,
)

__all__ = [
    "THOUGHT_SEPARATOR",
    "ReasoningStream",
    "call_signature",
    "compaction_parts",
    "part_of_block",
    "signature_part",
    "stored_call_id",
]

# What litellm adds to a streamed block for its own bookkeeping: not the provider's.
_STREAM_KEYS = frozenset({"index"})

#: How litellm carries a Gemini thought signature in a tool call's id:
#: ``{id}__thought__{signature}`` (its Gemini transformation reads it back).
THOUGHT_SEPARATOR = "__thought__"


def call_signature(call: Mapping[str, Any] | Any) -> str | None:
    """The thought signature litellm put on a tool call (a dict, a litellm object or
    a streamed fragment): its ``provider_specific_fields``, its function's, or its
    id after ``__thought__``."""
    for holder in (call, _field(call, "function")):
        fields = _field(holder, "provider_specific_fields")
        signature = _field(fields, "thought_signature")
        if isinstance(signature, str) and signature:
            return signature
    call_id = _field(call, "id")
    if isinstance(call_id, str) and THOUGHT_SEPARATOR in call_id:
        return call_id.split(THOUGHT_SEPARATOR, 1)[1] or None
    return None


def _field(value: object, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def stored_call_id(call_id: str) -> str:
    """The id a call (or its result) is stored under: as given when the store takes
    it, else, for an id that carries a thought signature past the store's limit on
    ids, the part before ``__thought__`` (the signature is kept apart, see
    :func:`signature_part`)."""
    if THOUGHT_SEPARATOR in call_id and identifier_problem(call_id) is not None:
        return call_id.split(THOUGHT_SEPARATOR, 1)[0]
    return call_id


def signature_part(provider: str, call_id: str, signature: str | None) -> ReasoningPart | None:
    """The part that keeps a call's thought signature when the id it is stored under
    (``call_id``) does not carry it; None when it does, or there is none."""
    if signature is None or call_id.endswith(THOUGHT_SEPARATOR + signature):
        return None
    block = {"type": "thought_signature", "id": call_id, "signature": signature}
    return ReasoningPart(provider, None, block)


def compaction_parts(provider: str, holder: object, field: str) -> list[ProviderCompactionPart]:
    """The compaction blocks litellm put on a message or a streamed delta
    (``provider_specific_fields["compaction_blocks"]``, Anthropic's), each kept
    whole as ``provider``'s, checked as the store checks them; ``field`` names the
    holder in errors."""
    blocks = _field(_field(holder, "provider_specific_fields"), "compaction_blocks")
    if not isinstance(blocks, list | tuple):
        return []
    parts: list[ProviderCompactionPart] = []
    for position, raw in enumerate(blocks):
        where = f"{field}.provider_specific_fields.compaction_blocks[{position}]"
        if not isinstance(raw, Mapping):
            raise InvalidInputError(f"{where}: expected a dict, got {type(raw).__name__}")
        block = {key: value for key, value in raw.items() if key not in _STREAM_KEYS}
        _native.check_compaction_payload(json.dumps(block), where)
        content = block.get("content")
        text = content if isinstance(content, str) and content.strip() else None
        parts.append(ProviderCompactionPart(provider, block, text))
    return parts


def part_of_block(provider: str, block: Mapping[str, Any]) -> ReasoningPart:
    """The part that keeps ``block`` as ``provider`` sent it, its readable text
    (a ``thinking`` block's, a ``reasoning`` item's summary) alongside."""
    kind = block.get("type")
    if kind == "reasoning":
        text: str | None = _summary_text(block.get("summary"))
    else:
        thinking = block.get("thinking") if kind == "thinking" else None
        text = thinking if isinstance(thinking, str) and thinking else None
    return ReasoningPart(provider, text, dict(block))


def _summary_text(summary: object) -> str | None:
    """A Responses API reasoning item's summary parts as one text, blank-line joined."""
    if not isinstance(summary, list | tuple):
        return None
    texts = [
        entry["text"]
        for entry in summary
        if isinstance(entry, Mapping) and isinstance(entry.get("text"), str) and entry["text"]
    ]
    return "\n\n".join(texts) or None


class ReasoningStream:
    """Collects the reasoning of one streamed reply, in the order it arrived."""

    def __init__(self, provider: str, parts: list[ReasoningPart]) -> None:
        #: The provider the reply's reasoning is stored as.
        self.provider = provider
        #: Where finished parts go: the reply's own list, so a stream that breaks
        #: keeps what was complete.
        self._parts = parts
        self._thinking: list[str] = []
        self._readable: list[str] = []
        #: The compaction blocks so far: litellm hands over the whole list again
        #: each time it grows (a block's summary streams in pieces).
        self.compaction: list[ProviderCompactionPart] = []

    def add(self, delta: Any) -> None:
        """Takes in the reasoning of one delta."""
        readable = getattr(delta, "reasoning_content", None)
        if isinstance(readable, str) and readable:
            self._readable.append(storable_text(readable))
        for fragment in getattr(delta, "thinking_blocks", None) or ():
            if isinstance(fragment, Mapping):
                self._add_fragment(fragment)
        for item in getattr(delta, "reasoning_items", None) or ():
            if isinstance(item, Mapping):
                self._add_whole(dict(item))
        try:
            compaction = compaction_parts(self.provider, delta, "delta")
        except InvalidInputError:
            compaction = []  # a block still without its summary: the next list has it
        if compaction:
            self.compaction = compaction

    def _add_fragment(self, fragment: Mapping[str, Any]) -> None:
        kind = fragment.get("type")
        if kind == "thinking":
            text = fragment.get("thinking")
            if isinstance(text, str) and text:
                self._thinking.append(storable_text(text))
            signature = fragment.get("signature")
            if isinstance(signature, str) and signature:
                thinking = "".join(self._thinking)
                self._thinking = []
                block = {"type": "thinking", "thinking": thinking, "signature": signature}
                self._parts.append(part_of_block(self.provider, block))
        elif isinstance(kind, str):
            self._add_whole(
                {key: value for key, value in fragment.items() if key not in _STREAM_KEYS}
            )

    def _add_whole(self, block: dict[str, Any]) -> None:
        """A block or item that arrives whole (redacted thinking, a Responses item)."""
        self._end_unsigned()
        try:
            _native.check_reasoning_payload(json.dumps(block), "thinking_blocks")
        except InvalidInputError:
            return  # a block the provider would not take back is not kept
        self._parts.append(part_of_block(self.provider, block))

    def _end_unsigned(self) -> None:
        """Thinking text that never got its signature: kept as readable text alone,
        as no provider would take the block back."""
        if self._thinking:
            self._parts.append(ReasoningPart(self.provider, "".join(self._thinking)))
            self._thinking = []

    def finish(self) -> None:
        """Ends the reply: what is left becomes parts of readable text."""
        self._end_unsigned()
        carried = any(part.text for part in self._parts)
        if self._readable and not carried:
            text = "".join(self._readable)
            if text.strip():
                self._parts.append(ReasoningPart(self.provider, text))
        self._readable = []
