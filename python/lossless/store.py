"""The append-only store: a SQLite file holding every session, message and summary."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from lossless import _native
from lossless.encryption import EncryptionKey, encrypt_database, key_source, resolve_key
from lossless.errors import InvalidInputError
from lossless.parts import PartsInput, normalize_parts, parts_to_wire

__all__ = [
    "AppendResult",
    "CommitResult",
    "DagRow",
    "EventRow",
    "ExpandedRow",
    "ExpansionRow",
    "ExtractiveCommitResult",
    "FileRecord",
    "FileScan",
    "GrepRow",
    "MapOutcome",
    "MapRun",
    "MessagePageRow",
    "MessageRecord",
    "PruneResult",
    "RoundCommit",
    "RoundResult",
    "SessionInfo",
    "SessionRow",
    "SpanTextResult",
    "Store",
    "StoreStats",
    "StreamRow",
    "SummaryRow",
    "TextResult",
    "TurnAppendResult",
    "ViewStats",
    "database_path",
    "enable_tenants",
    "encrypt_database",
    "open_native",
    "prepare_postgres",
    "tenant_url",
]

# The store's results: each read by attribute, and by name as the dicts they were
# (``row["id"]``, ``row.get("id")``, ``row.keys()``, ``dict(row)``).
ViewStats = _native.ViewStats
"""The sizes of a session's view, as :meth:`Store.view_stats` gives them."""
SessionInfo = _native.SessionInfo
"""A session's row: id, model, creation time, configuration and system prompt."""
SessionRow = _native.SessionRow
"""A session as :meth:`Store.sessions` lists it, with its message and summary counts."""
StreamRow = _native.StreamRow
"""A reply still streaming: its owner, the owner's last heartbeat and the characters
checkpointed so far."""
AppendResult = _native.AppendResult
"""A message just written (:meth:`Store.append`): id, sequence number, tokens, part ids."""
TurnAppendResult = _native.TurnAppendResult
"""A turn just written with its event, and the view's size (``view_tokens``) after it."""
MessageRecord = _native.MessageRecord
"""A stored message (:meth:`Store.history`) with its usage and its parts as wire dicts."""
EventRow = _native.EventRow
"""One event of a session's tape (:meth:`Store.events`), its payload as JSON text."""
StoreStats = _native.StoreStats
"""Counts over the whole database (:meth:`Store.stats`)."""
FileScan = _native.FileScan
"""One streamed pass over a file: its hash and id, its size, and its content's kind."""
FileRecord = _native.FileRecord
"""A stored file's reference and size, as the store keeps it."""
MapRun = _native.MapRun
"""A map run: its kind, parent, spec and item count."""
MapOutcome = _native.MapOutcome
"""One finished attempt at an item of a map run."""
GrepRow = _native.GrepRow
"""A search hit (:meth:`Store.grep`), with the summaries covering it."""
DagRow = _native.DagRow
"""A summary of the DAG (:meth:`Store.describe`): its row, whether it is live, its sources."""
ExpansionRow = _native.ExpansionRow
"""A window of a summary's source messages (:meth:`Store.expand`)."""
ExpandedRow = _native.ExpandedRow
"""One source message of an expansion, written out as text."""
MessagePageRow = _native.MessagePageRow
"""A page of one stored message written out whole (:meth:`Store.read`)."""
PruneResult = _native.PruneResult
"""What a prune pass did: the tool outputs it could tombstone, those it did, the tokens saved."""
TextResult = _native.TextResult
"""A transcript or deterministic summary of messages named by ids, with those ids."""
SpanTextResult = _native.SpanTextResult
"""A transcript or deterministic summary of a span: ``TextResult`` without the ids."""
SummaryRow = _native.SummaryRow
"""A summary still in its session's view."""
CommitResult = _native.CommitResult
"""A committed summary, with the view's size before and after it."""
ExtractiveCommitResult = _native.ExtractiveCommitResult
"""A span's built-in summary and its commit (None when it was not committed)."""
RoundCommit = _native.RoundCommit
"""A leaf summary a compaction round committed, with its level and messages."""
RoundResult = _native.RoundResult
"""A compaction round's store work up to its first model call."""


POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(db: str) -> bool:
    """Whether ``db`` names a PostgreSQL database rather than a file."""
    return db.lower().startswith(POSTGRES_SCHEMES)


def redact(db: str) -> str:
    """``db`` fit to show: a URL's password replaced by ``***``."""
    if not is_postgres_url(db):
        return db
    scheme, _, rest = db.partition("://")
    authority, slash, tail = rest.partition("/")
    user, at, host = authority.rpartition("@")
    if at and ":" in user:
        user = user.split(":", 1)[0] + ":***"
    shown = f"{scheme}://{user}{at}{host}{slash}{tail}"
    return re.sub(r"(password=)[^&\s]*", r"\1***", shown)


