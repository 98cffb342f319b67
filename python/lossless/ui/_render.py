"""Stored messages and summaries as the JSON the viewer's page draws."""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import Any

from lossless.store import DagRow, MessageRecord

__all__ = ["MAX_TEXT_CHARS", "cut", "message_json", "part_json", "summary_json"]

#: Characters of one text a page carries; the rest is read with the message alone
#: (``/api/messages/{id}``). A tool's output can be megabytes: a page of fifty
#: messages stays small enough to draw at once.
MAX_TEXT_CHARS = 4_000


def cut(text: str | None, limit: int | None) -> tuple[str | None, int]:
    """``text`` cut to ``limit`` characters, and how many were left out."""
    if text is None or limit is None or len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def message_json(
    record: MessageRecord,
    *,
    limit: int | None = MAX_TEXT_CHARS,
    pruned: Container[str] | None = None,
) -> dict[str, Any]:
    """One stored message with its parts. ``pruned`` names the tool outputs to
    show pruned (as a request sent them); by default, those pruned now."""
    return {
        "id": record.id,
        "session_id": record.session_id,
        "seq": record.seq,
        "role": record.role,
        "status": record.status,
        "created_at": record.created_at,
        "model": record.model,
        "tokens": record.token_count,
        "input_tokens": record.input_tokens,
        "output_tokens": record.output_tokens,
        "cost": record.cost,
        "finish_reason": record.finish_reason,
        "parts": [part_json(part, limit=limit, pruned=pruned) for part in record.parts],
    }


def part_json(
    part: Mapping[str, Any], *, limit: int | None, pruned: Container[str] | None = None
) -> dict[str, Any]:
    """One part's wire dict as the page draws it: long texts cut, the media's
    bytes named by the URL that serves them, never inlined."""
    kind = part.get("kind")
    shown: dict[str, Any] = {"id": part.get("id"), "kind": kind}
    if kind == "tool":
        output, output_cut = cut(part.get("output"), limit)
        tool_input, input_cut = cut(part.get("input"), limit)
        was_pruned = bool(part.get("compacted")) if pruned is None else part.get("id") in pruned
        shown.update(
            name=part.get("name"),
            call_id=part.get("call_id"),
            input=tool_input,
            input_cut=input_cut,
            output=output,
            output_cut=output_cut,
            status=part.get("status"),
            error=part.get("error"),
            pruned=was_pruned,
        )
    elif kind == "media":
        shown.update(
            {
                name: part.get(name)
                for name in (
                    "media_kind",
                    "media_id",
                    "media_type",
                    "byte_size",
                    "width",
                    "height",
                    "pages",
                    "caption",
                    "filename",
                    "call_id",
                    "url",
                )
            }
        )
        if part.get("media_id") and part.get("url") is None:
            shown["src"] = f"/api/media/{part['media_id']}"
    elif kind == "file_ref":
        shown.update(
            {
                name: part.get(name)
                for name in ("file_id", "path", "file_type", "token_count", "summary")
            }
        )
    else:
        # text, reasoning, a provider's compaction block: their readable text.
        text, text_cut = cut(part.get("text"), limit)
        shown.update(text=text, text_cut=text_cut)
        if kind in ("reasoning", "provider_compaction"):
            shown["provider"] = part.get("provider")
            shown["signed"] = part.get("payload") is not None
    return shown


def summary_json(node: DagRow, *, limit: int | None = MAX_TEXT_CHARS) -> dict[str, Any]:
    """One summary of the DAG: what it covers and its text."""
    text, text_cut = cut(node.text, limit)
    return {
        "id": node.id,
        "kind": node.kind,
        "level": node.level,
        "depth": node.depth,
        "first_seq": node.span_start_seq,
        "last_seq": node.span_end_seq,
        "message_count": node.message_count,
        "tokens": node.token_count,
        "live": node.live,
        "superseded_by": node.superseded_by,
        "source_kind": node.source_kind,
        "sources": len(node.sources),
        "file_ids": node.file_ids,
        "created_at": node.created_at,
        "text": text,
        "text_cut": text_cut,
    }
