"""Large files: kept whole in the store, referenced in the context by content id.

A file under ``files.inline_threshold`` tokens goes into the conversation as text.
A larger one is stored: its original bytes, compressed in chunks, beside an
exploration summary (classes and functions of code, keys of JSON and YAML, the
heading tree of Markdown, the columns of a table), under the id ``file_`` + the
first 32 hex digits of its SHA-256. The context carries only the reference and the
summary; the id travels into every summary footer, so it is never lost, and the
bytes read back whole or by line range (:meth:`LargeFileHandler.read`,
``Session.read_file``, the ``lossless_read_file`` agent tool, ``lossless file``).

Hashing, storing and parsing run in worker threads, in chunks of 1 MiB: a file of
gigabytes never blocks the event loop nor sits in memory whole.
"""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass
from pathlib import Path

import anyio

from lossless import _native
from lossless.config import FilesConfig
from lossless.errors import (
    FileInputError,
    FileTooLargeError,
    InvalidInputError,
    MissingFileError,
    NotFoundError,
)
from lossless.files._summaries import Exploration, explore_binary, explore_text
from lossless.parts import FileRefPart, TextPart, storable_name
from lossless.store import Store, database_path, open_native
from lossless.tokens import DEFAULT_MODEL, count_tokens

__all__ = ["FileHandleResult", "LargeFileHandler", "StoredFile"]

_BINARY_HEAD = 8_192


@dataclass(frozen=True, slots=True)
class StoredFile:
    """A file kept in the store."""

    file_id: str
    path: str
    file_type: str
    token_count: int
    summary: str
    content_hash: str
    byte_count: int
    line_count: int
    stored_bytes: int
    is_text: bool
    created_at: int

    @property
    def part(self) -> FileRefPart:
        """The reference that stands for the file in a message."""
        return FileRefPart(
            file_id=self.file_id,
            path=self.path,
            file_type=self.file_type,
            token_count=self.token_count,
            summary=self.summary,
        )


@dataclass(frozen=True, slots=True)
class FileHandleResult:
    """What :meth:`LargeFileHandler.handle` made of a file: a part for a message.

    ``file`` is the stored file for a reference, ``None`` for inline text;
    ``stored`` says whether this call stored it (``False``: the same content was
    stored before and is reused).
    """

    part: TextPart | FileRefPart
    token_count: int
    file: StoredFile | None = None
    stored: bool = False

    @property
    def inline(self) -> bool:
        return self.file is None

    @property
    def file_id(self) -> str | None:
        return None if self.file is None else self.file.file_id


def _stored(record: _native.FileRecord) -> StoredFile:
    return StoredFile(
        file_id=record.file_id,
        path=record.path,
        file_type=record.file_type,
        token_count=record.token_count,
        summary=record.summary,
        content_hash=record.content_hash,
        byte_count=record.byte_count,
        line_count=record.line_count,
        stored_bytes=record.stored_bytes,
        is_text=record.is_text,
        created_at=record.created_at,
    )


def native_store(db: object) -> _native.Store:
    """The native handle of ``db``: a :class:`Store`, a native store, or a path
    (opened for writing, created if needed)."""
    if isinstance(db, Store):
        return db.native
    if isinstance(db, _native.Store):
        return db
    store = getattr(db, "store", None)
    if isinstance(store, _native.Store):  # a Session
        return store
    return open_native(database_path(db))


