"""The checks Anthropic's Messages API makes before it answers, with its messages.

Each check returns the message of the ``invalid_request_error`` the provider sends, or
None. Paths in the messages (``messages.2.content.0``) follow the provider's, so a
test can tell which block was refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import takewhile
from typing import Any

from ._signing import Signer

__all__ = ["cache_marks", "compaction_enabled", "refusal", "thinking_enabled"]

JSON = dict[str, Any]

_MAX_CACHE_MARKS = 4
_MIN_THINKING_BUDGET = 1024
_BLOCK_TYPES = (
    "text",
    "image",
    "document",
    "search_result",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "server_tool_use",
    "web_search_tool_result",
    "compaction",
)
#: What the server signs a compaction summary under (see ``_wire.COMPACTION_PREFIX``).
_COMPACTION_PREFIX = "compaction\0"
_COMPACTION_EDIT = "compact_20260112"
_THINKING = ("thinking", "redacted_thinking")
_THINKING_FIRST = (
    "When `thinking` is"
    " enabled, a final `assistant` message must start with a thinking block (preceeding"
    " the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include"
    " thinking blocks from previous turns. To avoid this requirement, disable `thinking`."
)


def thinking_enabled(body: JSON) -> bool:
    """Whether the request turned extended thinking on."""
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def compaction_enabled(body: JSON) -> bool:
    """Whether the request turned the provider's compaction on: a ``compact_20260112``
    edit in its ``context_management``."""
    management = body.get("context_management")
    edits = management.get("edits") if isinstance(management, dict) else None
    return isinstance(edits, list) and any(
        isinstance(edit, dict) and edit.get("type") == _COMPACTION_EDIT for edit in edits
    )


def _blocks(message: JSON) -> list[JSON]:
    """A message's content blocks; a string content is one text block."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block if isinstance(block, dict) else {} for block in content]
    return []


def cache_marks(body: JSON) -> int:
    """How many blocks (system, messages, tools) carry a ``cache_control`` mark."""
    places: list[object] = []
    for key in ("system", "tools"):
        value = body.get(key)
        places.extend(value if isinstance(value, list) else [])
    for message in _messages(body):
        places.extend(_blocks(message) if isinstance(message.get("content"), list) else [])
    return sum(1 for place in places if isinstance(place, dict) and "cache_control" in place)


def _messages(body: JSON) -> list[JSON]:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return []
    return [message if isinstance(message, dict) else {} for message in messages]


def refusal(body: JSON, signer: Signer) -> str | None:
    """The message Anthropic would refuse ``body`` with; None if it would answer."""
    checks: list[Callable[[], str | None]] = [
        lambda: _fields(body),
        lambda: _thinking_config(body),
        lambda: _roles(_messages(body)),
        lambda: _contents(_messages(body), signer),
        lambda: _compaction_blocks(body),
        lambda: _tool_pairs(_messages(body)),
        lambda: _thinking_before_tools(body),
        lambda: _cache_limit(body),
    ]
    return next((message for check in checks if (message := check()) is not None), None)


def _fields(body: JSON) -> str | None:
    """The required fields and their types."""
    if "model" not in body:
        return "model: Field required"
    max_tokens = body.get("max_tokens")
    if "max_tokens" not in body:
        return "max_tokens: Field required"
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
        return "max_tokens: Input should be a valid integer"
    if max_tokens < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    if "messages" not in body:
        return "messages: Field required"
    if not isinstance(body["messages"], list):
        return "messages: Input should be a valid list"
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        return "system: Input should be a valid list"
    return None


def _thinking_config(body: JSON) -> str | None:
    """``thinking``: a known type, and an enabled budget that fits ``max_tokens``."""
    thinking = body.get("thinking")
    if thinking is None:
        return None
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind not in ("enabled", "disabled", "adaptive") or not isinstance(thinking, dict):
        return (
            f"thinking: Input tag '{kind}' found using 'type' does not match any of the"
            " expected tags: 'adaptive', 'disabled', 'enabled'"
        )
    if kind != "enabled":
        return None
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or isinstance(budget, bool):
        return "thinking.enabled.budget_tokens: Field required"
    if budget < _MIN_THINKING_BUDGET:
        return (
            "thinking.enabled.budget_tokens: Input should be greater than or equal to"
            f" {_MIN_THINKING_BUDGET}"
        )
    if body["max_tokens"] <= budget:
        return "`max_tokens` must be greater than `thinking.budget_tokens`."
    return None


def _roles(messages: list[JSON]) -> str | None:
    """At least one message, the first from the user, then alternating roles."""
    if not messages:
        return "messages: at least one message is required"
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            return f"messages.{index}.role: Input should be 'user' or 'assistant'"
        if index and role == messages[index - 1].get("role"):
            return (
                'messages: roles must alternate between "user" and "assistant", but found'
                f' multiple "{role}" roles in a row'
            )
    if messages[0].get("role") != "user":
        return 'messages: first message must use the "user" role'
    return None


def _contents(messages: list[JSON], signer: Signer) -> str | None:
    """Every message has content; every block is known, non-empty and, if thinking,
    carries the signature or data the server issued."""
    last = len(messages) - 1
    for index, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, str | list):
            return f"messages.{index}.content: Field required"
        # Only a final assistant message (a prefill) may be empty.
        if not content and not (index == last and message.get("role") == "assistant"):
            return (
                f"messages.{index}: all messages must have non-empty content except for"
                " the optional final assistant message"
            )
        for position, block in enumerate(_blocks(message)):
            problem = _block_problem(block, signer)
            if problem is not None:
                return f"messages.{index}.content.{position}{problem}"
    return None


