"""A session's messages a page at a time, each marked with where it stands now:
in the current request, left out of it, written since, compacted (and under which
summary), with its pruned tool outputs.

A page reads its own rows (``Store.history_range``), the view's items and the live
summaries, never the whole history: the newest page of a session of 100,000
messages costs what a page of a short one does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lossless.store import Store
from lossless.ui._render import message_json
from lossless.ui.requests import RequestEvent, latest_request

__all__ = ["DEFAULT_PAGE", "MAX_PAGE", "Marks", "message", "page"]

DEFAULT_PAGE = 50
MAX_PAGE = 500


@dataclass(frozen=True, slots=True)
class Marks:
    """What the page's marks are read from: the view, the live summaries, and the
    newest request."""

    in_view: frozenset[int]
    live: tuple[tuple[int, int, str], ...]
    request: RequestEvent | None
    sent: frozenset[int]

    @classmethod
    def read(cls, store: Store, session_id: str) -> Marks:
        native = store.native
        in_view = frozenset(
            item.seq for item in native.view_items(session_id) if item.kind == "message"
        )
        live = tuple(
            sorted(
                (row.span_start_seq, row.span_end_seq, row.id)
                for row in native.live_summaries(session_id)
            )
        )
        request = latest_request(store, session_id)
        sent = frozenset(request.message_seqs()) if request else frozenset()
        return cls(in_view, live, request, sent)

    def of(self, seq: int) -> tuple[str, str | None]:
        """``(state, summary id)`` of the message ``seq``: ``request`` (in the newest
        request), ``left_out`` (in the view, left out of that request to fit),
        ``new`` (written after it), ``view`` (in the view; no request yet) or
        ``compacted`` (under the live summary named)."""
        if seq in self.in_view:
            if self.request is None:
                return "view", None
            if seq > self.request.newest_seq:
                return "new", None
            return ("request" if seq in self.sent else "left_out"), None
        for first, last, summary_id in self.live:
            if first <= seq <= last:
                return "compacted", summary_id
        return "compacted", None


def page(
    store: Store,
    session_id: str,
    *,
    before: int | None = None,
    after: int | None = None,
    around: int | None = None,
    limit: int = DEFAULT_PAGE,
) -> dict[str, Any]:
    """A page of ``limit`` messages: the newest (default), those before ``before``,
    after ``after``, or around ``around``; oldest first, each marked."""
    limit = max(1, min(limit, MAX_PAGE))
    newest = store.newest_seq(session_id)
    if around is not None:
        low = max(1, around - limit // 2)
        high = low + limit - 1
    elif after is not None:
        low, high = after + 1, after + limit
    else:
        high = newest if before is None else before - 1
        low = high - limit + 1
    low, high = max(1, low), min(newest, high)
    records = store.history_range(session_id, low, high) if low <= high else []
    marks = Marks.read(store, session_id)
    messages = []
    for record in records:
        shown = message_json(record)
        shown["state"], shown["summary_id"] = marks.of(record.seq)
        messages.append(shown)
    request = marks.request
    return {
        "session_id": session_id,
        "newest_seq": newest,
        "first_seq": low if records else None,
        "last_seq": high if records else None,
        "has_older": bool(records) and low > 1,
        "has_newer": bool(records) and high < newest,
        "request": None
        if request is None
        else {
            "event_seq": request.seq,
            "seq": request.newest_seq,
            "tokens": request.payload.get("tokens"),
            "budget": request.payload.get("budget"),
        },
        "messages": messages,
    }


def message(store: Store, session_id: str, message_id: str) -> dict[str, Any]:
    """One message whole (no text cut), marked as it stands in ``session_id`` (a
    fork shows its parent's messages as its own)."""
    record = store.native.get_message(message_id)
    shown = message_json(record, limit=None)
    shown["state"], shown["summary_id"] = Marks.read(store, session_id).of(record.seq)
    return shown
