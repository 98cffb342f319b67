"""Exception hierarchy of lossless.

Every error the library raises on purpose derives from :class:`LosslessError`.
Where a builtin fits, the class derives from it too, so ``except KeyError`` and
``except ValueError`` keep working: an unknown id is a ``KeyError``, bad input a
``ValueError``. The native core raises these same classes.
"""

from __future__ import annotations

__all__ = [
    "AccessDeniedError",
    "ArenaFullError",
    "ChatTemplateError",
    "CompactionBusyError",
    "ConfigError",
    "CorruptDatabaseError",
    "DatabaseNotFoundError",
    "EncryptionKeyError",
    "FileInputError",
    "FileTooLargeError",
    "HistoryDivergedError",
    "ImmutableRowError",
    "InvalidInputError",
    "LLMError",
    "LosslessError",
    "MapConflictError",
    "MissingFileError",
    "NotADatabaseError",
    "NotFoundError",
    "SchemaVersionError",
    "SessionBusyError",
    "SessionClosedError",
    "SessionNotFoundError",
    "StoreBusyError",
    "StoreError",
    "SummaryNotFoundError",
    "TlsError",
    "TranscriptError",
    "UnknownModelError",
]


class LosslessError(Exception):
    """Root of every error raised by lossless."""


class InvalidInputError(LosslessError, ValueError):
    """An argument was rejected; the message names the field and the reason."""


class FileInputError(InvalidInputError):
    """A file handed over cannot be taken: a directory, an empty or unreadable file.
    The message names the path; nothing was stored."""


class MediaInputError(InvalidInputError):
    """An image or a document cannot be taken: bytes that are no image (or disagree
    with their declared type), a data URL that is not base64, a document over
    ``media.max_document_bytes``, a content part kind that is not supported. The
    message names the part; nothing was stored."""


class MissingFileError(FileInputError, FileNotFoundError):
    """No file at the path handed over. Also a ``FileNotFoundError``."""


class FileTooLargeError(FileInputError):
    """The file is larger than ``files.max_file_bytes``; nothing was stored."""


class HistoryDivergedError(InvalidInputError):
    """A history handed to ``Session.sync`` no longer extends what the session
    stored (an earlier message edited or removed, a retry that rewinds), and the
    call asked to be told rather than fork. ``index`` is the first position that
    differs; ``stored`` how many positions the session holds. Nothing was stored."""

    def __init__(self, index: int, stored: int) -> None:
        super().__init__(
            f"messages[{index}] differs from what this session stored "
            f"({stored} messages handed over before); nothing was stored. "
            "Pass on_change='fork' to go on in a fork from the first difference"
        )
        self.index = index
        self.stored = stored


class TranscriptError(InvalidInputError):
    """A line of an agent's transcript (a JSONL file handed to
    :mod:`lossless.imports`) cannot be read: not JSON, or not the shape its format
    gives a line. ``path`` and ``line`` (1-based) name it; nothing of that
    transcript was stored."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


class ArenaFullError(LosslessError):
    """A new arena key was refused at the session's entry ceiling by its degradation
    policy; nothing was written. An update of a live key is never refused."""


class ConfigError(InvalidInputError):
    """A configuration value is out of range or inconsistent."""


class UnknownModelError(InvalidInputError):
    """The model is not in litellm's model map and no limits were configured."""


class StoreError(LosslessError):
    """The store (a SQLite file or a PostgreSQL database) failed; nothing was half-written."""


class AccessDeniedError(StoreError, PermissionError):
    """The database server refused the credentials, or the role may not use the
    database. The message names the URL without its password. Also a ``PermissionError``."""


class TlsError(StoreError):
    """The connection to the PostgreSQL server could not be secured as the URL's
    ``sslmode`` asks: the server offers no TLS, or its certificate does not verify
    (an issuer not in ``sslrootcert``, a certificate for another host name). The
    message names the URL without its password; no credentials were sent."""


class DatabaseNotFoundError(StoreError, FileNotFoundError):
    """A database was to be read at a path where there is no file; reading never
    creates one. Also a ``FileNotFoundError``."""


class NotADatabaseError(StoreError):
    """The path exists but is not a SQLite database."""


class EncryptionKeyError(NotADatabaseError):
    """The database is encrypted and the key given does not open it, or no key was
    given; or a key was given for a database that is not encrypted. The message
    says which, and never holds the key. Nothing was written to the file."""


class CorruptDatabaseError(NotADatabaseError):
    """The file is a lossless database, or was one, but is damaged: cut short, or with
    pages that do not read back. Nothing was written to it."""


class SchemaVersionError(StoreError):
    """The database was written by a newer lossless than this one, or, opened
    read-only, by one too old to read without upgrading (open it for writing once)."""


class StoreBusyError(StoreError):
    """Another writer held the database longer than the busy timeout."""


class ImmutableRowError(StoreError):
    """A statement tried to delete or rewrite stored content."""


class NotFoundError(LosslessError, KeyError):
    """An id does not name a stored row."""

    def __str__(self) -> str:
        # KeyError.__str__ quotes its argument; keep the message readable.
        return str(self.args[0]) if self.args else ""


class SessionNotFoundError(NotFoundError, StoreError):
    """No session has this id."""


class SummaryNotFoundError(NotFoundError):
    """No summary has this id."""


class SessionClosedError(LosslessError):
    """The session was closed; open it again with ``Session.load``."""


class SessionBusyError(LosslessError):
    """Another ``send`` is already running on this session."""


class CompactionBusyError(LosslessError):
    """Another compaction holds the lease, or the sources of a summary left the view."""


class MapConflictError(LosslessError):
    """An item of a map run that already succeeded was to be recorded again: an
    item succeeds at most once."""


class LLMError(LosslessError):
    """The model call failed after its retries; the user turn stays stored."""


class ChatTemplateError(LLMError):
    """The server refused the request while rendering it with the model's chat
    template (roles that do not alternate, a tool-call id or a number of calls the
    template does not take). Sending it again unchanged would fail the same way."""
