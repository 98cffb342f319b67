"""``lossless mcp``: the recall tools served over the Model Context Protocol."""

from __future__ import annotations

from typing import Annotated

import typer

from lossless.cli._common import require_database, settings

__all__ = ["mcp"]


def mcp(
    ctx: typer.Context,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP on 127.0.0.1 instead of stdio.")
    ] = False,
    port: Annotated[int, typer.Option(help="The HTTP port (with --http).")] = 8765,
) -> None:
    """Serve sessions, grep, describe and expand over MCP (stdio by default)."""
    from lossless.mcp_server import serve

    db = settings(ctx).db
    require_database(db)
    serve(db, transport="streamable-http" if http else "stdio", port=port)
