"""The recall tools a session answers itself (``send(..., tools="recall")``).

Each answer is JSON bounded to :data:`ANSWER_TOKENS` tokens of the session's
model, so a recall call can never flood the window it is meant to relieve: grep
and describe leave out their last entries (and say how many), expand and read
take at most that budget and give cursors to page on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from lossless.errors import InvalidInputError, LosslessError, NotFoundError
from lossless.files.tool import READ_FILE_TOOL, answer_read_file
from lossless.parts import MediaPart, ToolPart
from lossless.recall import describe, expand, grep, read, read_media
from lossless.recall._target import tracing_of
from lossless.tokens import count_tokens

if TYPE_CHECKING:
    from lossless.ports import SessionView, ToolLoopHost
    from lossless.recall import DagNode, GrepHit
    from lossless.results import PartCallback, TurnResult

__all__ = ["ANSWER_TOKENS", "RECALL_TOOLS", "answer_recall_turn", "run_recall_tool"]

# An image's or a document's reference id (the core's `parts::is_media_id`).
MEDIA_ID = re.compile(r"(?:image|document)_[0-9a-f]{32}")

ANSWER_TOKENS = 4_000
"""Most tokens of one recall tool answer (a tenth of a small 40k window)."""

T = TypeVar("T")


class ModelTurn(Protocol):
    """One model call on the session's current view, offering ``tools``, its reply
    stored."""

    def __call__(
        self, on_part: PartCallback | None, tools: Sequence[dict[str, Any]] | None
    ) -> Awaitable[TurnResult]: ...


_CURSOR_HELP = "a message id from before_cursor / after_cursor of an earlier expansion"

RECALL_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "lossless_grep",
            "description": "Search this conversation's full stored history, including parts "
            "that were summarised away. Returns snippets, the message or summary holding "
            "each, and the summary covering it now (expand it around the message to read it).",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "A question or words to find, ranked by relevance; "
                        '+word requires a word, "exact words" a phrase '
                        "(or a regex with mode=regex).",
                    },
                    "mode": {"type": "string", "enum": ["text", "regex"], "default": "text"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
                },
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "lossless_describe",
            "description": "List the summaries of this conversation: what each covers "
            "(seq span, messages, tokens), its level, and whether it is in the context now.",
            "parameters": {
                "type": "object",
                "properties": {
                    "summary_id": {"type": "string", "description": "Only this summary's subtree."}
                },
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "lossless_expand",
            "description": "Read the original messages behind a summary within a token "
            "budget: the oldest first, or centred on one message (around) or on the best "
            "match of some words (query). The answer says how many messages lie before and "
            "after, with cursors to page on (before / after).",
            "parameters": {
                "type": "object",
                "properties": {
                    "summary_id": {"type": "string"},
                    "around": {"type": "string", "description": "A message id to centre on."},
                    "query": {"type": "string", "description": "Words to centre on."},
                    "before": {"type": "string", "description": _CURSOR_HELP},
                    "after": {"type": "string", "description": _CURSOR_HELP},
                    "max_tokens": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": ANSWER_TOKENS,
                        "default": ANSWER_TOKENS,
                    },
                },
                "required": ["summary_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "lossless_read",
            "description": "Read one stored message whole: its text, every tool call's "
            "input, output and error, every file reference. Long messages come in pages: "
            "pass next_cursor back as cursor. Given an image's or a document's id "
            "(image_..., document_...) instead, it shows that image or document itself.",
            "parameters": {
                "type": "object",
                "properties": {
                    "message_id": {"type": "string"},
                    "cursor": {"type": "integer", "minimum": 0, "default": 0},
                    "max_tokens": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": ANSWER_TOKENS,
                        "default": ANSWER_TOKENS,
                    },
                },
                "required": ["message_id"],
            },
        },
    },
    READ_FILE_TOOL,
]

RECALL_TOOL_NAMES = frozenset(tool["function"]["name"] for tool in RECALL_TOOLS)


def run_recall_tool(session: SessionView, name: str, arguments: str) -> str:
    """Answer one recall tool call; raises :class:`LosslessError` for bad arguments."""
    args = _arguments(arguments)
    answer = _ANSWERS.get(name)
    if answer is None:
        raise InvalidInputError(f"name: unknown recall tool {name!r}")
    return answer(session, args)


def _arguments(arguments: str) -> dict[str, Any]:
    try:
        args = json.loads(arguments or "{}")
    except json.JSONDecodeError as err:
        raise InvalidInputError(f"arguments: not valid JSON: {err}") from err
    except RecursionError:
        # The decoder recurses once per level of nesting: a model can send more
        # levels than Python's recursion limit allows.
        raise InvalidInputError("arguments: nested too deeply to read") from None
    if not isinstance(args, dict):
        raise InvalidInputError("arguments: expected a JSON object")
    return args


def _grep(session: SessionView, args: dict[str, Any]) -> str:
    mode = args.get("mode", "text")
    limit = min(_integer(args, "limit", 10), 50)
    hits = grep(str(args.get("query", "")), session=session, mode=mode, limit=limit)
    return _fitted(session, hits, _hit_dict, "hits", "narrow the query or lower limit")


def _describe(session: SessionView, args: dict[str, Any]) -> str:
    summary_id = args.get("summary_id")
    if summary_id:
        nodes = describe(_text(args, "summary_id"), db=session)
        if any(node.session_id != session.id for node in nodes):
            raise NotFoundError(f"no summary with id {summary_id!r}")
    else:
        nodes = describe(session)
    # Live summaries first (what stands in the context now), oldest span first.
    nodes.sort(key=lambda node: (not node.live, node.span_start_seq))
    return _fitted(
        session, nodes, _node_dict, "summaries", "describe one summary_id to see its subtree"
    )


def _expand(session: SessionView, args: dict[str, Any]) -> str:
    summary_id = _text(args, "summary_id")
    expansion = expand(
        summary_id,
        db=session,
        max_tokens=_budget(args),
        around=_maybe_text(args, "around"),
        query=_maybe_text(args, "query"),
        before=_maybe_text(args, "before"),
        after=_maybe_text(args, "after"),
    )
    if expansion.session_id != session.id:
        raise NotFoundError(f"no summary with id {summary_id!r}")
    return json.dumps(
        {
            "summary_id": expansion.summary_id,
            "messages": [
                {"id": m.id, "seq": m.seq, "role": m.role, "text": m.text}
                for m in expansion.messages
            ],
            "messages_before": expansion.messages_before,
            "messages_after": expansion.messages_after,
            "before_cursor": expansion.before_cursor,
            "after_cursor": expansion.after_cursor,
            "focus_id": expansion.focus_id,
            "note": expansion.note,
        }
    )


def _read(session: SessionView, args: dict[str, Any]) -> str:
    message_id = _text(args, "message_id")
    if MEDIA_ID.fullmatch(message_id):
        return _read_media_answer(session, message_id)
    cursor = _integer(args, "cursor", 0)
    if cursor < 0:
        raise InvalidInputError("cursor: must be at least 0")
    page = read(message_id, db=session, max_tokens=_budget(args), cursor=cursor)
    if page.session_id != session.id:
        raise NotFoundError(f"no message with id {message_id!r}")
    return json.dumps(
        {
            "message_id": page.message_id,
            "seq": page.seq,
            "role": page.role,
            "status": page.status,
            "text": page.text,
            "cursor": page.cursor,
            "next_cursor": page.next_cursor,
            "total_chars": page.total_chars,
        }
    )


def _read_media_answer(session: SessionView, media_id: str) -> str:
    """What a read of an image's id answers in text; the image itself comes with
    the answer as a part of the tool's result (see ``_answer``)."""
    part = read_media(media_id, db=session, session=session.id)
    shown = "the image or document is attached to this result"
    return json.dumps({**media_facts(part), "shown": shown})


