"""Helpers shared by the rule sets: how a violation reads, and what counts as blank text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def violation(provider: str, rule: str, where: str, detail: str) -> str:
    """One violation, ``"<provider>/<rule> at <where>: <detail>"``.

    ``where`` is ``"message N"`` for an index into the caller's OpenAI list, ``"turn N"``
    for an index into the provider payload litellm built, or ``"request"``.
    """
    return f"{provider}/{rule} at {where}: {detail}"


def is_blank(text: object) -> bool:
    """Whether ``text`` is missing, not a string, or only whitespace."""
    return not isinstance(text, str) or not text.strip()


def role_of(message: object) -> object:
    """The ``role`` of a message, or None when the message is not a mapping."""
    return message.get("role") if isinstance(message, Mapping) else None


def mapping(value: object) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else an empty one (so lookups on bad input are safe)."""
    return value if isinstance(value, Mapping) else {}


def short(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
