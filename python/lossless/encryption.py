"""Encryption at rest: the key of an encrypted SQLite database.

A database opened with a key is encrypted whole by SQLCipher: its pages, its
write-ahead log, the full-text index and media blobs. Without the key the file
reads as noise; with it, everything (search included) works as on a plain file.

The key is a raw 256-bit key: 32 bytes, or their 64 hex digits, or their base64.
It comes from, in this order:

1. the ``encryption_key`` argument (of :class:`~lossless.store.Store`,
   :class:`~lossless.session.Session`'s ``create``, ``open``, ``load``): the key,
   or a callable returning it, called once each time a database is opened;
2. the ``LOSSLESS_DB_KEY`` environment variable (hex or base64);
3. the file ``LOSSLESS_DB_KEY_FILE`` names (the raw 32 bytes, or hex or base64 text).

None of them: the database is a plain file. A passphrase is not taken: derive a
key from it once (``hashlib.scrypt``, say) and pass the bytes, rather than pay a
key derivation on every connection. The key never appears in an error, a repr or
a log; an error names where the key came from, never its value.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeAlias

from lossless import _native
from lossless.errors import InvalidInputError

__all__ = [
    "KEY_BYTES",
    "KEY_ENV",
    "KEY_FILE_ENV",
    "EncryptionKey",
    "encrypt_database",
    "key_source",
    "resolve_key",
]

EncryptionKey: TypeAlias = "bytes | str | Callable[[], bytes | str]"
"""A database key: 32 bytes, their hex or base64, or a callable returning one of those."""

KEY_BYTES = 32
"""Bytes in a key: SQLCipher's AES-256 key."""
KEY_ENV = "LOSSLESS_DB_KEY"
"""The environment variable holding the key, in hex or base64."""
KEY_FILE_ENV = "LOSSLESS_DB_KEY_FILE"
"""The environment variable naming a file that holds the key."""

_EXPECTED = (
    f"expected {KEY_BYTES} bytes, {KEY_BYTES * 2} hex digits or the base64 of {KEY_BYTES} "
    "bytes (a 256-bit key); a passphrase is not taken, derive a key from it first"
)


def resolve_key(encryption_key: EncryptionKey | None = None) -> bytes | None:
    """The 32 key bytes to open a database with: from ``encryption_key``, else
    ``LOSSLESS_DB_KEY``, else the file ``LOSSLESS_DB_KEY_FILE`` names; None when
    none is set (a plain database). Raises
    :class:`~lossless.errors.InvalidInputError` naming the source of a key that is
    not one, never its value."""
    if encryption_key is not None:
        value = encryption_key() if callable(encryption_key) else encryption_key
        return _parse(value, "encryption_key")
    text = os.environ.get(KEY_ENV)
    path = os.environ.get(KEY_FILE_ENV)
    if text and path:
        raise InvalidInputError(f"{KEY_ENV} and {KEY_FILE_ENV} are both set: set one of them")
    if text:
        return _parse(text, KEY_ENV)
    if path:
        return _read_key_file(path)
    return None


def key_source(encryption_key: EncryptionKey | None) -> str:
    """Where :func:`resolve_key` takes the key from, to name in an error."""
    if encryption_key is not None:
        return "encryption_key"
    return KEY_ENV if os.environ.get(KEY_ENV) else KEY_FILE_ENV


def encrypt_database(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    encryption_key: EncryptionKey | None = None,
) -> None:
    """Write an encrypted copy of the plain database ``src`` to ``dst``.

    ``dst`` must not exist: nothing is overwritten, and ``src`` is only read. The
    key comes from ``encryption_key``, else from the environment as for opening
    (see :mod:`lossless.encryption`). Every session, message, summary, file and
    the search index are copied; afterwards open ``dst`` with the key, check it,
    and remove ``src`` (and its backups) yourself.
    """
    key = resolve_key(encryption_key)
    if key is None:
        raise InvalidInputError(
            f"encryption_key: no key given (pass encryption_key= or set {KEY_ENV} "
            f"or {KEY_FILE_ENV})"
        )
    _native.encrypt_database(os.fspath(src), os.fspath(dst), key)


def _parse(value: object, source: str) -> bytes:
    if isinstance(value, bytes | bytearray):
        if len(value) == KEY_BYTES:
            return bytes(value)
        raise InvalidInputError(f"{source}: {_EXPECTED} (got {len(value)} bytes)")
    if not isinstance(value, str):
        raise InvalidInputError(f"{source}: {_EXPECTED} (got {type(value).__name__})")
    text = value.strip()
    if len(text) == KEY_BYTES * 2:
        try:
            return bytes.fromhex(text)
        except ValueError:
            pass
    decoded = _base64(text)
    if decoded is not None and len(decoded) == KEY_BYTES:
        return decoded
    raise InvalidInputError(f"{source}: {_EXPECTED}")


def _base64(text: str) -> bytes | None:
    """``text`` decoded as standard or URL-safe base64 (padding optional), or None."""
    padded = text + "=" * (-len(text) % 4)
    for alphabet in (b"+/", b"-_"):
        try:
            return base64.b64decode(padded, altchars=alphabet, validate=True)
        except (binascii.Error, ValueError):
            continue
    return None


def _read_key_file(path: str) -> bytes:
    """The key in the file at ``path``: its raw 32 bytes, or hex or base64 text."""
    try:
        content = Path(path).read_bytes()
    except OSError as err:
        raise InvalidInputError(f"{KEY_FILE_ENV}: cannot read {path}: {err.strerror}") from None
    try:
        return _parse(content.decode("ascii"), f"{KEY_FILE_ENV} ({path})")
    except (UnicodeDecodeError, InvalidInputError):
        if len(content) == KEY_BYTES:
            return content
    raise InvalidInputError(f"{KEY_FILE_ENV} ({path}): {_EXPECTED}")
