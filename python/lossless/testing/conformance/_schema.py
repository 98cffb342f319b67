"""The openai package's own message types as the judge of each message's shape."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from ._common import mapping, role_of, short, violation

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

__all__ = ["schema_violations"]

# Fields the openai types declare as ``Iterable[...]``: pydantic validates those lazily,
# item by item as they are consumed, so they must be consumed to be checked at all.
_LAZY_FIELDS = ("content", "tool_calls")

# Union-member tags pydantic puts in an error's location; they name a branch, not a field.
_TYPE_TAGS = frozenset({"str", "int", "float", "bool", "list", "dict"})

_MAX_ERRORS_PER_MESSAGE = 3


@functools.cache
def _list_adapter() -> TypeAdapter[list[ChatCompletionMessageParam]]:
    # openai is imported on first use: it costs most of a second.
    from openai.types.chat import ChatCompletionMessageParam

    return TypeAdapter(list[ChatCompletionMessageParam])


@functools.cache
def _item_adapter() -> TypeAdapter[ChatCompletionMessageParam]:
    from openai.types.chat import ChatCompletionMessageParam

    return TypeAdapter(ChatCompletionMessageParam)


def schema_violations(messages: Sequence[object]) -> list[str]:
    """Problems openai's ``ChatCompletionMessageParam`` finds in ``messages``.

    The whole list is validated in one call; only when that fails is each message
    validated on its own, to say which ones are wrong.
    """
    try:
        validated = _list_adapter().validate_python(list(messages))
    except ValidationError:
        return [found for i, message in enumerate(messages) for found in _one(i, message)]
    return [found for i, message in enumerate(validated) for found in _lazy(i, message)]


def _one(index: int, message: object) -> list[str]:
    if not isinstance(message, Mapping):
        return [violation("openai", "schema", f"message {index}", "not a JSON object")]
    try:
        validated = _item_adapter().validate_python(message)
    except ValidationError as err:
        return _explain(index, message, err.errors(include_url=False), prefix="")
    return _lazy(index, validated)


def _lazy(index: int, validated: object) -> list[str]:
    found: list[str] = []
    fields = mapping(validated)
    for key in _LAZY_FIELDS:
        value = fields.get(key)
        if value is None or isinstance(value, str | bytes | Mapping | list | tuple):
            continue
        if not isinstance(value, Iterable):
            continue
        try:
            list(value)
        except ValidationError as err:
            found += _explain(index, fields, err.errors(include_url=False), prefix=key)
    return found


def _explain(
    index: int, message: Mapping[str, Any], errors: list[ErrorDetails], *, prefix: str
) -> list[str]:
    where = f"message {index}"
    relevant = _matching_branch(errors)
    if not relevant:
        detail = f"role {short(role_of(message))} matches no OpenAI message type"
        return [violation("openai", "schema", where, detail)]
    lines = []
    for error in relevant[:_MAX_ERRORS_PER_MESSAGE]:
        path = ".".join(part for part in (prefix, _path(error["loc"])) if part) or "message"
        lines.append(violation("openai", "schema", where, f"{path}: {error['msg']}"))
    return lines


def _matching_branch(errors: list[ErrorDetails]) -> list[ErrorDetails]:
    """The errors of the union member whose ``role`` (or ``type``) matched.

    openai's message and tool-call types are unions told apart by a literal field;
    pydantic reports every member's errors, and those of members whose literal did not
    match only say "this is not a system message", which is noise.
    """
    wrong = {
        tuple(error["loc"][:-1])
        for error in errors
        if error["type"] == "literal_error" and error["loc"][-1:] in (("role",), ("type",))
    }
    return [e for e in errors if not any(tuple(e["loc"][: len(w)]) == w for w in wrong)]


def _path(loc: tuple[int | str, ...]) -> str:
    parts = [
        str(part)
        for part in loc
        if not (isinstance(part, str) and (part[:1].isupper() or "[" in part or part in _TYPE_TAGS))
    ]
    return ".".join(parts)
