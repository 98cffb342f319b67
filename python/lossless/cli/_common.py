"""Plumbing shared by every command: the database option, consoles, error reporting.

Kept free of heavy imports: everything imported here is paid by ``lossless stats``,
whose start-up budget is 300 ms.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import NoReturn, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from lossless.encryption import KEY_ENV, KEY_FILE_ENV
from lossless.errors import LosslessError
from lossless.store import Store, is_postgres_url

__all__ = [
    "Settings",
    "fail",
    "format_bytes",
    "format_time",
    "guarded",
    "key_file_in_effect",
    "open_existing_store",
    "plural",
    "settings",
    "stderr_console",
    "stdout_console",
]

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Settings:
    """Global options, set by the app callback and read by every command."""

    db: str


def settings(ctx: typer.Context) -> Settings:
    """The global options of this invocation."""
    obj = ctx.find_root().obj
    if not isinstance(obj, Settings):  # only reachable if a command runs without the app callback
        raise TypeError("lossless CLI: global options were not initialised")
    return obj


def stdout_console(*, markup: bool = False) -> Console:
    """A console on the current stdout.

    Made per command, not at import, so it binds to the stream the command really
    writes to (test runners swap ``sys.stdout``) and reads ``COLUMNS`` then.
    Markup and highlighting are off: stored text, ids, paths and queries are full of
    brackets (``[/file]``, ``[#3 user]``) and must print as themselves; styles are set
    on ``Text`` objects instead.
    """
    return Console(markup=markup, highlight=False)


def stderr_console() -> Console:
    """A console on the current stderr, for errors; literal like :func:`stdout_console`."""
    return Console(stderr=True, markup=False, highlight=False)


def fail(message: str) -> NoReturn:
    """Print ``error: message`` as one red line on stderr and exit with status 1."""
    # Native messages can span lines (a regex parse error draws a caret under the
    # pattern); scripts and users expect exactly one line, so collapse whitespace.
    line = " ".join(message.split())
    stderr_console().print(Text(f"error: {line}", style="red"), soft_wrap=True)
    raise typer.Exit(1)


def guarded(command: Callable[P, R]) -> Callable[P, R]:
    """Turn the errors a user can cause into ``error: ...`` and exit 1, never a traceback.

    Applied once to every command where the app registers them. Anything else
    (a bug) still raises with its traceback.
    """

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except BrokenPipeError:
            # The reader went away (`lossless export ... | head`): stop quietly, as
            # Unix tools do, instead of reporting an error nobody asked about.
            _silence_stdout()
            raise typer.Exit(1) from None
        # OSError: an unwritable --output, a closed pipe, a directory given as --db;
        # the user's environment, not a bug in lossless.
        except (LosslessError, OSError) as exc:
            fail(str(exc))

    return run


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush cannot fail again.

    The recipe of the Python docs for SIGPIPE (library/signal.html, "Note on SIGPIPE").
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor (a test runner's buffer)
        pass


def open_existing_store(ctx: typer.Context) -> Store:
    """Open the database for a read command, read-only: never create, migrate or
    write it (a typo in ``--db`` must not leave an empty database behind)."""
    db = settings(ctx).db
    require_database(db)
    return Store(db, read_only=True)


def require_database(db: str) -> None:
    """Fails unless ``db`` is an existing file or a PostgreSQL URL (whose server
    says itself whether the database is there)."""
    if not is_postgres_url(db) and not Path(db).exists():
        fail(f"no database at {db} (pass --db PATH or set LOSSLESS_DB)")


@contextlib.contextmanager
def key_file_in_effect(path: str) -> Iterator[None]:
    """Within the block, every database is opened with the key in the file at
    ``path``: ``LOSSLESS_DB_KEY_FILE`` names it and ``LOSSLESS_DB_KEY`` is unset;
    both are as they were afterwards."""
    saved = {name: os.environ.get(name) for name in (KEY_FILE_ENV, KEY_ENV)}
    os.environ[KEY_FILE_ENV] = path
    os.environ.pop(KEY_ENV, None)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def plural(count: int, noun: str) -> str:
    """``1 hit``, ``2 hits``, ``1,200 sessions``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def format_time(millis: int) -> str:
    """A stored millisecond timestamp as local time, to the minute."""
    return datetime.fromtimestamp(millis / 1000).astimezone().strftime("%Y-%m-%d %H:%M")


def format_bytes(size: int) -> str:
    """``1536`` → ``1.5 KiB``."""
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    value, index = float(size), 0
    while value >= 1024 and index < len(units) - 1:
        value /= 1024
        index += 1
    return f"{size} B" if index == 0 else f"{value:.1f} {units[index]}"
