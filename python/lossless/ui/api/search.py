"""``/api/search``: ``lossless.recall.grep`` over one session or all, each hit with
the seq that opens it in the timeline."""

from __future__ import annotations

import contextlib
from dataclasses import asdict
from typing import Any, Literal

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from lossless.errors import NotFoundError
from lossless.recall import grep
from lossless.store import Store
from lossless.ui._render import cut
from lossless.ui.api._common import ApiError, int_param, json_response, read

__all__ = ["MAX_HITS", "routes"]

MAX_HITS = 100
_SNIPPET_CHARS = 400


def _search(
    store: Store,
    query: str,
    session_id: str | None,
    mode: Literal["text", "regex"],
    limit: int,
) -> list[dict[str, Any]]:
    hits = []
    for hit in grep(query, db=store, session=session_id, mode=mode, limit=limit):
        shown = asdict(hit)
        shown["snippet"], _ = cut(hit.snippet, _SNIPPET_CHARS)
        shown["seq"] = None
        if hit.owner_kind == "message":
            with contextlib.suppress(NotFoundError):
                shown["seq"] = store.native.get_message(hit.owner_id).seq
        hits.append(shown)
    return hits


async def search(request: Request) -> Response:
    query = request.query_params.get("q", "").strip()
    if not query:
        raise ApiError(400, "q: give words to search for")
    mode = request.query_params.get("mode", "text")
    if mode not in ("text", "regex"):
        raise ApiError(400, f"mode: expected text or regex, got {mode!r}")
    limit = min(max(int_param(request, "limit", default=30) or 30, 1), MAX_HITS)
    session_id = request.query_params.get("session") or None
    hits = await read(request, _search, query, session_id, mode, limit)
    return json_response({"query": query, "hits": hits})


routes = [Route("/api/search", search)]
