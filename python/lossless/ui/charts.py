"""A session's turns as series for the chart: each request's tokens against the
budget and thresholds, the share it repeated from the one before, and the
compaction rounds between them."""

from __future__ import annotations

import json
from typing import Any

from lossless.events import EventName
from lossless.store import EventRow, Store

__all__ = ["MAX_POINTS", "series"]

#: Requests one answer holds (the newest, or those before ``before``): a chart a
#: few hundred pixels wide shows no more, and older ones page in.
MAX_POINTS = 2_000

#: What the chart reads of a ``request_built`` payload.
REQUEST_FIELDS = (
    "seq",
    "tokens",
    "budget",
    "usable",
    "soft",
    "view",
    "stable_prefix",
    "omitted",
    "parts",
)
#: What it reads of a ``compaction_completed`` payload.
COMPACTION_FIELDS = (
    "level",
    "levels",
    "tokens_before",
    "tokens_after",
    "invalidated_tokens",
    "summary_ids",
    "pruned_parts",
    "status",
)


def series(
    store: Store, session_id: str, *, before: int | None = None, limit: int = MAX_POINTS
) -> dict[str, Any]:
    """The requests (at most ``limit``, the newest before the event ``before``) and
    the compactions among them, oldest first."""
    limit = max(1, min(limit, MAX_POINTS))
    rows = store.events_page(
        session_id,
        before=before,
        name=EventName.REQUEST_BUILT.value,
        limit=limit,
        newest_first=True,
    )
    rows.reverse()
    requests = [_point(row, REQUEST_FIELDS) for row in rows]
    compactions = []
    if rows:
        # The rounds since the first request shown (and before the next page).
        after = rows[0].seq if before is not None or len(rows) == limit else None
        compactions = [
            _point(row, COMPACTION_FIELDS)
            for row in store.events_page(
                session_id,
                after=after,
                before=before,
                name=EventName.COMPACTION_COMPLETED.value,
                limit=MAX_POINTS,
            )
        ]
    return {
        "session_id": session_id,
        "requests": requests,
        "compactions": compactions,
        "has_older": len(rows) == limit,
    }


def _point(row: EventRow, fields: tuple[str, ...]) -> dict[str, Any]:
    """One event as a point of the chart: its seq, its time and ``fields`` of its payload."""
    payload = json.loads(row.payload_json)
    return {
        "event_seq": row.seq,
        "created_at": row.created_at,
        **{name: payload.get(name) for name in fields},
    }
