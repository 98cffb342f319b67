"""Recall: finding and reading back what compaction moved out of the view.

Three operations, each a Python function, an agent tool the session answers
itself (``send(..., tools="recall")``), and a CLI command:

- :func:`grep`: full-text (bm25) or regex search over every stored part and summary;
- :func:`describe`: the summary DAG, what each summary covers;
- :func:`expand`: a summary back to its source messages, within a token budget.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from lossless import _native
from lossless.errors import InvalidInputError, LosslessError, StoreError
from lossless.parts import ToolPart

if TYPE_CHECKING:
    from lossless.session import PartCallback, Session, TurnResult

__all__ = [
    "RECALL_TOOLS",
    "DagNode",
    "ExpandedMessage",
    "Expansion",
    "GrepHit",
    "answer_recall_turn",
    "describe",
    "expand",
    "grep",
    "group_by_summary",
    "run_recall_tool",
]


@dataclass(frozen=True, slots=True)
class GrepHit:
    """One search hit; ``covering_summary_id`` is the live summary that holds it now,
    ``leaf_summary_id`` the leaf summary whose sources name a message hit (it may
    have been condensed since)."""

    session_id: str
    owner_kind: Literal["message", "summary"]
    owner_id: str
    part_id: str | None
    snippet: str
    rank: float
    covering_summary_id: str | None
    leaf_summary_id: str | None = None


@dataclass(frozen=True, slots=True)
class DagNode:
    """One summary of the DAG."""

    id: str
    kind: Literal["leaf", "condensed"]
    level: int
    depth: int
    span_start_seq: int
    span_end_seq: int
    message_count: int
    token_count: int
    live: bool
    superseded_by: str | None
    source_kind: Literal["message", "summary"]
    sources: list[str]
    file_ids: list[str]
    text: str


@dataclass(frozen=True, slots=True)
class ExpandedMessage:
    id: str
    seq: int
    role: str
    text: str
    tokens: int


@dataclass(frozen=True, slots=True)
class Expansion:
    """A summary's source messages that fit the budget, and a note of the rest."""

    summary_id: str
    messages: list[ExpandedMessage]
    tokens: int
    total_messages: int
    omitted_messages: int
    note: str


def _store_of(source: object) -> _native.Store:
    """The native store behind a Session or a Store, or of the database file at a
    path, which must exist: reading never creates a database."""
    from lossless.session import Session
    from lossless.store import Store, database_path

    if isinstance(source, Session):
        return source.store
    if isinstance(source, Store):
        return source.native
    if isinstance(source, _native.Store):
        return source
    path = database_path(source)
    if path != ":memory:" and not os.path.exists(path):
        raise StoreError(f"{path}: no such database file")
    return _native.Store(path)


def _resolve(field: str, target: object, db: object) -> tuple[_native.Store, str | None]:
    """The store and session a recall call reads: a Session, a session id in ``db``,
    or, for ``None`` or a Store, every session of that database."""
    from lossless.session import Session
    from lossless.store import Store

    if isinstance(target, Session):
        return target.store, target.id
    if isinstance(target, Store | _native.Store):
        return _store_of(target), None
    if target is None or isinstance(target, str):
        return _store_of(db), target
    raise InvalidInputError(
        f"{field}: expected a Session or a session id, got {type(target).__name__}"
    )


