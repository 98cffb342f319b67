"""``lossless import claude-code|codex PATH``: coding agents' transcripts as sessions.

The session machinery is imported inside the commands: ``lossless stats`` must not
pay for it at start-up.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.table import Table

from lossless.cli._common import guarded, plural, settings, stderr_console, stdout_console

if TYPE_CHECKING:
    from lossless.imports import ImportProgress, ImportResult

__all__ = ["app"]

app = typer.Typer(
    name="import",
    help="Import coding agents' transcripts (Claude Code, Codex CLI) as sessions.",
    no_args_is_help=True,
)

PathArgument = Annotated[
    Path,
    typer.Argument(help="A transcript (.jsonl) or a directory to search for them.", exists=True),
]
DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Database file or postgresql:// URL; default: the global --db."),
]


def claude_code(ctx: typer.Context, path: PathArgument, db: DbOption = None) -> None:
    """Import Claude Code sessions (~/.claude/projects).

    One session per transcript and per sub-agent, tool calls, results and thinking
    kept. Importing again stores only what is new.
    """
    from lossless.imports import import_claude_code

    _run(ctx, path, db, import_claude_code)


def codex(ctx: typer.Context, path: PathArgument, db: DbOption = None) -> None:
    """Import Codex CLI sessions (~/.codex/sessions).

    One session per rollout, tool calls, results and reasoning kept. Importing
    again stores only what is new.
    """
    from lossless.imports import import_codex

    _run(ctx, path, db, import_codex)


Importer = Callable[..., Awaitable[list["ImportResult"]]]


def _run(ctx: typer.Context, path: Path, db: str | None, importer: Importer) -> None:
    import anyio
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    target = db if db is not None else settings(ctx).db
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=stderr_console(), transient=True) as progress:
        task = progress.add_task("importing", total=None)

        def report(step: ImportProgress) -> None:
            progress.update(task, total=step.total, completed=step.done, description=step.path.name)

        results = anyio.run(lambda: importer(path, db=target, on_progress=report, strict=False))
    _print(results, target)
    if any(result.error for result in results):
        raise typer.Exit(1)


def _print(results: Sequence[ImportResult], db: str) -> None:
    console = stdout_console()
    if not results:
        console.print("no transcripts found")
        return
    stored = sum(result.stored for result in results)
    # A line of its own, not the table's title: a title wraps at the table's width.
    summary = f"{plural(len(results), 'transcript')} into {db}: {plural(stored, 'new message')}"
    console.print(summary, soft_wrap=True)
    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("session", no_wrap=True)
    for name in ("new", "had", "skipped"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("key / error", overflow="fold")
    for result in results:
        table.add_row(
            result.session_id or "-",
            f"{result.stored:,}",
            f"{result.already:,}",
            f"{result.lines_skipped:,}",
            _note(result),
        )
    console.print(table)


def _note(result: ImportResult) -> str:
    if result.error:
        return f"error: {result.error}"
    if result.forked_from:
        return f"{result.key} (forked from {result.forked_from})"
    return result.key


for command in (claude_code, codex):
    app.command(name=command.__name__.replace("_", "-"))(guarded(command))
