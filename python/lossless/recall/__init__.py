"""Recall: finding and reading back what compaction moved out of the view.

Four operations, each a Python function, an agent tool the session answers
itself (``send(..., tools="recall")``, see :mod:`lossless.recall.tools`), and a
CLI command:

- :func:`grep`: full-text (bm25) or regex search over every stored part and summary;
- :func:`describe`: the summary DAG, what each summary covers;
- :func:`expand`: a summary back to a window of its source messages, within a
  token budget: the oldest first, or centred on a message or on a query, with
  cursors to page older or newer;
- :func:`read`: one stored message whole, a page at a time;
  :func:`read_media`: an image or a document whole, its bytes included.

Each reads the database named by ``db=``: the path of its file, an open
:class:`~lossless.Store` or a :class:`~lossless.session.Session`. A path is opened
read-only, so reading never creates, migrates or writes a file; a missing one
raises :class:`~lossless.errors.DatabaseNotFoundError`. ``session=`` (an id or a
Session) restricts grep and describe to one session.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from functools import partial
from typing import Any, Literal, Protocol, TypeVar

from lossless import _native
from lossless.errors import InvalidInputError, NotFoundError
from lossless.parts import MediaPart, part_from_wire
from lossless.recall._target import (
    Database,
    SessionRef,
    as_session,
    is_id,
    open_target,
    tracing_of,
)

__all__ = [
    "RECALL_TOOLS",
    "DagNode",
    "Database",
    "ExpandedMessage",
    "Expansion",
    "GrepHit",
    "MessagePage",
    "SessionRef",
    "answer_recall_turn",
    "describe",
    "expand",
    "grep",
    "group_by_summary",
    "read",
    "read_media",
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
    session_id: str
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
    """One source message of an expansion, as the transcript shows it."""

    id: str
    seq: int
    role: str
    text: str
    tokens: int


@dataclass(frozen=True, slots=True)
class Expansion:
    """A window of a summary's source messages that fits the budget, and what lies
    on each side of it.

    ``before_cursor`` / ``after_cursor`` are message ids to pass back as
    ``before=`` / ``after=`` for the page of older / newer messages; ``None`` when
    there are none on that side. ``focus_id`` is the message the window is centred
    on (``around=``, or the best match of ``query=``).
    """

    summary_id: str
    session_id: str
    messages: list[ExpandedMessage]
    tokens: int
    total_messages: int
    omitted_messages: int
    messages_before: int
    messages_after: int
    focus_id: str | None
    before_cursor: str | None
    after_cursor: str | None
    note: str


@dataclass(frozen=True, slots=True)
class MessagePage:
    """A page of one stored message written out whole: its text, every tool
    call's name, id, status, input, output and error, every file reference.

    ``cursor`` and ``next_cursor`` count characters of the whole text; pass
    ``next_cursor`` back as ``cursor=`` for the next page (``None`` on the last).
    """

    message_id: str
    session_id: str
    seq: int
    role: str
    status: str
    parts: int
    text: str
    tokens: int
    cursor: int
    next_cursor: int | None
    total_chars: int


class _Row(Protocol):
    """A result read by name: a native row or a dict."""

    def __getitem__(self, key: str, /) -> Any: ...


_Result = TypeVar("_Result", GrepHit, DagNode, ExpandedMessage, Expansion, MessagePage)


def grep(
    query: str,
    *,
    db: Database | None = None,
    session: SessionRef | None = None,
    mode: Literal["text", "regex"] = "text",
    limit: int = 20,
    lineage: bool = False,
) -> list[GrepHit]:
    """Search every session of ``db``, or only ``session`` (an id or a Session).

    ``grep("words", db="agent.db")`` searches the whole file;
    ``grep("words", session=session)`` one session (its own database). A fork's
    history holds what it shares with its parent: that is searched too, and the
    parent's later messages are not. With ``lineage=True`` the whole family is
    searched: the session, the sessions it forked from, and every fork of any of
    them (each hit names its session).

    Text mode takes a question as it is asked: every part or summary holding any of
    its words is a candidate, ranked by bm25 over stemmed words ("rotated" finds
    "rotates", "Prüfung" finds "Prüfungen": each message is stemmed in its own
    language), with the question's stopwords ("what", "the") left out unless the
    query has nothing else. ``+word`` requires a word and ``"exact words"`` requires a phrase
    (an unbalanced ``"`` raises :class:`~lossless.errors.InvalidInputError`, as does
    a query without a word). Summaries are ranked beside messages, at most a quarter
    of the page unless too few messages match. When more than 2,000 parts match, the
    2,000 newest are ranked (require a word to narrow, or use ``mode="regex"`` to scan
    all). :func:`group_by_summary` groups the hits by the summary that covers them.
    """
    tracing = tracing_of(session, db)
    if tracing is None:
        return _grep(query, db, session, mode, limit, lineage)
    run = partial(_grep, query, db, session, mode, limit, lineage)
    return tracing.recall("grep", run, query=query, count=len)


def _grep(
    query: str,
    db: Database | None,
    session: SessionRef | None,
    mode: Literal["text", "regex"],
    limit: int,
    lineage: bool,
) -> list[GrepHit]:
    store, session_id = open_target(db, session)
    if not lineage or session_id is None:
        return [_hit(row) for row in store.grep(query, session_id, mode, limit)]
    rows: dict[tuple[str, str | None], Any] = {}
    for member in _family(store, session_id):
        for row in store.grep(query, member, mode, limit):
            # A fork's history repeats its parent's hits up to the fork point.
            rows.setdefault((row.owner_id, row.part_id), row)
    ranked = sorted(rows.values(), key=lambda row: row.rank)
    return [_hit(row) for row in ranked[:limit]]


def _family(store: _native.Store, session_id: str) -> list[str]:
    """``session_id``'s root (what it forked from, up the chain) and every fork of
    the root, depth first."""
    root = session_id
    while (fork := store.fork_of(root)) is not None:
        root = fork.parent_id
    family, pending = [], [root]
    while pending:
        member = pending.pop()
        family.append(member)
        pending.extend(child.session_id for child in store.forks_of(member))
    return family


def group_by_summary(hits: list[GrepHit]) -> dict[str | None, list[GrepHit]]:
    """Hits by the live summary that covers them (``None``: still in the view), in
    the order of each group's best hit, each group in rank order."""
    groups: dict[str | None, list[GrepHit]] = {}
    for hit in hits:
        groups.setdefault(hit.covering_summary_id, []).append(hit)
    return groups


