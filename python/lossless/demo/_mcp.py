"""The demo's third act: the same recall from another tool, over MCP.

``lossless mcp`` is started on the demo's file as an MCP client would start it
(a subprocess speaking over stdio), and the official SDK's client searches for the
turn-3 constraint and expands the summary that covers it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from lossless.demo.trajectory import RECALL_FACT, RECALL_QUERY

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["McpReport", "show_mcp_recall"]


@dataclass
class McpReport:
    """What the MCP client got back."""

    tools: int = 0
    found: bool = False
    expanded: bool = False
    grep_ms: float = 0.0
    error: str = ""


async def show_mcp_recall(db_path: str, console: Console) -> McpReport:
    report = McpReport()
    console.rule("recall from another tool: lossless mcp, over stdio")
    try:
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters
    except ImportError:
        report.error = "the mcp package is not installed (pip install 'lossless[mcp]')"
        console.print(f"[yellow]{report.error}[/]")
        return report
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lossless", "--db", db_path, "mcp"],
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    async with Client(server, read_timeout_seconds=60) as client:
        report.tools = len((await client.list_tools()).tools)
        started = time.perf_counter()
        hits = _json(await client.call_tool("grep", {"query": RECALL_QUERY, "limit": 5}))
        report.grep_ms = (time.perf_counter() - started) * 1e3
        found = [hit for hit in hits if hit["owner_kind"] == "message"]
        report.found = bool(found)
        console.print(
            f"  {report.tools} tools; grep {RECALL_QUERY!r}: {len(hits)} hits in "
            f"{report.grep_ms:.1f} ms"
        )
        if found and found[0]["covering_summary_id"]:
            hit = found[0]
            arguments = {
                "summary_id": hit["covering_summary_id"],
                "around": hit["owner_id"],
                "max_tokens": 2_000,
            }
            expansion = _json(await client.call_tool("expand", arguments))
            report.expanded = any(
                RECALL_FACT in message["text"] for message in expansion["messages"]
            )
            console.print(
                f"  expand {hit['covering_summary_id']} around {hit['owner_id']}: the constraint "
                f"{'[green]read back[/]' if report.expanded else '[red]not found[/]'}"
            )
        elif found:
            report.expanded = True
            console.print("  the message is still in the raw view")
    if not report.found:
        console.print(f"[red]{escape('no hit over MCP')}[/]")
    return report


def _json(result: Any) -> Any:
    if result.is_error:
        raise RuntimeError(result.content[0].text)
    return json.loads(result.content[0].text)