class LargeFileHandler:
    """Turns files into message parts: inline text when small, else a stored
    reference. ``db`` is a path, a :class:`Store` or a ``Session``; ``model``'s
    tokenizer counts the threshold."""

    def __init__(
        self,
        db: object = "lossless.db",
        *,
        config: FilesConfig | None = None,
        model: str = DEFAULT_MODEL,
    ) -> None:
        self._store = native_store(db)
        self.config = config or FilesConfig()
        self.model = model

    async def handle(self, path: str | os.PathLike[str]) -> FileHandleResult:
        """The part that stands for the file at ``path`` (see the module's docs).

        A missing path raises :class:`MissingFileError`; a directory, an empty or
        unreadable file :class:`FileInputError`; one over ``files.max_file_bytes``
        :class:`FileTooLargeError`. Nothing is stored then.
        """
        source = _source_path(path)
        size = await anyio.to_thread.run_sync(_checked_size, source, self.config.max_file_bytes)
        scan = await anyio.to_thread.run_sync(_scan, source)
        found = await anyio.to_thread.run_sync(_native.file_record, self._store, scan.file_id)
        if found is not None:
            stored = _stored(found)
            return FileHandleResult(stored.part, stored.token_count, stored, stored=False)
        if scan["utf8"] and not scan.has_nul:
            inline = await anyio.to_thread.run_sync(self._inline_text, source, size)
            if inline is not None:
                return inline
        return await self._store_reference(source, scan)

    def _inline_text(self, source: Path, size: int) -> FileHandleResult | None:
        """The file as text, if it is under the threshold. Every token holds at least
        one byte, so a file of fewer bytes than the threshold is under it uncounted;
        a larger one is read only while it might still be (a token rarely holds
        more than 16 bytes)."""
        threshold = self.config.inline_threshold
        if size > threshold * 16:
            return None
        text = source.read_bytes().decode()
        tokens = count_tokens(text, model=self.model)
        if tokens >= threshold:
            return None
        shown = storable_name(str(source))
        return FileHandleResult(TextPart(f'<file path="{shown}">\n{text}\n</file>'), tokens)

    async def _store_reference(self, source: Path, scan: _native.FileScan) -> FileHandleResult:
        exploration, tokens = await anyio.to_thread.run_sync(self._explore, source, scan)
        record, stored = await anyio.to_thread.run_sync(
            _store_file, self._store, source, scan, exploration, tokens
        )
        file = _stored(record)
        return FileHandleResult(file.part, file.token_count, file, stored=stored)

    def _explore(self, source: Path, scan: _native.FileScan) -> tuple[Exploration, int]:
        """The summary of the file and its token count: counted over the whole file
        when it is read whole, else estimated from its head."""
        limit = self.config.summary_max_bytes
        with source.open("rb") as stream:
            head = stream.read(limit if scan["utf8"] and not scan.has_nul else _BINARY_HEAD)
        if not scan["utf8"] or scan.has_nul:
            explored = explore_binary(
                head, byte_count=scan.bytes, utf8=scan["utf8"], has_nul=scan.has_nul
            )
            return explored, 0
        partial = scan.bytes > len(head)
        # A head cut inside a character drops that character's first bytes.
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=not partial)
        explored = explore_text(
            str(source.name),
            text,
            byte_count=scan.bytes,
            line_count=scan.lines,
            partial=partial,
            outline_chars=self.config.outline_max_bytes,
        )
        tokens = count_tokens(text, model=self.model)
        if partial and head:
            tokens = round(tokens * scan.bytes / len(head))
        return explored, tokens

    async def info(self, file_id: str) -> StoredFile:
        """The stored file ``file_id``; :class:`NotFoundError` if there is none."""
        found = await anyio.to_thread.run_sync(_native.file_record, self._store, file_id)
        if found is None:
            raise NotFoundError(f"no file with id {file_id!r}")
        return _stored(found)

    async def read_bytes(self, file_id: str) -> bytes:
        """The original bytes of the stored file ``file_id``, whole."""
        return await anyio.to_thread.run_sync(_native.read_file, self._store, file_id)

    async def read(self, file_id: str, lines: tuple[int, int] | None = None) -> str:
        """The text of the stored file ``file_id``, whole or ``lines=(first, last)``
        (from 1, both included, cut to the file's end). A binary file raises
        :class:`InvalidInputError`: read it with :meth:`read_bytes`."""
        first, last = _line_range(lines)
        file = await self.info(file_id)
        if not file.is_text:
            raise InvalidInputError(
                f"file_id: {file_id} is a binary file ({file.summary.splitlines()[0]}); "
                "read its bytes with read_bytes or `lossless file --out`"
            )
        data = await anyio.to_thread.run_sync(_native.read_file, self._store, file_id, first, last)
        return data.decode()


def _line_range(lines: tuple[int, int] | None) -> tuple[int | None, int | None]:
    if lines is None:
        return None, None
    try:
        first, last = lines
    except (TypeError, ValueError):
        raise InvalidInputError("lines: expected (first, last) or None") from None
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (first, last)):
        raise InvalidInputError("lines: expected two integers")
    if first < 1 or last < first:
        raise InvalidInputError(f"lines: expected 1 <= first <= last, got ({first}, {last})")
    return first, last


def _source_path(path: object) -> Path:
    if not isinstance(path, str | os.PathLike):
        raise InvalidInputError(f"path: expected a path, got {type(path).__name__}")
    raw = os.fspath(path)
    if not isinstance(raw, str) or not raw or "\0" in raw:
        raise InvalidInputError(f"path: {raw!r} is not a usable file path")
    return Path(raw)


def _checked_size(source: Path, limit: int) -> int:
    try:
        stat = source.stat()
    except FileNotFoundError:
        raise MissingFileError(f"path: {source}: no such file") from None
    except OSError as err:
        raise FileInputError(f"path: {source}: {err.strerror or err}") from None
    if source.is_dir():
        raise FileInputError(f"path: {source}: is a directory, not a file")
    if not source.is_file():
        raise FileInputError(f"path: {source}: not a regular file")
    if stat.st_size == 0:
        raise FileInputError(f"path: {source}: the file is empty")
    if stat.st_size > limit:
        raise FileTooLargeError(
            f"path: {source}: {stat.st_size:,} bytes is over files.max_file_bytes ({limit:,})"
        )
    if not os.access(source, os.R_OK):
        raise FileInputError(f"path: {source}: permission denied")
    return stat.st_size


def _scan(source: Path) -> _native.FileScan:
    try:
        return _native.scan_file(source)
    except InvalidInputError as err:
        raise FileInputError(str(err)) from None


def _store_file(
    store: _native.Store,
    source: Path,
    scan: _native.FileScan,
    exploration: Exploration,
    tokens: int,
) -> tuple[_native.FileRecord, bool]:
    try:
        return _native.store_file(
            store,
            source,
            scan["sha256"],
            storable_name(str(source)),
            exploration.file_type,
            tokens,
            exploration.summary,
        )
    except InvalidInputError as err:
        raise FileInputError(str(err)) from None
