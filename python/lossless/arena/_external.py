"""Asking an external recall port, whatever kind of callable it offers."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from functools import partial

import anyio

from lossless.arena._ports import RecallHit, RecallPort


async def search_port(port: RecallPort, query: str, k: int) -> object:
    search = port.search
    if inspect.iscoroutinefunction(search):
        return await search(query, k)
    # A plain function may block: it runs in a worker thread the timeout can abandon.
    result = await anyio.to_thread.run_sync(partial(search, query, k), abandon_on_cancel=True)
    if inspect.isawaitable(result):
        return await result
    return result


def valid_hits(found: object) -> list[RecallHit] | None:
    """The port's answer as hits; ``None`` when it is not a sequence of hits."""
    if isinstance(found, str | bytes) or not isinstance(found, Sequence):
        return None
    hits: list[RecallHit] = []
    for item in found:
        if not isinstance(item, RecallHit) or not isinstance(item.text, str):
            return None
        if item.text.strip():
            hits.append(item)
    return hits
