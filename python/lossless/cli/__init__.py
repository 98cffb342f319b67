"""The ``lossless`` command line: inspect, search and export a lossless database.

Start-up matters (``lossless stats`` answers in well under 300 ms), so nothing here
imports litellm or the session machinery; commands that need them import them
inside their own bodies.
"""

from __future__ import annotations

from typing import Annotated

import typer

from lossless.cli import (
    demo,
    encrypt,
    files,
    governance,
    imports,
    mcp,
    proxy,
    recall,
    sessions,
    show,
    stats,
    ui,
)
from lossless.cli._common import Settings, guarded, key_file_in_effect

__all__ = ["app", "main"]

app = typer.Typer(
    name="lossless",
    help="Inspect, search and export lossless session databases.",
    no_args_is_help=True,
    add_completion=False,
    # Errors a user can cause are reported as one line by `guarded`; anything that
    # still escapes is a bug, and a plain traceback is the useful report for it.
    pretty_exceptions_enable=False,
)

# Registered in one place so every command gets the same error handling.
for command in (
    sessions.sessions,
    show.show,
    recall.tree,
    recall.grep,
    recall.expand,
    recall.read,
    files.file,
    stats.stats,
    sessions.export,
    encrypt.encrypt,
    demo.demo,
    mcp.mcp,
    ui.ui,
    proxy.proxy,
    governance.erase,
    governance.retention,
    governance.maintain,
):
    app.command()(guarded(command))
app.add_typer(imports.app)


def _print_version(value: bool) -> None:
    if value:
        from lossless import __version__

        typer.echo(f"lossless {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    ctx: typer.Context,
    db: Annotated[
        str,
        typer.Option(
            "--db",
            envvar="LOSSLESS_DB",
            help="Database file, or a postgresql:// URL.",
            show_default=True,
        ),
    ] = "lossless.db",
    key_file: Annotated[
        str | None,
        typer.Option(
            "--key-file",
            help=(
                "File holding the key of an encrypted database (its 32 bytes, or hex or "
                "base64); default: LOSSLESS_DB_KEY, else the file LOSSLESS_DB_KEY_FILE names."
            ),
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Inspect, search and export lossless session databases."""
    ctx.obj = Settings(db=db)
    if key_file is not None:
        # For this command only, and everything it opens (sessions, recall, the
        # servers' stores), as if LOSSLESS_DB_KEY_FILE alone were set.
        ctx.with_resource(key_file_in_effect(key_file))


def main() -> None:
    """Entry point of the ``lossless`` script and ``python -m lossless``."""
    app(prog_name="lossless")
