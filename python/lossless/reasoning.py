"""Reasoning as litellm hands it over, made into :class:`ReasoningPart` s.

litellm (Chat Completions format) puts a provider's reasoning on an assistant
message as ``thinking_blocks`` (Anthropic's ``thinking`` blocks, each with its
``signature``, and ``redacted_thinking`` blocks) and as ``reasoning_content``, the
readable text. While a reply streams, a delta carries pieces of a block: the text
of a ``thinking`` block arrives in pieces and its signature last, which ends the
block; a ``redacted_thinking`` block arrives whole.

Each block becomes one part with the block as its payload and its text as the
readable text; ``reasoning_content`` becomes a part of text alone only when no
block carries text (other providers show their reasoning only as text).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lossless import _native
from lossless.errors import InvalidInputError
from lossless.parts import ReasoningPart, storable_text

__all__ = ["ReasoningStream", "part_of_block"]

# What litellm adds to a streamed block for its own bookkeeping: not the provider's.
_STREAM_KEYS = frozenset({"index"})


def part_of_block(provider: str, block: Mapping[str, Any]) -> ReasoningPart:
    """The part that keeps ``block`` as ``provider`` sent it, its readable text
    (a ``thinking`` block's, or the summary of an OpenAI ``reasoning`` item)
    alongside."""
    kind = block.get("type")
    if kind == "reasoning":
        summary = block.get("summary")
        pieces = summary if isinstance(summary, list) else []
        thinking: object = "\n\n".join(
            piece["text"]
            for piece in pieces
            if isinstance(piece, Mapping) and isinstance(piece.get("text"), str)
        )
    else:
        thinking = block.get("thinking") if kind == "thinking" else None
    text = thinking if isinstance(thinking, str) and thinking else None
    return ReasoningPart(provider, text, dict(block))


class ReasoningStream:
    """Collects the reasoning of one streamed reply, in the order it arrived."""

    def __init__(self, provider: str, parts: list[ReasoningPart]) -> None:
        self._provider = provider
        #: Where finished parts go: the reply's own list, so a stream that breaks
        #: keeps what was complete.
        self._parts = parts
        self._thinking: list[str] = []
        self._readable: list[str] = []

    def add(self, delta: Any) -> None:
        """Takes in the reasoning of one delta."""
        readable = getattr(delta, "reasoning_content", None)
        if isinstance(readable, str) and readable:
            self._readable.append(storable_text(readable))
        for fragment in getattr(delta, "thinking_blocks", None) or ():
            if isinstance(fragment, Mapping):
                self._add_fragment(fragment)

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
                self._parts.append(part_of_block(self._provider, block))
        elif isinstance(kind, str):
            self._end_unsigned()
            block = {key: value for key, value in fragment.items() if key not in _STREAM_KEYS}
            try:
                _native.check_reasoning_payload(json.dumps(block), "thinking_blocks")
            except InvalidInputError:
                return  # a block the provider would not take back is not kept
            self._parts.append(part_of_block(self._provider, block))

    def _end_unsigned(self) -> None:
        """Thinking text that never got its signature: kept as readable text alone,
        as no provider would take the block back."""
        if self._thinking:
            self._parts.append(ReasoningPart(self._provider, "".join(self._thinking)))
            self._thinking = []

    def finish(self) -> None:
        """Ends the reply: what is left becomes parts of readable text."""
        self._end_unsigned()
        carried = any(part.text for part in self._parts)
        if self._readable and not carried:
            text = "".join(self._readable)
            if text.strip():
                self._parts.append(ReasoningPart(self._provider, text))
        self._readable = []
