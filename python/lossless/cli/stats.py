"""``lossless stats``: counts over the whole database file."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from lossless.cli._common import format_bytes, open_existing_store, stdout_console
from lossless.store import is_postgres_url, redact

__all__ = ["stats"]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:  # no -wal file once SQLite checkpointed and closed cleanly
        return 0


def stats(ctx: typer.Context) -> None:
    """Show the file size and counts of sessions, messages, summaries, tokens and events."""
    store = open_existing_store(ctx)
    counts = store.stats()
    stored, in_view = counts.tokens_stored, counts.tokens_in_view
    share = f" ({in_view / stored:.1%} of stored)" if stored else ""
    on_server = is_postgres_url(store.path)
    table = Table(title=redact(store.path) if on_server else store.path, show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    if not on_server:
        db = Path(store.path)
        main_size, wal_size = _size(db), _size(db.with_name(db.name + "-wal"))
        table.add_row("file size", f"{format_bytes(main_size + wal_size)}")
        table.add_row("  database", format_bytes(main_size))
        table.add_row("  write-ahead log", format_bytes(wal_size))
    table.add_row("sessions", f"{counts.sessions:,}")
    table.add_row("messages", f"{counts.messages:,}")
    table.add_row("parts", f"{counts.parts:,}")
    table.add_row("summaries (live / total)", f"{counts.live_summaries:,} / {counts.summaries:,}")
    table.add_row("compactions", f"{counts.compactions:,}")
    table.add_row("tombstones", f"{counts.tombstones:,}")
    table.add_row("tokens stored", f"{stored:,}")
    table.add_row("tokens in view", f"{in_view:,}{share}")
    table.add_row("events", f"{counts.events:,}")
    stdout_console().print(table)