def _at_least_one(field: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{field}: expected an integer, got {type(value).__name__}")
    if value < 1:
        raise InvalidInputError(f"{field}: must be at least 1")


def grep(
    query: str,
    *,
    session: Session | str | None = None,
    db: str | os.PathLike[str] = "lossless.db",
    mode: Literal["text", "regex"] = "text",
    limit: int = 20,
) -> list[GrepHit]:
    """Search one session (a :class:`Session` or an id) or, with ``session=None``, all of ``db``.

    Text mode takes a question as it is asked: every part or summary holding any of
    its words is a candidate, ranked by bm25 over stemmed words ("rotated" finds
    "rotates"), with English stopwords ("what", "the") left out unless the query has
    nothing else. ``+word`` requires a word and ``"exact words"`` requires a phrase
    (an unbalanced ``"`` raises :class:`~lossless.errors.InvalidInputError`, as does
    a query without a word). Summaries are ranked beside messages, at most a quarter
    of the page unless too few messages match. When more than 2,000 parts match, the
    2,000 newest are ranked (require a word to narrow, or use ``mode="regex"`` to scan
    all). :func:`group_by_summary` groups the hits by the summary that covers them.
    """
    _at_least_one("limit", limit)
    store, session_id = _resolve("session", session, db)
    return [GrepHit(**row) for row in store.grep(query, session_id, mode, limit)]


def group_by_summary(hits: list[GrepHit]) -> dict[str | None, list[GrepHit]]:
    """Hits by the live summary that covers them (``None``: still in the view), in
    the order of each group's best hit, each group in rank order."""
    groups: dict[str | None, list[GrepHit]] = {}
    for hit in hits:
        groups.setdefault(hit.covering_summary_id, []).append(hit)
    return groups


def describe(target: Session | str, *, db: str | os.PathLike[str] = "lossless.db") -> list[DagNode]:
    """The DAG of a session (a :class:`Session` or session id) or of one summary (``sum_…`` id)."""
    if isinstance(target, str) and target.startswith("sum_"):
        rows = _store_of(db).describe(None, target)
    else:
        store, session_id = _resolve("target", target, db)
        rows = store.describe(session_id, None)
    return [_node(row) for row in rows]


def expand(
    summary_id: str,
    *,
    max_tokens: int = 20_000,
    db: str | os.PathLike[str] | Session = "lossless.db",
) -> Expansion:
    """A summary's source messages (through condensed summaries), oldest first, in a budget."""
    _at_least_one("max_tokens", max_tokens)
    row = _store_of(db).expand(summary_id, max_tokens)
    return Expansion(
        summary_id=row["summary_id"],
        messages=[ExpandedMessage(**message) for message in row["messages"]],
        tokens=row["tokens"],
        total_messages=row["total_messages"],
        omitted_messages=row["omitted_messages"],
        note=row["note"],
    )


def _node(row: dict[str, Any]) -> DagNode:
    fields = DagNode.__dataclass_fields__
    return DagNode(**{key: row[key] for key in fields})


RECALL_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "lossless_grep",
            "description": "Search this conversation's full stored history, including parts "
            "that were summarised away. Returns snippets and the summary covering each hit.",
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
            "description": "List the summaries of this conversation: what each covers, "
            "its level and size.",
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
            "description": "Read the original messages behind a summary, oldest first, "
            "within a token budget.",
            "parameters": {
                "type": "object",
                "properties": {
                    "summary_id": {"type": "string"},
                    "max_tokens": {"type": "integer", "minimum": 1, "default": 4000},
                },
                "required": ["summary_id"],
            },
        },
    },
]

RECALL_TOOL_NAMES = frozenset(tool["function"]["name"] for tool in RECALL_TOOLS)


def run_recall_tool(session: Session, name: str, arguments: str) -> str:
    """Answer one recall tool call; raises :class:`LosslessError` for bad arguments."""
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
    if name == "lossless_grep":
        hits = grep(
            str(args.get("query", "")),
            session=session,
            mode=args.get("mode", "text"),
            limit=_integer(args, "limit", 10),
        )
        return json.dumps([_hit_dict(hit) for hit in hits])
    if name == "lossless_describe":
        target = args.get("summary_id")
        rows = session.store.describe(None if target else session.id, target)
        return json.dumps(
            [
                {
                    k: row[k]
                    for k in (
                        "id",
                        "kind",
                        "level",
                        "depth",
                        "span_start_seq",
                        "span_end_seq",
                        "message_count",
                        "token_count",
                        "live",
                    )
                }
                for row in rows
            ]
        )
    if name == "lossless_expand":
        expansion = session.store.expand(
            str(args.get("summary_id", "")), _integer(args, "max_tokens", 4000)
        )
        return json.dumps(expansion)
    raise InvalidInputError(f"name: unknown recall tool {name!r}")


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


async def answer_recall_turn(session: Session, on_part: PartCallback | None) -> TurnResult:
    """Model turns with the recall tools, answering the model's recall calls, until it
    replies without calling one (at most ``config.recall_max_rounds`` rounds)."""
    for _ in range(session.config.recall_max_rounds):
        result = await session._model_turn(on_part, RECALL_TOOLS)
        recall_calls = [call for call in result.tool_calls if call.name in RECALL_TOOL_NAMES]
        if not recall_calls or len(recall_calls) != len(result.tool_calls):
            return result
        for call in recall_calls:
            await _answer(session, call)
    return await session._model_turn(on_part, None)


async def _answer(session: Session, call: ToolPart) -> None:
    arguments = call.input if isinstance(call.input, str) else json.dumps(call.input)
    try:
        output = run_recall_tool(session, call.name, arguments)
    except LosslessError as err:
        await session.update_tool(call.call_id, status="error", error=str(err))
        return
    await session.update_tool(call.call_id, status="completed", output=output)
