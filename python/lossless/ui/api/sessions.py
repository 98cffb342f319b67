"""``/api/sessions``: the sessions, one session, and what changed in it since."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from lossless.store import redact
from lossless.ui import live
from lossless.ui.api._common import int_param, json_response, read, store_of
from lossless.ui.sessions import list_sessions, session_detail

__all__ = ["routes"]


async def sessions(request: Request) -> Response:
    listed = await read(request, list_sessions)
    return json_response({"db": redact(store_of(request).path), "sessions": listed})


async def session(request: Request) -> Response:
    return json_response(await read(request, session_detail, request.path_params["session_id"]))


async def since(request: Request) -> Response:
    after = int_param(request, "event", default=0) or 0
    return json_response(await read(request, live.since, request.path_params["session_id"], after))


routes = [
    Route("/api/sessions", sessions),
    Route("/api/sessions/{session_id}", session),
    Route("/api/sessions/{session_id}/since", since),
]
