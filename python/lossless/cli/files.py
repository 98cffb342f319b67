"""``lossless file``: a stored file, read back as its original bytes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from lossless import _native
from lossless.cli._common import (
    fail,
    format_bytes,
    format_time,
    open_existing_store,
    stdout_console,
)

__all__ = ["file"]


def _range(lines: str) -> tuple[int, int]:
    """``10:20``, ``10:`` or ``:20`` as (first, last), from 1, both included."""
    start, sep, end = lines.partition(":")
    try:
        first = int(start) if start.strip() else 1
        last = int(end) if end.strip() else (first if not sep else sys.maxsize)
    except ValueError:
        fail(f"--lines: expected FIRST:LAST (from 1), got {lines!r}")
    if first < 1 or last < first:
        fail(f"--lines: expected 1 <= FIRST <= LAST, got {lines!r}")
    return first, last


def file(
    ctx: typer.Context,
    file_id: Annotated[str, typer.Argument(help="File id (file_...).")],
    lines: Annotated[
        str | None, typer.Option("--lines", help="Only lines FIRST:LAST (from 1).")
    ] = None,
    info: Annotated[
        bool, typer.Option("--info", help="Show what is stored of the file, not its content.")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Write the original bytes to this file.", dir_okay=False),
    ] = None,
) -> None:
    """Print a stored file: its text as it was handed over, byte for byte (or --lines)."""
    store = open_existing_store(ctx).native
    record = _native.file_record(store, file_id)
    if record is None:
        fail(f"no file with id {file_id!r} in {ctx.find_root().obj.db}")
    if info:
        console = stdout_console()
        console.print(Text(record.file_id, style="bold"))
        for label, value in (
            ("path", record.path),
            ("type", record.file_type),
            ("size", f"{format_bytes(record.byte_count)}, {record.line_count:,} lines"),
            ("stored", format_bytes(record.stored_bytes) + " compressed"),
            ("tokens", f"{record.token_count:,}"),
            ("sha256", record.content_hash),
            ("added", format_time(record.created_at)),
        ):
            console.print(f"{label:>7}: {value}", soft_wrap=True)
        console.print(record.summary, soft_wrap=True)
        return
    if out is not None:
        written = _native.export_file(store, file_id, out)
        stdout_console().print(f"wrote {written:,} bytes to {out}", soft_wrap=True)
        return
    if not record.is_text:
        fail(f"{file_id} is a binary file; write its bytes with --out PATH")
    first, last = _range(lines) if lines is not None else (None, None)
    data = _native.read_file(store, file_id, first, last)
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