def describe(
    target: str | SessionRef | None = None,
    *,
    db: Database | None = None,
    session: SessionRef | None = None,
) -> list[DagNode]:
    """The summary DAG: of one summary (``target`` a ``sum_…`` id), of one session
    (``target`` or ``session`` a session id or Session), or of every session of ``db``.
    """
    tracing = tracing_of(target, session, db)
    if tracing is None:
        return _describe(target, db, session)
    return tracing.recall("describe", partial(_describe, target, db, session), count=len)


def _describe(target: object, db: Database | None, session: SessionRef | None) -> list[DagNode]:
    summary_id, about = _describe_target(target, session)
    store, session_id = open_target(db, about)
    if summary_id is not None:
        rows = store.describe(None, summary_id)
    elif session_id is not None:
        rows = store.describe(session_id, None)
    else:
        rows = [row for listed in store.list_sessions() for row in store.describe(listed.id, None)]
    return [_node(row) for row in rows]


def _describe_target(target: object, session: object) -> tuple[str | None, object]:
    """The summary id and the session ``describe`` was asked about."""
    if target is None:
        return None, session
    if isinstance(target, str) and is_id(target, "sum"):
        return target, session
    if as_session(target) is not None or (isinstance(target, str) and is_id(target, "ses")):
        if session is not None:
            raise InvalidInputError("target: a session is given twice (target and session=)")
        return None, target
    if not isinstance(target, str):
        raise InvalidInputError(
            f"target: expected a summary id, a session id or a Session, got {type(target).__name__}"
        )
    raise InvalidInputError(
        f"target: {target!r} is not a summary id (sum_…), a session id or a Session; "
        "a database goes in db="
    )