def database_path(db: object, field: str = "db") -> str:
    """``db`` as the native store opens it: a file path, or a ``postgresql://`` URL
    passed through unchanged (``Path()`` would fold its ``//``). Refuses what is
    neither, which ``str()`` would turn into a file name."""
    if not isinstance(db, str | os.PathLike):
        raise InvalidInputError(f"{field}: expected a path, got {type(db).__name__}")
    path = os.fspath(db)
    if not isinstance(path, str):
        raise InvalidInputError(f"{field}: expected a text path, got bytes")
    if path == ":memory:" or is_postgres_url(path):
        return path
    return str(Path(path))


def open_native(
    db: str | os.PathLike[str],
    *,
    read_only: bool = False,
    synchronous: Literal["normal", "full"] = "normal",
    busy_timeout_ms: int = 30_000,
    encryption_key: EncryptionKey | None = None,
) -> _native.Store:
    """The native store on ``db`` (a path or a ``postgresql://`` URL): the one place
    a database is opened by name, and its key resolved (see
    :mod:`lossless.encryption`: the argument, else ``LOSSLESS_DB_KEY`` or
    ``LOSSLESS_DB_KEY_FILE``)."""
    path = database_path(db)
    key = resolve_key(encryption_key)
    if key is not None and is_postgres_url(path):
        raise InvalidInputError(
            f"{key_source(encryption_key)}: a key encrypts a SQLite file; on PostgreSQL the "
            "server encrypts its storage and sslmode= the connection"
        )
    return _native.Store(path, synchronous, busy_timeout_ms, read_only, key)


def prepare_postgres(url: str) -> int:
    """Create or upgrade the lossless schema in the PostgreSQL database at ``url``
    (``postgresql://user:password@host:port/database``) and return its version.

    Run it once before starting workers against a new server, or after upgrading
    lossless. Many processes may run it at once: the schema is created once.
    Errors name the URL without its password: :class:`~lossless.errors.StoreError`
    for a server that cannot be reached, :class:`~lossless.errors.AccessDeniedError`
    for refused credentials, :class:`~lossless.errors.NotADatabaseError` for a
    database holding another application's tables, and
    :class:`~lossless.errors.SchemaVersionError` for one written by a newer lossless.
    """
    if not isinstance(url, str):
        raise InvalidInputError(f"url: expected a postgresql:// URL, got {type(url).__name__}")
    return _native.prepare_postgres(url)


def enable_tenants(url: str) -> None:
    """Turn row-level security by tenant on for the PostgreSQL database at ``url``
    (its schema created or upgraded first). Run it once, as the tables' owner.

    From then on every row belongs to the tenant of the connection that wrote it
    (:func:`tenant_url`), and a connection reads, writes and erases only its own
    tenant's rows, raw queries included: the server enforces it. A superuser, or a
    role with ``BYPASSRLS``, is not held by it; connect as an ordinary role.
    """
    if not isinstance(url, str) or not is_postgres_url(url):
        raise InvalidInputError("url: expected a postgresql:// URL")
    _native.enable_postgres_tenants(url)


_TENANT = re.compile(r"[A-Za-z0-9_.:@-]{1,128}")


def tenant_url(url: str, tenant: str) -> str:
    """``url`` for a store of ``tenant``: the tenant goes in the connection's
    ``options`` (``-c lossless.tenant=...``), so every connection opened from it,
    a session's second one and the MCP server's included, is the tenant's.

    A tenant is 1 to 128 letters, digits and ``_ . : @ -``."""
    if not is_postgres_url(url):
        raise InvalidInputError(
            "url: tenants are a PostgreSQL feature; expected a postgresql:// URL"
        )
    if not isinstance(tenant, str) or not _TENANT.fullmatch(tenant):
        raise InvalidInputError(
            f"tenant: expected 1 to 128 letters, digits or _ . : @ -, got {tenant!r}"
        )
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "options"]
    query.append(("options", f"-c lossless.tenant={tenant}"))
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


