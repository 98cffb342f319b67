"""``/api/sessions/{id}/requests``: the chart's series, and one request put together
again, by its event or by the message that answered it."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from lossless.errors import NotFoundError
from lossless.store import Store
from lossless.ui import charts
from lossless.ui.api._common import int_param, json_response, read
from lossless.ui.requests import rebuild_request, request_answered_by, request_event

__all__ = ["routes"]


async def series(request: Request) -> Response:
    before = int_param(request, "before")
    limit = int_param(request, "limit", default=charts.MAX_POINTS) or charts.MAX_POINTS
    return json_response(
        await read(
            request, charts.series, request.path_params["session_id"], before=before, limit=limit
        )
    )


def _by_event(store: Store, session_id: str, seq: int) -> dict[str, Any]:
    return rebuild_request(store, session_id, request_event(store, session_id, seq))


def _answered_by(store: Store, session_id: str, seq: int) -> dict[str, Any]:
    event = request_answered_by(store, session_id, seq)
    if event is None:
        raise NotFoundError(f"session {session_id} recorded no request")
    return rebuild_request(store, session_id, event)


async def one(request: Request) -> Response:
    params = request.path_params
    return json_response(await read(request, _by_event, params["session_id"], params["seq"]))


async def at(request: Request) -> Response:
    params = request.path_params
    return json_response(await read(request, _answered_by, params["session_id"], params["seq"]))


routes = [
    Route("/api/sessions/{session_id}/requests", series),
    Route("/api/sessions/{session_id}/requests/{seq:int}", one),
    Route("/api/sessions/{session_id}/requests/at/{seq:int}", at),
]