def expand(
    summary_id: str,
    *,
    db: Database | None = None,
    max_tokens: int = 20_000,
    around: str | None = None,
    query: str | None = None,
    before: str | None = None,
    after: str | None = None,
) -> Expansion:
    """A window of the source messages of ``summary_id`` (through condensed
    summaries) within ``max_tokens``, with what lies before and after it.

    Without a focus the window starts at the oldest source message. ``around``
    (a source message id) centres it on that message; ``query`` (words) on the
    source message that matches them best (bm25, any of the words). ``before`` /
    ``after`` (a cursor of an earlier expansion) give the page of older / newer
    messages. At most one of the four.
    """
    run = partial(_expand, summary_id, db, max_tokens, around, query, before, after)
    tracing = tracing_of(db)
    if tracing is None:
        return run()
    return tracing.recall("expand", run, query=query, count=_messages_of)


def _expand(
    summary_id: str,
    db: Database | None,
    max_tokens: int,
    around: str | None,
    query: str | None,
    before: str | None,
    after: str | None,
) -> Expansion:
    store, _ = open_target(db)
    row = store.expand(summary_id, max_tokens, around, query, before, after)
    return _expansion(row)


def _messages_of(expansion: Expansion) -> int:
    return len(expansion.messages)


def read(
    message_id: str,
    *,
    db: Database | None = None,
    max_tokens: int = 4_000,
    cursor: int | None = None,
) -> MessagePage:
    """One stored message written out whole (pruned tool outputs included), from
    character ``cursor`` (0 when ``None``), as much of it as ``max_tokens`` holds."""
    tracing = tracing_of(db)
    if tracing is None:
        return _read(message_id, db, max_tokens, cursor)
    return tracing.recall("read", partial(_read, message_id, db, max_tokens, cursor))


def _read(message_id: str, db: Database | None, max_tokens: int, cursor: int | None) -> MessagePage:
    store, _ = open_target(db)
    return _public(MessagePage, store.read_message(message_id, max_tokens, cursor))


def read_media(
    media_id: str, *, db: Database | None = None, session: SessionRef | None = None
) -> MediaPart:
    """The image or document stored as ``media_id`` (``image_…``, ``document_…``),
    whole: what it is (type, size, pixels or pages, caption) and its exact bytes as
    ``data`` (``None`` for an image known only by its URL), ready to hand to a
    multimodal model as a part. With ``session``, only an image of that session is
    found. An unknown id raises :class:`~lossless.errors.NotFoundError`."""
    tracing = tracing_of(session, db)
    if tracing is None:
        return _read_media(media_id, db, session)
    return tracing.recall("read_media", partial(_read_media, media_id, db, session))


def _read_media(media_id: str, db: Database | None, session: SessionRef | None) -> MediaPart:
    store, session_id = open_target(db, session)
    found = store.media_part(media_id, session_id)
    if found is None:
        raise NotFoundError(f"no image or document with id {media_id!r}")
    _, wire = found
    part = part_from_wire(wire)
    assert isinstance(part, MediaPart)
    stored = store.read_media(media_id)
    return replace(part, data=None if stored is None else stored[1], call_id=None)


# The public results stay dataclasses (``dataclasses.asdict``, ``replace``, made by
# hand in tests); each is built in one step from the typed native row, reading the
# fields it declares by name (a row may hold more, such as a summary's time).
def _public(cls: type[_Result], row: _Row) -> _Result:
    return cls(**{field.name: row[field.name] for field in fields(cls)})


def _hit(row: _native.GrepRow) -> GrepHit:
    return _public(GrepHit, row)


def _expansion(row: _native.ExpansionRow) -> Expansion:
    messages = [_public(ExpandedMessage, message) for message in row.messages]
    return _public(Expansion, {**row, "messages": messages})


def _node(row: _native.DagRow) -> DagNode:
    return _public(DagNode, row)


from lossless.recall.tools import (  # noqa: E402  (the tools use the functions above)
    RECALL_TOOLS,
    answer_recall_turn,
    run_recall_tool,
)
