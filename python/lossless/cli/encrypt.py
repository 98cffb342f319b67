"""``lossless encrypt``: an encrypted copy of a plain database file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lossless.cli._common import fail, require_database, settings, stdout_console
from lossless.encryption import encrypt_database
from lossless.store import is_postgres_url, redact

__all__ = ["encrypt"]


def encrypt(
    ctx: typer.Context,
    dst: Annotated[Path, typer.Argument(help="Where to write the encrypted copy (a new file).")],
) -> None:
    """Copy the plain database --db into a new, encrypted file DST.

    The key comes from --key-file, LOSSLESS_DB_KEY or LOSSLESS_DB_KEY_FILE (32 bytes,
    or hex or base64; `openssl rand -hex 32` makes one). --db is only read; check DST
    with the key, then remove --db and its backups yourself.
    """
    db = settings(ctx).db
    if is_postgres_url(db):
        fail(f"{redact(db)}: a PostgreSQL server encrypts its own storage; encrypt copies a file")
    require_database(db)
    encrypt_database(db, dst)
    stdout_console().print(f"encrypted copy of {db} written to {dst}", soft_wrap=True)