class Store:
    """A connection to a lossless database file.

    Several ``Store`` objects (in one process or several) may open the same file:
    writers take turns, readers never block. ``":memory:"`` gives a private,
    throwaway database. Every write is one transaction.

    With ``read_only=True`` the file must exist (else
    :class:`~lossless.errors.DatabaseNotFoundError`) and is neither created,
    migrated nor written: what the recall functions and the CLI open.

    With ``encryption_key`` (or ``LOSSLESS_DB_KEY`` / ``LOSSLESS_DB_KEY_FILE`` in the
    environment) the file is encrypted: see :mod:`lossless.encryption`. A wrong key,
    a missing one or a key for a plain file raises
    :class:`~lossless.errors.EncryptionKeyError` and leaves the file as it was.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = "lossless.db",
        *,
        synchronous: Literal["normal", "full"] = "normal",
        busy_timeout_ms: int = 30_000,
        read_only: bool = False,
        encryption_key: EncryptionKey | None = None,
    ) -> None:
        self._path = database_path(path, "path")
        self._inner = open_native(
            self._path,
            read_only=read_only,
            synchronous=synchronous,
            busy_timeout_ms=busy_timeout_ms,
            encryption_key=encryption_key,
        )

    @property
    def path(self) -> str:
        """The database file this store opened."""
        return self._path

    @property
    def native(self) -> _native.Store:
        """The native handle, for the library's own modules."""
        return self._inner

    def create_session(
        self, model: str, *, config_json: str = "{}", system_prompt: str | None = None
    ) -> str:
        """Create a session row and return its id."""
        return self._inner.create_session(model, config_json, system_prompt)

    def sessions(self) -> list[SessionRow]:
        """Every session with its message and summary counts."""
        return self._inner.list_sessions()

    def append(self, session_id: str, role: str, parts: PartsInput) -> AppendResult:
        """Append one message; returns its id, sequence number and token count."""
        wire = parts_to_wire(normalize_parts(parts))
        return self._inner.append_message(session_id, role, wire)

    def history(self, session_id: str) -> list[MessageRecord]:
        """Every stored message of a session, oldest first, with parts."""
        return self._inner.history(session_id)

    def history_range(self, session_id: str, low: int, high: int) -> list[MessageRecord]:
        """The messages of a session whose seqs are ``low`` to ``high`` (both
        included), oldest first: a page of a long history, read without the rest."""
        return self._inner.history_range(session_id, low, high)

    def newest_seq(self, session_id: str) -> int:
        """The newest message seq of a session (0 before its first message)."""
        return self._inner.newest_seq(session_id)

    def assemble(
        self, session_id: str, budget_tokens: int, profile: str = "default"
    ) -> tuple[list[dict[str, Any]], int, list[str], int]:
        """The context that fits ``budget_tokens``: (messages, tokens, item ids, items left
        out), rendered for ``profile`` (see :mod:`lossless.profiles`)."""
        return self._inner.assemble(session_id, budget_tokens, profile)

    def grep(
        self,
        query: str,
        *,
        session_id: str | None = None,
        mode: Literal["text", "regex"] = "text",
        limit: int = 20,
    ) -> list[GrepRow]:
        """Search every message part and summary; see :func:`lossless.recall.grep`."""
        return self._inner.grep(query, session_id, mode, limit)

    def describe(
        self, session_id: str | None = None, summary_id: str | None = None
    ) -> list[DagRow]:
        """The summary DAG of a session, or of one summary."""
        return self._inner.describe(session_id, summary_id)

    def summary_node(self, summary_id: str) -> DagRow:
        """One summary of the DAG with the ids of its sources, without its subtree."""
        return self._inner.summary_node(summary_id)

    @property
    def read_only(self) -> bool:
        """Whether this store was opened read-only."""
        return self._inner.read_only

    def expand(
        self,
        summary_id: str,
        *,
        max_tokens: int = 20_000,
        around: str | None = None,
        query: str | None = None,
        before: str | None = None,
        after: str | None = None,
    ) -> ExpansionRow:
        """A window of a summary's source messages within ``max_tokens``; see
        :func:`lossless.recall.expand`."""
        return self._inner.expand(summary_id, max_tokens, around, query, before, after)

    def read(
        self, message_id: str, *, max_tokens: int = 4_000, cursor: int | None = None
    ) -> MessagePageRow:
        """A page of one stored message written out whole; see :func:`lossless.recall.read`."""
        return self._inner.read_message(message_id, max_tokens, cursor)

    def flush_search_index(self) -> int:
        """Moves text still waiting for the full-text index into it; returns the rows written.

        Appends queue their text and searches index the queue first, so a search
        always sees every stored row; calling this in idle time spares the next
        search that work.
        """
        return self._inner.flush_search_index()

    def stats(self) -> StoreStats:
        """Counts over the whole database."""
        return self._inner.stats()

    def events(self, session_id: str) -> list[EventRow]:
        """The persisted event tape of a session."""
        return self._inner.events(session_id)

    def events_page(
        self,
        session_id: str,
        *,
        after: int | None = None,
        before: int | None = None,
        name: str | None = None,
        limit: int = 100,
        newest_first: bool = False,
    ) -> list[EventRow]:
        """At most ``limit`` events of a session's tape with a seq above ``after`` and
        below ``before`` (when given), named ``name`` (when given); the oldest first,
        or the newest first with ``newest_first``."""
        return self._inner.events_page(
            session_id,
            after=after,
            before=before,
            name=name,
            limit=limit,
            newest_first=newest_first,
        )

    def file_ids(self, session_id: str) -> list[str]:
        """Every file id that ever entered the session."""
        return self._inner.session_file_ids(session_id)

    def view_stats(self, session_id: str) -> ViewStats:
        """Item and token counts of the session's context view: ``stats.tokens`` (or,
        as a mapping, ``stats.tokens``)."""
        return self._inner.view_stats(session_id)
