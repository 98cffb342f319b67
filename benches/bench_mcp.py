"""An MCP grep call through the stdio server, client to result.

The official SDK's client starts ``lossless mcp`` over a fixture database and calls
its ``grep`` tool; the time is from the client's call to its parsed result. Target:
<= 20 ms median (at n = 100,000 stored messages in the full run).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from conftest import BenchDB

QUERY = "why did the settlement retries fail for the invoice export"


@pytest.mark.benchmark(group="recall-mcp")
def test_mcp_grep_through_stdio(
    benchmark: Any, n: int, bench_db: Callable[[int], BenchDB], record: Callable[..., None]
) -> None:
    db = bench_db(n)
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lossless", "--db", str(db.path), "mcp"],
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    arguments = {"query": QUERY, "session_id": db.session_id, "limit": 10}
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Client(server, read_timeout_seconds=60)) as client,
    ):

        def call() -> list[dict[str, Any]]:
            result = portal.call(client.call_tool, "grep", arguments)
            assert not result.is_error, result.content
            hits: list[dict[str, Any]] = json.loads(result.content[0].text)
            return hits

        call()  # the server's first search indexes what is queued
        hits = benchmark(call)
    record(benchmark, f"MCP grep over stdio n={n:,}", "<= 20 ms median", hits=len(hits))
