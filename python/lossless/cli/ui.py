"""``lossless ui``: the read-only web viewer of a database, on 127.0.0.1."""

from __future__ import annotations

from typing import Annotated

import typer

from lossless.cli._common import require_database, settings, stdout_console

__all__ = ["ui"]


def ui(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="The port to serve on.")] = 8766,
    host: Annotated[
        str,
        typer.Option(help="The address to serve on; an address not loopback needs --token."),
    ] = "127.0.0.1",
    token: Annotated[
        str | None,
        typer.Option(
            help="A token every request must carry: a bearer header, or opened once as "
            "?token= in a browser (default: LOSSLESS_UI_TOKEN).",
            envvar="LOSSLESS_UI_TOKEN",
        ),
    ] = None,
) -> None:
    """Browse the database in a web page, read-only and live while sessions write to it:
    sessions and their forks, each turn's request as sent, what was compacted away,
    the summary DAG, a chart of the turns, search."""
    from lossless.ui import serve
    from lossless.ui.app import check_address

    db = settings(ctx).db
    require_database(db)
    check_address(host, token)
    shown = f"[{host}]" if ":" in host else host
    address = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    stdout_console().print(f"lossless ui: {address} (Ctrl-C to stop)", soft_wrap=True)
    serve(db, host=host, port=port, token=token)
