"""The project's own rules for an OpenAI message list, stricter than OpenAI itself.

They are the common ground of the major providers: a request that keeps them needs no
repair by litellm on its way to any of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ._common import is_blank, mapping, role_of, short, violation

__all__ = ["ROLES", "structure_violations"]

ROLES = ("system", "user", "assistant", "tool")


def structure_violations(messages: Sequence[object]) -> list[str]:
    """Every way ``messages`` breaks the project's rules, in rule order."""
    return [
        *_role_rules(messages),
        *_content_rules(messages),
        *_tool_call_rules(messages),
        *_pairing_rules(messages),
    ]


def _at(index: int) -> str:
    return f"message {index}"


def _role_rules(messages: Sequence[object]) -> Iterator[str]:
    leading = next((i for i, m in enumerate(messages) if role_of(m) != "system"), len(messages))
    # A system message mid-way is accepted: OpenAI takes it anywhere, and litellm
    # turns it into what Anthropic, Bedrock and Gemini take.
    for i, message in enumerate(messages):
        role = role_of(message)
        if role not in ROLES:
            yield violation("openai", "role", _at(i), f"role {short(role)} is not one of {ROLES}")
    if leading == len(messages):
        yield violation("openai", "first-user", "request", "no message besides system messages")
    elif (first := role_of(messages[leading])) != "user":
        detail = f"first message after the system prompt has role {short(first)}"
        yield violation("openai", "first-user", _at(leading), detail)


def _tool_calls(message: object) -> list[Any] | None:
    """The ``tool_calls`` of an assistant message, or None when it has none."""
    calls = mapping(message).get("tool_calls")
    if role_of(message) != "assistant" or calls is None:
        return None
    return list(calls) if isinstance(calls, list | tuple) else [calls]


def _content_rules(messages: Sequence[object]) -> Iterator[str]:
    for i, message in enumerate(messages):
        content = mapping(message).get("content")
        if content is None:
            if _tool_calls(message) is None:
                yield violation("openai", "empty-content", _at(i), "no content")
        elif isinstance(content, str):
            if is_blank(content):
                yield violation("openai", "empty-content", _at(i), f"content is {short(content)}")
        elif isinstance(content, list | tuple):
            yield from _part_rules(i, content)


def _part_rules(index: int, parts: Sequence[object]) -> Iterator[str]:
    if not parts:
        yield violation("openai", "empty-content", _at(index), "content is an empty list")
    for k, part in enumerate(parts):
        fields = mapping(part)
        if fields.get("type") == "text" and is_blank(fields.get("text")):
            detail = f"text part {k} is {short(fields.get('text'))}"
            yield violation("openai", "empty-content", _at(index), detail)


def _tool_call_rules(messages: Sequence[object]) -> Iterator[str]:
    first_use: dict[str, int] = {}
    for i, message in enumerate(messages):
        calls = _tool_calls(message)
        if calls is None:
            continue
        if not calls:
            yield violation("openai", "tool-call", _at(i), "tool_calls is an empty list")
        for k, call in enumerate(calls):
            yield from _call_rules(i, k, mapping(call))
            call_id = mapping(call).get("id")
            if not isinstance(call_id, str):
                continue
            if call_id in first_use:
                detail = f"tool call id {call_id!r} already used in message {first_use[call_id]}"
                yield violation("openai", "unique-tool-call-id", _at(i), detail)
            first_use.setdefault(call_id, i)


def _call_rules(index: int, k: int, call: Mapping[str, Any]) -> Iterator[str]:
    where = _at(index)
    if is_blank(call.get("id")):
        yield violation("openai", "tool-call", where, f"tool call {k} has no id")
    if call.get("type") != "function":
        yield violation("openai", "tool-call", where, f"tool call {k} type is not 'function'")
    function = mapping(call.get("function"))
    if is_blank(function.get("name")):
        yield violation("openai", "tool-call", where, f"tool call {k} has no function name")
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        yield violation("openai", "arguments-json", where, f"tool call {k} arguments not a string")
        return
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as err:
        detail = f"tool call {k} arguments {short(arguments)} are not JSON ({err.msg})"
        yield violation("openai", "arguments-json", where, detail)
        return
    if not isinstance(parsed, dict):
        detail = f"tool call {k} arguments {short(arguments)} are JSON but not an object"
        yield violation("openai", "arguments-object", where, detail)


def _call_ids(message: object) -> list[str]:
    ids = (mapping(call).get("id") for call in _tool_calls(message) or ())
    return list(dict.fromkeys(i for i in ids if isinstance(i, str)))


def _pairing_rules(messages: Sequence[object]) -> Iterator[str]:
    """Each call's result comes in the run of tool messages right after it, once."""
    known = {call_id for message in messages for call_id in _call_ids(message)}
    i = 0
    while i < len(messages):
        if _tool_calls(messages[i]):
            end = _tool_run_end(messages, i + 1)
            yield from _answer_rules(messages, i, end)
            i = end
            continue
        if role_of(messages[i]) == "tool":
            call_id = _result_id(messages[i])
            if call_id in known:
                detail = f"result for {call_id!r} is not right after the message that made the call"
                yield violation("openai", "misplaced-tool-result", _at(i), detail)
            else:
                detail = f"no tool call has id {short(call_id)}"
                yield violation("openai", "unknown-tool-result", _at(i), detail)
        i += 1


def _result_id(message: object) -> str | None:
    call_id = mapping(message).get("tool_call_id")
    return call_id if isinstance(call_id, str) else None


def _tool_run_end(messages: Sequence[object], start: int) -> int:
    end = start
    while end < len(messages) and role_of(messages[end]) == "tool":
        end += 1
    return end


def _answer_rules(messages: Sequence[object], call_index: int, end: int) -> Iterator[str]:
    expected = _call_ids(messages[call_index])
    answered: set[str | None] = set()
    for j in range(call_index + 1, end):
        call_id = _result_id(messages[j])
        if call_id in answered:
            detail = f"second result for {short(call_id)}"
            yield violation("openai", "duplicate-tool-result", _at(j), detail)
        elif call_id not in expected:
            detail = f"message {call_index} made no tool call with id {short(call_id)}"
            yield violation("openai", "unknown-tool-result", _at(j), detail)
        answered.add(call_id)
    for call_id in expected:
        if call_id not in answered:
            detail = f"tool call {call_id!r} has no tool message right after this message"
            yield violation("openai", "missing-tool-result", _at(call_index), detail)
