"""``lossless demo``: a long offline agent session, compacted as it goes."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Protocol

import typer

from lossless.cli._common import fail, settings, stdout_console

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["demo"]


class _RunDemo(Protocol):
    """The contract of ``lossless.demo.runner.run_demo``; returns the exit status."""

    def __call__(self, db_path: str, *, turns: int, model: str | None, console: Console) -> int: ...


def demo(
    ctx: typer.Context,
    turns: Annotated[
        int, typer.Option(help="Messages of the scripted trajectory to play.", min=1)
    ] = 520,
    model: Annotated[
        str | None, typer.Option(help="litellm model name; default: the built-in local server.")
    ] = None,
    db: Annotated[
        Path | None,
        typer.Option("--db", help="Database to write; default: the global --db.", dir_okay=False),
    ] = None,
) -> None:
    """Run the offline demo: a scripted coding-agent session against a local model server.

    Writes to the database (creating it), so `lossless show`, `tree` and `grep` can
    inspect the result afterwards.
    """
    # Imported here, not at the top: the runner pulls in litellm and the session
    # machinery, which would cost every other command a second of start-up.
    # importlib rather than an import statement keeps mypy independent of whether
    # the runner module exists yet; _RunDemo restores the types.
    try:
        run_demo: _RunDemo = importlib.import_module("lossless.demo.runner").run_demo
    except (ImportError, AttributeError) as exc:
        fail(f"the demo is not available in this build: {exc}")
    # The runner styles its own output with rich markup.
    console = stdout_console(markup=True)
    code = run_demo(str(db or settings(ctx).db), turns=turns, model=model, console=console)
    raise typer.Exit(code)
