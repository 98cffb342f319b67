"""What changed in a session since the page last looked: the events written after
a seq of its tape. The page asks every second or so; each answer reads the tape's
new rows only."""

from __future__ import annotations

import json
from typing import Any

from lossless.store import Store

__all__ = ["MAX_EVENTS", "since"]

MAX_EVENTS = 200
# What of an event's payload the page uses to decide what to read again.
_KEPT = ("message_id", "role", "tokens", "budget", "summary_ids", "level")


def since(store: Store, session_id: str, event_seq: int) -> dict[str, Any]:
    """The events after ``event_seq`` (at most :data:`MAX_EVENTS`, the oldest
    first), with the session's newest message seq."""
    rows = store.events_page(session_id, after=event_seq, limit=MAX_EVENTS)
    events = []
    for row in rows:
        payload = json.loads(row.payload_json)
        if not isinstance(payload, dict):
            payload = {}
        kept = {name: payload[name] for name in _KEPT if name in payload}
        events.append({"seq": row.seq, "name": row.name, "created_at": row.created_at, **kept})
    return {
        "session_id": session_id,
        "newest_seq": store.newest_seq(session_id),
        "events": events,
        "last_event": rows[-1].seq if rows else event_seq,
        "more": len(rows) == MAX_EVENTS,
    }