def media_facts(part: MediaPart) -> dict[str, Any]:
    """What an image or a document read back is, as a read of its id tells it."""
    return {
        "media_id": part.media_id,
        "kind": part.media_kind,
        "media_type": part.media_type,
        "width": part.width,
        "height": part.height,
        "pages": part.pages,
        "bytes": part.byte_size,
        "caption": part.caption,
        "url": part.url,
    }


def _read_file(session: SessionView, args: dict[str, Any]) -> str:
    return answer_read_file(session, args, ANSWER_TOKENS)


_ANSWERS: dict[str, Callable[[SessionView, dict[str, Any]], str]] = {
    "lossless_read_file": _read_file,
    "lossless_grep": _grep,
    "lossless_describe": _describe,
    "lossless_expand": _expand,
    "lossless_read": _read,
}


def _fitted(
    session: SessionView,
    items: Sequence[T],
    as_dict: Callable[[T], dict[str, Any]],
    key: str,
    advice: str,
) -> str:
    """``{key: [...], "note": ...}`` with as many of ``items`` as fit ANSWER_TOKENS
    (found by bisection: each try counts the whole answer)."""
    rows = [as_dict(item) for item in items]

    def answer(count: int) -> str:
        left_out = len(rows) - count
        note = f"{left_out} more left out to stay within {ANSWER_TOKENS} tokens; {advice}"
        return json.dumps({key: rows[:count], "note": note if left_out else "complete"})

    low, high = 0, len(rows)
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens(answer(middle), model=session.model) <= ANSWER_TOKENS:
            low = middle
        else:
            high = middle - 1
    return answer(low)


