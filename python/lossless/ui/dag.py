"""The summary DAG of a session as a tree: its live summaries on top, each opened
one level at a time down to the original messages."""

from __future__ import annotations

from typing import Any

from lossless.errors import NotFoundError
from lossless.store import MessageRecord, Store
from lossless.ui._render import cut, summary_json

__all__ = ["MAX_CHILDREN", "node", "roots"]

#: Children a node answers with at once: a condensed summary merges a bounded
#: number of summaries, a leaf covers at most ``leaf_chunk_tokens`` of messages.
MAX_CHILDREN = 400
_SNIPPET_CHARS = 240


def roots(store: Store, session_id: str) -> dict[str, Any]:
    """The live summaries of the session, oldest span first."""
    live = sorted(store.native.live_summaries(session_id), key=lambda row: row.span_start_seq)
    return {
        "session_id": session_id,
        "roots": [summary_json(store.summary_node(row.id), limit=_SNIPPET_CHARS) for row in live],
    }


def node(store: Store, session_id: str, summary_id: str) -> dict[str, Any]:
    """One summary whole, with its children: the summaries it condensed, or the
    messages it summarised (each as a line: seq, role, the start of its text)."""
    found = store.summary_node(summary_id)
    shown = summary_json(found, limit=None)
    if found.source_kind == "summary":
        children = []
        for source in found.sources[:MAX_CHILDREN]:
            try:
                children.append(summary_json(store.summary_node(source), limit=_SNIPPET_CHARS))
            except NotFoundError:
                continue
        shown["children"] = sorted(children, key=lambda child: child["first_seq"])
    else:
        wanted = set(found.sources)
        records = store.history_range(session_id, found.span_start_seq, found.span_end_seq)
        shown["messages"] = [_line(record) for record in records if record.id in wanted][
            :MAX_CHILDREN
        ]
    shown["children_cut"] = max(0, len(found.sources) - MAX_CHILDREN)
    return shown


def _line(record: MessageRecord) -> dict[str, Any]:
    """A message as one line of the tree."""
    said = []
    for part in record.parts:
        if part.get("kind") == "text" and part.get("text"):
            said.append(part["text"])
        elif part.get("kind") == "tool":
            said.append(f"{part.get('name')}({part.get('input') or ''})")
        elif part.get("kind") == "media":
            said.append(f"[{part.get('media_kind')} {part.get('media_id')}]")
    snippet, _ = cut(" ".join(said), _SNIPPET_CHARS)
    return {
        "id": record.id,
        "seq": record.seq,
        "role": record.role,
        "tokens": record.token_count,
        "snippet": snippet,
    }
