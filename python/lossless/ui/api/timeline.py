"""``/api/sessions/{id}/messages``: the timeline, a page at a time, and one message whole."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from lossless.ui import timeline
from lossless.ui.api._common import ApiError, int_param, json_response, read

__all__ = ["routes"]


async def messages(request: Request) -> Response:
    bounds = {name: int_param(request, name) for name in ("before", "after", "around")}
    if sum(value is not None for value in bounds.values()) > 1:
        raise ApiError(400, "give one of before, after and around")
    limit = int_param(request, "limit", default=timeline.DEFAULT_PAGE) or timeline.DEFAULT_PAGE
    page = await read(
        request, timeline.page, request.path_params["session_id"], limit=limit, **bounds
    )
    return json_response(page)


async def message(request: Request) -> Response:
    params = request.path_params
    return json_response(
        await read(request, timeline.message, params["session_id"], params["message_id"])
    )


routes = [
    Route("/api/sessions/{session_id}/messages", messages),
    Route("/api/sessions/{session_id}/messages/{message_id}", message),
]
