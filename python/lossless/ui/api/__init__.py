"""The viewer's JSON API, one module per domain: sessions, the timeline, requests,
the summary DAG, search and media. Every route only reads."""

from __future__ import annotations

from starlette.routing import BaseRoute

from lossless.ui.api import media, requests, search, sessions, summaries, timeline

__all__ = ["routes"]

routes: list[BaseRoute] = [
    *sessions.routes,
    *timeline.routes,
    *requests.routes,
    *summaries.routes,
    *search.routes,
    *media.routes,
]
