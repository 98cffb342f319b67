"""A request as it was sent, put together again from its ``request_built`` event
and the session's stored rows (which never change), and the requests of a session
found by turn.

The event names rows instead of copying them (see :mod:`lossless.request_log`):
summaries by id, messages by runs of seqs, the tool outputs that went out pruned;
the texts no row holds (the arena's rendered part of the system message, its
``<context>`` block, the tool definitions) are written in the first request that
sends them and named by that event's seq afterwards.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lossless.errors import InvalidInputError, NotFoundError
from lossless.events import EventName
from lossless.request_log import PAYLOAD_VERSION
from lossless.store import DagRow, EventRow, Store
from lossless.ui._render import message_json, summary_json

__all__ = [
    "RequestEvent",
    "latest_request",
    "marker_line",
    "rebuild_request",
    "request_answered_by",
    "request_event",
]

_NAME = EventName.REQUEST_BUILT.value


@dataclass(frozen=True, slots=True)
class RequestEvent:
    """One ``request_built`` event: its seq on the tape, when, and its payload."""

    seq: int
    created_at: int
    payload: dict[str, Any]

    @classmethod
    def of(cls, row: EventRow) -> RequestEvent:
        payload = json.loads(row.payload_json)
        if not isinstance(payload, dict) or payload.get("v", 0) > PAYLOAD_VERSION:
            raise InvalidInputError(
                f"event {row.seq}: a request described by a newer lossless (version "
                f"{payload.get('v') if isinstance(payload, dict) else '?'}); upgrade to read it"
            )
        return cls(row.seq, row.created_at, payload)

    @property
    def newest_seq(self) -> int:
        """The newest message of the session when the request was built."""
        return int(self.payload.get("seq", 0))

    def message_seqs(self) -> set[int]:
        """The seqs of the messages the request held."""
        seqs: set[int] = set()
        for item in self.payload.get("items", ()):
            if item and item[0] == "m":
                seqs.update(range(item[1], item[2] + 1))
        return seqs

    def summary_ids(self) -> list[str]:
        return [item[1] for item in self.payload.get("items", ()) if item and item[0] == "s"]


def request_event(store: Store, session_id: str, seq: int) -> RequestEvent:
    """The request event at ``seq`` of the session's tape; :class:`NotFoundError`
    when the tape holds no request there."""
    rows = store.events_page(session_id, after=seq - 1, before=seq + 1, limit=1)
    if not rows or rows[0].name != _NAME:
        raise NotFoundError(f"session {session_id} has no request at event {seq}")
    return RequestEvent.of(rows[0])


def latest_request(store: Store, session_id: str) -> RequestEvent | None:
    """The newest request the session built, if any."""
    rows = store.events_page(session_id, name=_NAME, limit=1, newest_first=True)
    return RequestEvent.of(rows[0]) if rows else None


def _neighbour(store: Store, session_id: str, seq: int, *, older: bool) -> int | None:
    """The seq of the request event right before (``older``) or after ``seq``."""
    if older:
        rows = store.events_page(session_id, before=seq, name=_NAME, limit=1, newest_first=True)
    else:
        rows = store.events_page(session_id, after=seq, name=_NAME, limit=1)
    return rows[0].seq if rows else None


def request_answered_by(store: Store, session_id: str, message_seq: int) -> RequestEvent | None:
    """The request a message at ``message_seq`` answered: the last one built before
    the message was written (its newest message older than it); for a message
    older than every request, the first request that held it.

    Requests are found by bisecting the tape: their newest seqs never decrease
    along it, so a session of 100,000 messages takes some twenty reads of one row."""
    low = 1
    newest = store.events_page(session_id, limit=1, newest_first=True)
    if not newest:
        return None
    high = newest[0].seq + 1
    # The first request event at or after the tape's seq `low` whose newest message
    # is at least `message_seq`: bisect on the tape's seqs.
    while low < high:
        middle = (low + high) // 2
        rows = store.events_page(session_id, after=middle - 1, name=_NAME, limit=1)
        if not rows:
            high = middle
            continue
        found = RequestEvent.of(rows[0])
        if found.newest_seq >= message_seq:
            high = middle
        else:
            low = found.seq + 1
    before = store.events_page(session_id, before=low, name=_NAME, limit=1, newest_first=True)
    if before:
        return RequestEvent.of(before[0])
    after = store.events_page(session_id, after=low - 1, name=_NAME, limit=1)
    return RequestEvent.of(after[0]) if after else None


def marker_line(omitted: int) -> str:
    """The line a request carries where messages were left out, as the core writes
    it (``marker_text`` in rust/core/src/context/request.rs), without the footer
    that names their file ids."""
    if omitted == 0:
        return "[the conversation begins with the message below]"
    return (
        f"[{omitted} earlier messages are left out of this context to fit the window; "
        "they are stored in full: search them with lossless_grep]"
    )


def rebuild_request(
    store: Store, session_id: str, event: RequestEvent, *, limit: int | None = None
) -> dict[str, Any]:
    """The request of ``event`` in order, as the page draws it: each item with what
    it held (texts cut to ``limit`` characters when given), the tokens of each part
    against the budget, and the requests before and after it."""
    payload = event.payload
    info = store.native.get_session(session_id)
    texts = _Texts(store, session_id, payload.get("texts") or {})
    summaries = _summaries(store, event.summary_ids())
    pruned = set(payload.get("pruned") or ())
    runs = [(item[1], item[2]) for item in payload.get("items", ()) if item and item[0] == "m"]
    messages = _messages(store, session_id, runs)
    items: list[dict[str, Any]] = []
    for item in payload.get("items", ()):
        kind = item[0]
        if kind == "tools":
            items.append({"kind": "tools", "text": texts.get("tools")})
        elif kind == "system":
            items.append(
                {
                    "kind": "system",
                    "prompt": info.system_prompt or "",
                    "arena": texts.get("stable"),
                }
            )
        elif kind == "s":
            node = summaries.get(item[1])
            if node is None:
                items.append({"kind": "summary", "id": item[1], "missing": True})
            else:
                shown = summary_json(node, limit=limit)
                items.append({**shown, "kind": "summary", "summary_kind": shown["kind"]})
        elif kind == "marker":
            items.append({"kind": "marker", "omitted": item[1], "text": marker_line(item[1])})
        elif kind == "m":
            run = [
                message_json(record, limit=limit, pruned=pruned)
                for seq in range(item[1], item[2] + 1)
                if (record := messages.get(seq)) is not None
            ]
            items.append({"kind": "messages", "first": item[1], "last": item[2], "messages": run})
        elif kind == "block":
            items.append({"kind": "block", "text": texts.get("block")})
        elif kind == "earlier":
            items.append({"kind": "earlier", "text": texts.resolve(item[1], "block")})
    sizes = {
        name: payload.get(name)
        for name in (
            "format",
            "profile",
            "tokens",
            "budget",
            "usable",
            "soft",
            "window",
            "view",
            "stable_prefix",
            "omitted",
            "parts",
            "ledger",
            "zones",
            "arena",
            "pruned",
        )
    }
    return {
        "session_id": session_id,
        "event_seq": event.seq,
        "created_at": event.created_at,
        "seq": event.newest_seq,
        **sizes,
        "items": items,
        "previous": _neighbour(store, session_id, event.seq, older=True),
        "next": _neighbour(store, session_id, event.seq, older=False),
    }


class _Texts:
    """The texts of one request: written in its own event, or named by the seq of
    the event that carried them (read once each)."""

    def __init__(self, store: Store, session_id: str, own: dict[str, Any]) -> None:
        self._store = store
        self._session_id = session_id
        self._own = own
        self._read: dict[int, dict[str, Any]] = {}

    def get(self, kind: str) -> str | None:
        ref = self._own.get(kind)
        return self.resolve(ref, kind) if ref is not None else None

    def resolve(self, ref: dict[str, Any], kind: str) -> str | None:
        if "text" in ref:
            return str(ref["text"])
        seq = ref.get("ref")
        if not isinstance(seq, int):
            return None
        if seq not in self._read:
            try:
                carrier = request_event(self._store, self._session_id, seq)
                self._read[seq] = carrier.payload.get("texts") or {}
            except NotFoundError:
                self._read[seq] = {}
        carried = self._read[seq].get(kind) or {}
        text = carried.get("text")
        return text if isinstance(text, str) else None


def _summaries(store: Store, ids: list[str]) -> dict[str, DagRow]:
    """The summaries named, each read alone (a request holds a few; the session's
    whole DAG can hold thousands)."""
    found: dict[str, DagRow] = {}
    for summary_id in ids:
        try:
            found[summary_id] = store.summary_node(summary_id)
        except NotFoundError:
            continue
    return found


def _messages(store: Store, session_id: str, runs: list[tuple[int, int]]) -> dict[int, Any]:
    """The messages of ``runs`` by seq, runs that touch read together."""
    merged: list[list[int]] = []
    for first, last in sorted(runs):
        if merged and first <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    records: dict[int, Any] = {}
    for first, last in merged:
        for record in store.history_range(session_id, first, last):
            records[record.seq] = record
    return records
