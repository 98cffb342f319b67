"""How each request a server receives begins compared with the one before it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._reply import content_text

__all__ = ["PrefixReport", "compare"]

# The opening of the context arena's volatile block (see docs/ARENA.md): a user
# message that is not the user's.
_BLOCK_OPENING = "<context>"


@dataclass(frozen=True, slots=True)
class PrefixReport:
    """How one request begins compared with the request received before it.

    Messages are compared as received, except that ``cache_control`` marks are left
    out: a provider's cache keys on the content, and a mark moves from turn to turn.

    Attributes:
        messages: Messages in this request.
        shared_messages: Leading messages equal to the previous request's (0 for
            the first request).
        shared_chars: Characters of message text in those shared messages.
        chars: Characters of message text in this request.
        previous_newest_user: Index of the previous request's newest user message
            that is not the arena's ``<context>`` block; -1 when there is none.
        extends_previous: The request begins with every message of the previous one
            up to that newest user message (always true for the first request).
    """

    messages: int
    shared_messages: int
    shared_chars: int
    chars: int
    previous_newest_user: int
    extends_previous: bool


def compare(previous: dict[str, Any] | None, request: dict[str, Any]) -> PrefixReport:
    """The :class:`PrefixReport` of ``request`` after ``previous`` (None: the first)."""
    current = _messages(request)
    chars = sum(_chars(message) for message in current)
    if previous is None:
        return PrefixReport(len(current), 0, 0, chars, -1, True)
    before = _messages(previous)
    shared = 0
    for mine, theirs in zip(current, before, strict=False):
        if mine != theirs:
            break
        shared += 1
    newest = _newest_user(before)
    return PrefixReport(
        messages=len(current),
        shared_messages=shared,
        shared_chars=sum(_chars(message) for message in current[:shared]),
        chars=chars,
        previous_newest_user=newest,
        extends_previous=shared > newest,
    )


def _messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    messages = request.get("messages")
    if not isinstance(messages, list):
        return []
    return [_unmarked(message) for message in messages if isinstance(message, dict)]


def _unmarked(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` without cache marks: a content of one text block is its text."""
    plain = {key: value for key, value in message.items() if key != "cache_control"}
    content = plain.get("content")
    if isinstance(content, list):
        blocks = [
            {key: value for key, value in block.items() if key != "cache_control"}
            if isinstance(block, dict)
            else block
            for block in content
        ]
        one_text = len(blocks) == 1 and isinstance(blocks[0], dict)
        if one_text and set(blocks[0]) == {"type", "text"} and blocks[0]["type"] == "text":
            plain["content"] = blocks[0]["text"]
        else:
            plain["content"] = blocks
    return plain


def _chars(message: dict[str, Any]) -> int:
    return len(content_text(message.get("content"))) + sum(
        len(str(call.get("function", {}).get("arguments", "")))
        for call in message.get("tool_calls") or []
        if isinstance(call, dict) and isinstance(call.get("function"), dict)
    )


def _newest_user(messages: list[dict[str, Any]]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        text = content_text(message.get("content"))
        if message.get("role") == "user" and not text.startswith(_BLOCK_OPENING):
            return index
    return -1
