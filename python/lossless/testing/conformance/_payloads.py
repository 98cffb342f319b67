"""Each provider's documented structural rules, checked on the payload litellm built.

litellm repairs or drops much of what a provider would refuse (it merges turns, drops
empty messages, replaces unparsable tool arguments), so a payload that litellm built
without complaint can still be refused. The three payload shapes are read into one
form (turns of text, call and result blocks) and checked against one rule set, with
the differences between the providers as switches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ._common import is_blank, mapping, short, violation

__all__ = ["payload_violations"]


@dataclass(frozen=True)
class _Block:
    kind: str  # "text", "call", "result" or "other"
    text: object = None
    call_id: object = None
    arguments: object = None


@dataclass(frozen=True)
class _Turn:
    role: object
    blocks: tuple[_Block, ...]

    def of(self, kind: str) -> list[_Block]:
        return [block for block in self.blocks if block.kind == kind]


@dataclass(frozen=True)
class _Dialect:
    name: str
    read: Callable[[object], _Turn]
    call: str  # what the provider calls a tool call block
    result: str  # and a tool result block
    alternate: bool  # roles must alternate
    by_id: bool  # results name their call by id (else they are matched by count)
    results_first: bool  # results come before any other block of their turn
    blank: Callable[[object], bool]  # a text the provider counts as empty


def _anthropic_block(raw: object) -> _Block:
    block = mapping(raw)
    kind = block.get("type")
    if kind == "text":
        return _Block("text", text=block.get("text"))
    if kind == "tool_use":
        return _Block("call", call_id=block.get("id"), arguments=block.get("input"))
    if kind == "tool_result":
        return _Block("result", call_id=block.get("tool_use_id"))
    return _Block("other")


def _anthropic_turn(raw: object) -> _Turn:
    message = mapping(raw)
    content = message.get("content")
    if isinstance(content, str):
        return _Turn(message.get("role"), (_Block("text", text=content),))
    return _Turn(message.get("role"), tuple(map(_anthropic_block, content or ())))


def _bedrock_block(raw: object) -> _Block:
    block = mapping(raw)
    if "text" in block:
        return _Block("text", text=block["text"])
    if "toolUse" in block:
        use = mapping(block["toolUse"])
        return _Block("call", call_id=use.get("toolUseId"), arguments=use.get("input"))
    if "toolResult" in block:
        return _Block("result", call_id=mapping(block["toolResult"]).get("toolUseId"))
    return _Block("other")


def _bedrock_turn(raw: object) -> _Turn:
    message = mapping(raw)
    return _Turn(message.get("role"), tuple(map(_bedrock_block, message.get("content") or ())))


def _gemini_part(raw: object) -> _Block:
    part = mapping(raw)
    if "text" in part:
        return _Block("text", text=part["text"])
    call = part.get("function_call", part.get("functionCall"))
    if call is not None:
        return _Block("call", call_id=mapping(call).get("id"), arguments=mapping(call).get("args"))
    response = part.get("function_response", part.get("functionResponse"))
    if response is not None:
        return _Block("result", call_id=mapping(response).get("id"))
    return _Block("other")


def _gemini_turn(raw: object) -> _Turn:
    content = mapping(raw)
    role = content.get("role")
    blocks = tuple(map(_gemini_part, content.get("parts") or ()))
    return _Turn("assistant" if role == "model" else role, blocks)


def _empty(text: object) -> bool:
    return not isinstance(text, str) or not text


# Anthropic and Bedrock refuse whitespace-only text blocks; Gemini refuses only empty
# parts (litellm itself pads Gemini requests with a " " part to satisfy it).
_DIALECTS = {
    "anthropic": _Dialect(
        name="anthropic",
        read=_anthropic_turn,
        call="tool_use",
        result="tool_result",
        alternate=True,
        by_id=True,
        results_first=True,
        blank=is_blank,
    ),
    "bedrock": _Dialect(
        name="bedrock",
        read=_bedrock_turn,
        call="toolUse",
        result="toolResult",
        alternate=True,
        by_id=True,
        results_first=False,
        blank=is_blank,
    ),
    # Gemini 2.x takes no call ids: results are matched to calls by position.
    "gemini": _Dialect(
        name="gemini",
        read=_gemini_turn,
        call="function_call",
        result="function_response",
        alternate=False,
        by_id=False,
        results_first=False,
        blank=_empty,
    ),
}


def payload_violations(provider: str, payload: Sequence[object]) -> list[str]:
    """Every documented rule of ``provider`` that ``payload`` (litellm's output) breaks."""
    dialect = _DIALECTS[provider]
    turns = [dialect.read(raw) for raw in payload]
    return [*_order(dialect, turns), *_blocks(dialect, turns), *_pairs(dialect, turns)]


def _order(dialect: _Dialect, turns: Sequence[_Turn]) -> Iterator[str]:
    if not turns:
        yield violation(dialect.name, "no-turns", "request", "the payload has no messages")
        return
    if turns[0].role != "user":
        detail = f"the payload starts with role {short(turns[0].role)}"
        yield violation(dialect.name, "first-user", "turn 0", detail)
    for k, turn in enumerate(turns):
        if turn.role not in ("user", "assistant"):
            yield violation(dialect.name, "role", f"turn {k}", f"role {short(turn.role)}")
        elif dialect.alternate and k > 0 and turn.role == turns[k - 1].role:
            detail = f"two {turn.role} turns in a row"
            yield violation(dialect.name, "alternating-roles", f"turn {k}", detail)


def _blocks(dialect: _Dialect, turns: Sequence[_Turn]) -> Iterator[str]:
    first_use: dict[object, int] = {}
    for k, turn in enumerate(turns):
        where = f"turn {k}"
        if not turn.blocks:
            yield violation(dialect.name, "empty-turn", where, "no content blocks")
        for block in turn.of("text"):
            if dialect.blank(block.text):
                detail = f"text block {short(block.text)}"
                yield violation(dialect.name, "empty-text", where, detail)
        for block in turn.of("call"):
            if not isinstance(block.arguments, dict):
                detail = f"{dialect.call} input is {short(block.arguments)}, not an object"
                yield violation(dialect.name, "tool-input", where, detail)
            if dialect.by_id and _hashable(block.call_id) in first_use:
                detail = f"{dialect.call} id {short(block.call_id)} already used in turn "
                detail += str(first_use[_hashable(block.call_id)])
                yield violation(dialect.name, "unique-tool-id", where, detail)
            first_use.setdefault(_hashable(block.call_id), k)


def _hashable(value: object) -> object:
    return value if isinstance(value, str | int | None) else repr(value)


def _pairs(dialect: _Dialect, turns: Sequence[_Turn]) -> Iterator[str]:
    for k, turn in enumerate(turns):
        if turn.of("result"):
            before = turns[k - 1] if k > 0 else None
            yield from _answers(dialect, k, turn, before)
        if turn.of("call"):
            after = turns[k + 1] if k + 1 < len(turns) else None
            yield from _answered(dialect, k, turn, after)


def _calls_in(turn: _Turn | None) -> list[_Block]:
    return turn.of("call") if turn is not None and turn.role == "assistant" else []


def _results_in(turn: _Turn | None) -> list[_Block]:
    return turn.of("result") if turn is not None and turn.role == "user" else []


def _answers(dialect: _Dialect, k: int, turn: _Turn, before: _Turn | None) -> Iterator[str]:
    """The results of turn ``k`` answer calls of the assistant turn just before it."""
    name, where = dialect.name, f"turn {k}"
    calls = _calls_in(before)
    if not calls:
        detail = f"{dialect.result} but the turn before has no {dialect.call}"
        yield violation(name, "orphan-tool-result", where, detail)
    elif dialect.by_id:
        ids = {_hashable(call.call_id) for call in calls}
        seen: set[object] = set()
        for result in turn.of("result"):
            key = _hashable(result.call_id)
            if key not in ids:
                detail = f"{dialect.result} for {short(result.call_id)} answers no {dialect.call}"
                yield violation(name, "orphan-tool-result", where, detail)
            elif key in seen:
                detail = f"second {dialect.result} for {short(result.call_id)}"
                yield violation(name, "duplicate-tool-result", where, detail)
            seen.add(key)
    if dialect.results_first:
        kinds = [block.kind for block in turn.blocks]
        prefix = next((i for i, kind in enumerate(kinds) if kind != "result"), len(kinds))
        if "result" in kinds[prefix:]:
            detail = f"a {dialect.result} comes after other content"
            yield violation(name, "tool-results-first", where, detail)


def _answered(dialect: _Dialect, k: int, turn: _Turn, after: _Turn | None) -> Iterator[str]:
    """Every call of turn ``k`` has its result in the user turn right after it."""
    calls, results = turn.of("call"), _results_in(after)
    if dialect.by_id:
        answered = {_hashable(result.call_id) for result in results}
        missing = [c.call_id for c in calls if _hashable(c.call_id) not in answered]
        for call_id in missing:
            detail = f"{dialect.call} {short(call_id)} has no {dialect.result} in the next turn"
            yield violation(dialect.name, "unanswered-tool-call", f"turn {k}", detail)
    elif len(results) != len(calls):
        detail = f"{len(calls)} {dialect.call} parts but {len(results)} {dialect.result} parts"
        yield violation(dialect.name, "unanswered-tool-call", f"turn {k}", detail + " next")
