"""``lossless sessions`` and ``lossless export``: what is stored, listed and dumped."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import IO, Annotated, Any

import typer
from rich import box
from rich.table import Table

from lossless import _native
from lossless.cli._common import format_time, open_existing_store, plural, stdout_console
from lossless.store import redact

__all__ = ["ExportFormat", "export", "sessions"]


def sessions(
    ctx: typer.Context,
    parent: Annotated[
        str | None,
        typer.Option(
            "--parent",
            help="Only the sessions an agentic map ran under this parent "
            "(a session id, or the map id when it had no parent session).",
        ),
    ] = None,
) -> None:
    """List every session: id, model, creation time, messages, summaries, tokens in view."""
    store = open_existing_store(ctx)
    if parent is None:
        rows = store.sessions()
        where = f"in {redact(store.path)}"
    else:
        rows = _native.child_sessions(store.native, parent)
        where = f"under {parent}"
    console = stdout_console()
    if not rows:
        console.print(f"no sessions {where}")
        return
    # Compact borders: the six columns fit an 80-column terminal.
    table = Table(
        title=f"{plural(len(rows), 'session')} {where}",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    # Ids, times and counts never wrap or ellipsise (a cut number reads as a wrong
    # one); the model name comes last and folds on a narrow terminal instead.
    table.add_column("id", no_wrap=True)
    table.add_column("created", no_wrap=True)
    for name in ("messages", "summaries", "view\ntokens"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("model", overflow="fold")
    native = store.native
    lineage = {row.id: (native.key_of(row.id), native.fork_of(row.id)) for row in rows}
    shown = any(key is not None or fork is not None for key, fork in lineage.values())
    if shown:
        # Forks and names: a fork's own messages follow its parent's up to the seq.
        table.add_column("key / fork of", overflow="fold")
    for row in rows:
        # One view_stats call per session: list_sessions does not carry view tokens.
        view = store.view_stats(row.id)
        cells = [
            row.id,
            format_time(row.created_at),
            f"{row.messages:,}",
            f"{row.summaries:,}",
            f"{view.tokens:,}",
            row.model,
        ]
        if shown:
            cells.append(_lineage_cell(*lineage[row.id]))
        table.add_row(*cells)
    console.print(table)


def _lineage_cell(key: str | None, fork: _native.ForkRow | None) -> str:
    """A session's key, and the session and message seq it forked from."""
    said = [f"key {key}"] if key is not None else []
    if fork is not None:
        said.append(f"{fork.parent_id} @ #{fork.fork_seq}")
    return "\n".join(said)


class ExportFormat(StrEnum):
    """Formats ``lossless export`` writes."""

    jsonl = "jsonl"


def export(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="Session id (ses_...).")],
    # Only jsonl today; the option exists so scripts name the format and keep working
    # when another one is added.
    fmt: Annotated[
        ExportFormat, typer.Option("--format", help="Output format.")
    ] = ExportFormat.jsonl,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write here instead of stdout.", dir_okay=False),
    ] = None,
    with_summaries: Annotated[
        bool, typer.Option("--with-summaries", help="After the messages, write every summary too.")
    ] = False,
) -> None:
    """Write a session as JSON lines: every stored message with its parts, oldest first.

    Each line has a "type" of "message" (then, with --with-summaries, "summary"), so
    a reader can tell them apart. Summaries follow in the order they were written.
    """
    store = open_existing_store(ctx)
    # Read everything before opening the output: an unknown session must not leave
    # an empty file behind.
    records: list[dict[str, Any]] = [{"type": "message", **m} for m in store.history(session)]
    if with_summaries:
        nodes = sorted(store.describe(session), key=lambda node: node.id)  # ids sort by time
        records.extend({"type": "summary", **node} for node in nodes)
    if output is None:
        _write_jsonl(sys.stdout, records)
        return
    with output.open("w", encoding="utf-8", newline="\n") as stream:
        _write_jsonl(stream, records)
    stdout_console().print(f"wrote {len(records)} records to {output}", soft_wrap=True)


def _write_jsonl(stream: IO[str], records: list[dict[str, Any]]) -> None:
    for record in records:
        # ensure_ascii off: stored text stays readable (and byte-identical) in the dump.
        stream.write(json.dumps(record, ensure_ascii=False) + "\n")
