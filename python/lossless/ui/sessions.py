"""The sessions of a database with their lineage: what each forked from
(``session_forks``), the sub-sessions an operator ran under it
(``session_parents``), its key, its size."""

from __future__ import annotations

import json
from typing import Any

from lossless import _native
from lossless.events import EventName
from lossless.store import SessionRow, Store
from lossless.ui.requests import latest_request

__all__ = ["list_sessions", "session_detail"]


def list_sessions(store: Store) -> list[dict[str, Any]]:
    """Every session, newest first, with its counts, view tokens and lineage."""
    native = store.native
    rows = sorted(store.sessions(), key=lambda row: (row.created_at, row.id), reverse=True)
    parents: dict[str, str] = {}
    for row in rows:
        for child in _native.child_sessions(native, row.id):
            parents[child.id] = row.id
    return [_row_json(store, row, parents.get(row.id)) for row in rows]


def _row_json(store: Store, row: SessionRow, operator: str | None) -> dict[str, Any]:
    native = store.native
    fork = native.fork_of(row.id)
    return {
        "id": row.id,
        "model": row.model,
        "created_at": row.created_at,
        "messages": row.messages,
        "summaries": row.summaries,
        "view_tokens": store.view_stats(row.id).tokens,
        "key": native.key_of(row.id),
        "fork_of": None if fork is None else {"id": fork.parent_id, "seq": fork.fork_seq},
        "parent": operator,
    }


def session_detail(store: Store, session_id: str) -> dict[str, Any]:
    """One session: its row, system prompt, view, budget, newest request and
    event, and its lineage above and below."""
    native = store.native
    info = native.get_session(session_id)
    view = store.view_stats(session_id)
    request = latest_request(store, session_id)
    newest_event = store.events_page(session_id, limit=1, newest_first=True)
    ancestors = []
    fork = native.fork_of(session_id)
    while fork is not None:
        ancestors.append({"id": fork.parent_id, "seq": fork.fork_seq})
        fork = native.fork_of(fork.parent_id)
    budget = _budget(store, session_id, request.payload if request else None)
    return {
        "id": info.id,
        "model": info.model,
        "created_at": info.created_at,
        "system_prompt": info.system_prompt,
        "key": native.key_of(session_id),
        "newest_seq": store.newest_seq(session_id),
        "newest_event": newest_event[0].seq if newest_event else 0,
        "view": {
            "items": view.items,
            "messages": view.message_items,
            "summaries": view.summary_items,
            "tokens": view.tokens,
            "summary_tokens": view.summary_tokens,
        },
        "budget": budget,
        "request": None
        if request is None
        else {"event_seq": request.seq, "seq": request.newest_seq, **_sizes(request.payload)},
        "fork_of": ancestors,
        "forks": [
            {"id": row.session_id, "seq": row.fork_seq, "created_at": row.created_at}
            for row in native.forks_of(session_id)
        ],
        "children": [
            {"id": row.id, "model": row.model, "messages": row.messages}
            for row in _native.child_sessions(native, session_id)
        ],
    }


def _sizes(payload: dict[str, Any]) -> dict[str, Any]:
    return {name: payload.get(name) for name in ("tokens", "budget", "usable", "soft", "view")}


def _budget(store: Store, session_id: str, payload: dict[str, Any] | None) -> dict[str, Any]:
    """The session's budget: as its newest request had it, else as it announced it
    when it was created or loaded (``usable``), else unknown."""
    if payload is not None:
        return {"source": "request", **_sizes(payload), "window": payload.get("window")}
    for name in (EventName.SESSION_LOADED, EventName.SESSION_CREATED):
        rows = store.events_page(session_id, name=name.value, limit=1, newest_first=True)
        if rows:
            announced = json.loads(rows[0].payload_json)
            if isinstance(announced, dict) and isinstance(announced.get("usable"), int):
                return {"source": name.value, "usable": announced["usable"]}
    return {"source": None}
