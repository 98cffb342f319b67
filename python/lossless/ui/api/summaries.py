"""``/api/sessions/{id}/summaries``: the DAG's live summaries, and one node opened."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from lossless.ui import dag
from lossless.ui.api._common import json_response, read

__all__ = ["routes"]


async def roots(request: Request) -> Response:
    return json_response(await read(request, dag.roots, request.path_params["session_id"]))


async def node(request: Request) -> Response:
    params = request.path_params
    return json_response(await read(request, dag.node, params["session_id"], params["summary_id"]))


routes = [
    Route("/api/sessions/{session_id}/summaries", roots),
    Route("/api/sessions/{session_id}/summaries/{summary_id}", node),
]
