"""Prompt-cache breakpoints: where a provider may cache a request's prefix.

Anthropic (and Bedrock's Claude models) cache only up to the content blocks marked
with ``cache_control``, at most four per request; litellm passes the marks through to
them, and other providers cache by themselves and ignore them. The session marks the
end of the system message, of the summaries and of the history (the last message
before the arena's block, or the last message), so each stable part of a request is
cached where it ends. Off by default (``LLMConfig.cache_hints``): a cache write
costs a quarter more than plain input on Anthropic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_BREAKPOINTS", "CacheHints", "with_cache_hints"]

# Anthropic refuses a request with more than four cache breakpoints.
MAX_BREAKPOINTS = 4


@dataclass(frozen=True, slots=True)
class CacheHints:
    """Where a request's stable parts end, as indices of its messages (None: absent)."""

    system: int | None
    summaries: int | None
    history: int | None

    def at(self) -> list[int]:
        """The distinct message indices to mark, in order, at most four."""
        marks = {
            index for index in (self.system, self.summaries, self.history) if index is not None
        }
        return sorted(marks)[:MAX_BREAKPOINTS]


def with_cache_hints(messages: Sequence[dict[str, Any]], hints: CacheHints) -> list[dict[str, Any]]:
    """A copy of ``messages`` whose messages at ``hints`` end with an ephemeral
    ``cache_control`` breakpoint: a text content becomes one text block carrying it.
    A message without text (an assistant turn of only tool calls) gets no mark."""
    marked = list(messages)
    for index in hints.at():
        content = marked[index].get("content")
        if isinstance(content, str) and content:
            block = {"type": "text", "text": content, "cache_control": {"type": "ephemeral"}}
            marked[index] = {**marked[index], "content": [block]}
    return marked
