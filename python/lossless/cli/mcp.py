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
    host: Annotated[
        str, typer.Option(help="The address to serve on (with --http); not loopback needs --token.")
    ] = "127.0.0.1",
    token: Annotated[
        str | None,
        typer.Option(
            help="A bearer token every HTTP request must carry (default: LOSSLESS_MCP_TOKEN).",
            envvar="LOSSLESS_MCP_TOKEN",
        ),
    ] = None,
) -> None:
    """Serve sessions, grep, describe and expand over MCP (stdio by default)."""
    from lossless.mcp_server import serve

    db = settings(ctx).db
    require_database(db)
    if http:
        serve(db, transport="streamable-http", host=host, port=port, token=token)
    else:
        serve(db, transport="stdio")