def _block_problem(block: JSON, signer: Signer) -> str | None:
    """What is wrong with one block, as the tail of the provider's message."""
    kind = block.get("type")
    if kind not in _BLOCK_TYPES:
        expected = ", ".join(f"'{name}'" for name in _BLOCK_TYPES)
        return (
            f".type: Input tag '{kind}' found using 'type' does not match any of the"
            f" expected tags: {expected}"
        )
    if kind == "text":
        text = block.get("text")
        if not isinstance(text, str) or not text:
            return ".text: text content blocks must be non-empty"
        if not text.strip():
            return ".text: text content blocks must contain non-whitespace text"
    if kind == "thinking":
        if "signature" not in block:
            return ".thinking.signature: Field required"
        if not signer.verify(str(block.get("thinking", "")), block["signature"]):
            return ": Invalid `signature` in `thinking` block"
    if kind == "redacted_thinking":
        if "data" not in block:
            return ".redacted_thinking.data: Field required"
        if signer.unseal(block["data"]) is None:
            return ": Invalid `data` in `redacted_thinking` block"
    if kind == "compaction":
        content = str(block.get("content", ""))
        if not signer.verify(_COMPACTION_PREFIX + content, block.get("signature")):
            return ": Invalid `signature` in `compaction` block"
    return None


def _compaction_blocks(body: JSON) -> str | None:
    """A compaction block only in an assistant message, and only when the request
    turned compaction on."""
    for index, message in enumerate(_messages(body)):
        for position, block in enumerate(_blocks(message)):
            if block.get("type") != "compaction":
                continue
            where = f"messages.{index}.content.{position}"
            if message.get("role") != "assistant":
                return f"{where}: `compaction` blocks may only appear in `assistant` messages"
            if not compaction_enabled(body):
                return (
                    f"{where}: `compaction` blocks require `context_management` with a"
                    f" `{_COMPACTION_EDIT}` edit"
                )
    return None


def _ids(message: JSON | None, kind: str, key: str) -> Iterator[tuple[int, object]]:
    """The positions and ids of a message's blocks of one kind."""
    for position, block in enumerate(_blocks(message) if message else []):
        if block.get("type") == kind:
            yield position, block.get(key)


def _tool_pairs(messages: list[JSON]) -> str | None:
    """Each ``tool_use`` is answered in the next message, each ``tool_result`` answers
    the message before it, results come first, and no ``tool_use`` id repeats."""
    seen: set[str] = set()
    for index, message in enumerate(messages):
        before = messages[index - 1] if index else None
        after = messages[index + 1] if index + 1 < len(messages) else None
        uses = [str(use) for _, use in _ids(message, "tool_use", "id")]
        if len(set(uses)) < len(uses) or seen.intersection(uses):
            return f"messages.{index}: `tool_use` ids must be unique"
        seen.update(uses)
        problem = (
            _unanswered(index, uses, after)
            or _unasked(index, message, before)
            or _results_first(index, message)
        )
        if problem:
            return problem
    return None


def _unanswered(index: int, uses: list[str], after: JSON | None) -> str | None:
    answered = {str(result) for _, result in _ids(after, "tool_result", "tool_use_id")}
    missing = [use for use in uses if use not in answered]
    if not missing:
        return None
    return (
        f"messages.{index}: `tool_use` ids were found without `tool_result` blocks"
        f" immediately after: {', '.join(missing)}. Each `tool_use` block must have"
        " a corresponding `tool_result` block in the next message."
    )


def _unasked(index: int, message: JSON, before: JSON | None) -> str | None:
    asked = {str(use) for _, use in _ids(before, "tool_use", "id")}
    for position, result in _ids(message, "tool_result", "tool_use_id"):
        if str(result) not in asked:
            return (
                f"messages.{index}.content.{position}: unexpected `tool_use_id` found in"
                f" `tool_result` blocks: {result}. Each `tool_result` block must have a"
                " corresponding `tool_use` block in the previous message."
            )
    return None


def _results_first(index: int, message: JSON) -> str | None:
    kinds = [block.get("type") for block in _blocks(message)]
    leading = len(list(takewhile(lambda kind: kind == "tool_result", kinds)))
    if "tool_result" not in kinds[leading:]:
        return None
    return (
        f"messages.{index}: `tool_result` blocks must come before any other content"
        " in a user message"
    )


def _thinking_before_tools(body: JSON) -> str | None:
    """With thinking on, the last assistant message, if it calls tools, opens with the
    thinking that led to the calls."""
    if not thinking_enabled(body):
        return None
    messages = _messages(body)
    assistants = [i for i, message in enumerate(messages) if message.get("role") == "assistant"]
    if not assistants:
        return None
    index = assistants[-1]
    blocks = _blocks(messages[index])
    if not any(block.get("type") == "tool_use" for block in blocks):
        return None
    # A compaction block opens its turn, before the thinking.
    first = len(list(takewhile(lambda block: block.get("type") == "compaction", blocks)))
    found = blocks[first].get("type") if first < len(blocks) else None
    if found in _THINKING:
        return None
    return (
        f"messages.{index}.content.{first}.type: Expected `thinking` or `redacted_thinking`,"
        f" but found `{found}`. {_THINKING_FIRST}"
    )


def _cache_limit(body: JSON) -> str | None:
    """At most four ``cache_control`` breakpoints per request."""
    marks = cache_marks(body)
    if marks > _MAX_CACHE_MARKS:
        return (
            f"A maximum of {_MAX_CACHE_MARKS} blocks with cache_control may be provided."
            f" Found {marks}."
        )
    return None