def _budget(args: dict[str, Any]) -> int:
    # Below one is the core's to refuse, as for every caller.
    return min(_integer(args, "max_tokens", ANSWER_TOKENS), ANSWER_TOKENS)


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{key}: expected a non-empty string")
    return value


def _maybe_text(args: dict[str, Any], key: str) -> str | None:
    return None if args.get(key) in (None, "") else _text(args, key)


def _integer(args: dict[str, Any], key: str, default: int) -> int:
    """An integer argument of a model's call: JSON may spell it as a float (``10.0``);
    anything else (text, ``1e400``, which reads as infinity) is refused."""
    value = args.get(key, default)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{key}: expected an integer, got {type(value).__name__}")
    return value


def _hit_dict(hit: GrepHit) -> dict[str, Any]:
    return {
        "owner_id": hit.owner_id,
        "owner_kind": hit.owner_kind,
        "snippet": hit.snippet,
        "covering_summary_id": hit.covering_summary_id,
    }


def _node_dict(node: DagNode) -> dict[str, Any]:
    return {
        "id": node.id,
        "kind": node.kind,
        "level": node.level,
        "depth": node.depth,
        "span_start_seq": node.span_start_seq,
        "span_end_seq": node.span_end_seq,
        "message_count": node.message_count,
        "token_count": node.token_count,
        "live": node.live,
    }


async def answer_recall_turn(
    session: ToolLoopHost, model_turn: ModelTurn, on_part: PartCallback | None
) -> TurnResult:
    """Model turns (``model_turn``) with the recall tools, answering the model's recall
    calls, until it replies without calling one (at most ``config.recall_max_rounds``
    rounds)."""
    for _ in range(session.config.recall_max_rounds):
        result = await model_turn(on_part, RECALL_TOOLS)
        recall_calls = [call for call in result.tool_calls if call.name in RECALL_TOOL_NAMES]
        if not recall_calls or len(recall_calls) != len(result.tool_calls):
            return result
        for call in recall_calls:
            await _answer(session, call)
    return await model_turn(on_part, None)


async def _answer(session: ToolLoopHost, call: ToolPart) -> None:
    arguments = call.input if isinstance(call.input, str) else json.dumps(call.input)
    media: list[MediaPart] = []
    tracing = tracing_of(session)
    try:
        with (
            nullcontext()
            if tracing is None
            else tracing.tool_call(call.name, call.call_id, arguments)
        ):
            output = run_recall_tool(session, call.name, arguments)
            if call.name == "lossless_read":
                media = _media_of(session, json.loads(output))
    except LosslessError as err:
        await session.update_tool(call.call_id, status="error", error=str(err))
        return
    await session.update_tool(call.call_id, status="completed", output=output, media=media)


def _media_of(session: SessionView, answer: dict[str, Any]) -> list[MediaPart]:
    """The image or document a read of its id shows, as a part of the tool's result
    (the model sees it as the image itself); none for a read of a message."""
    media_id = answer.get("media_id")
    if not isinstance(media_id, str):
        return []
    part = read_media(media_id, db=session, session=session.id)
    return [] if part.data is None and part.url is None else [part]
