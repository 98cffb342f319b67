"""Hostile input: every bad argument, damaged file, failing disk and misbehaving model
server gets a typed error of ``lossless.errors``, and nothing already stored changes.

Each table row names a bad input, the error class it must raise and a fragment of the
message. Argument rows run against a populated database whose every table is read
outside the library before and after the call; file rows compare the bytes of every
file in the directory; server rows check that every row stored before the call is
still there unchanged. Inputs that are not bad (a model reply the store cannot hold
as sent, arguments nested 5,000 levels deep) have tests of their own at the end:
they are stored, not refused.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import lossless
from conftest import TEST_MODEL
from lossless import FileRefPart, Session, Store, TextPart, ToolPart
from lossless.config import CompactionConfig, Config
from lossless.errors import (
    CorruptDatabaseError,
    InvalidInputError,
    LLMError,
    LosslessError,
    NotADatabaseError,
    NotFoundError,
    SchemaVersionError,
    SessionNotFoundError,
    StoreError,
    SummaryNotFoundError,
)
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

pytestmark = pytest.mark.anyio

# The store's limit on one part (rust/core/src/parts.rs, MAX_PART_BYTES).
PART_LIMIT = 8 * 1024 * 1024
HUNDRED_MB = 100 * 1024 * 1024
DEPTH = 5_000
# A JSON object nested DEPTH levels deep, as text.
DEEP_JSON = '{"a":' * DEPTH + "1" + "}" * DEPTH
# The world's tool calls: one still waiting for its result, one completed.
OPEN_CALL = "call_open"
DONE_CALL = "call_0"
# Makes the first turns large enough that a summary of them is smaller than they are.
FILLER = "The walrus was last seen near the northern rocks at low tide. " * 20


def nested_dict(depth: int) -> dict[str, Any]:
    """A dict nested ``depth`` levels deep (built in a loop: it has no recursion limit)."""
    root: dict[str, Any] = {}
    inner = root
    for _ in range(depth - 1):
        inner["a"] = {}
        inner = inner["a"]
    return root


async def open_and_close(model: str, db: Path, session_id: str) -> None:
    async with Session.open(model=model, db=db, session_id=session_id):
        pass


async def call(action: Callable[..., object], *args: Any) -> object:
    """Runs ``action``, awaiting its result when it is a coroutine."""
    result = action(*args)
    if inspect.isawaitable(result):
        return await result
    return result


# -- what "nothing changed" means ----------------------------------------------------------


def database_rows(db: Path) -> dict[str, Counter[str]]:
    """Every row of every table, read with the standard library, read-only.

    The full-text index is compared through the tables that store it (`fts_content`
    and the others): reading the index itself takes its tokenizer, which only the
    library's connections register.
    """
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
                " AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name"
            )
        ]
        return {
            table: Counter(repr(row) for row in conn.execute(f'SELECT * FROM "{table}"'))
            for table in tables
        }
    finally:
        conn.close()


# What a failed model call may add to but never change: everything but the session
# row, whose counters (next sequence number, view version) advance with each append.
CONTENT_TABLES = (
    "messages",
    "parts",
    "tool_outputs",
    "summaries",
    "summary_sources",
    "file_refs",
    "events",
    "context_items",
)


def assert_rows_kept(before: dict[str, Counter[str]], after: dict[str, Counter[str]]) -> None:
    for table in CONTENT_TABLES:
        lost = before[table] - after[table]
        assert not lost, f"{table}: rows changed or gone: {list(lost)[:3]}"


def directory_files(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` with a hash of its bytes."""
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


# -- a populated database --------------------------------------------------------------------


@dataclass
class World:
    """A session with text, a finished and an open tool call, a file reference and a
    summary, on a file that a second store (``store``) also has open."""

    session: Session
    store: Store
    db: Path
    summary_id: str


def world_config(config_for: Callable[..., Config]) -> Config:
    # A short tail so that a forced compaction summarises the first turns; one quick
    # attempt per model call so that a hanging server fails fast.
    return config_for(
        compaction=CompactionConfig(output_budget=1_000, tail_messages=2, protect_user_turns=1),
        llm_overrides={"timeout_s": 0.5, "num_retries": 0},
    )


@pytest.fixture
async def world(tmp_path: Path, config_for: Callable[..., Config]) -> AsyncIterator[World]:
    db = tmp_path / "world.db"
    async with Session.open(model=TEST_MODEL, db=db, config=world_config(config_for)) as session:
        for turn in range(4):
            await session.record(
                "user", f"turn {turn}: find the walrus in file_{turn:08x}. {FILLER}"
            )
            await session.record(
                "assistant",
                [
                    TextPart("looking"),
                    ToolPart("grep", f"call_{turn}", {"q": "walrus"}, output=f"walrus {turn}"),
                ],
            )
        await session.compact()
        await session.record("user", [FileRefPart("file_0000abcd", "notes.md", summary="notes")])
        await session.record(
            "assistant", [ToolPart("read", OPEN_CALL, {"path": "a.py"}, status="pending")]
        )
        summaries = session.store.live_summaries(session.id)
        assert summaries, "the world needs a summary for the summary-id rows"
        store = Store(db)
        # Searches move queued text into the index first; an index already up to date
        # keeps that bookkeeping out of the comparison.
        store.flush_search_index()
        yield World(session, store, db, summaries[0]["id"])


# -- table 1: arguments ------------------------------------------------------------------------


@dataclass(frozen=True)
class Refused:
    """A call with a bad argument, the error it raises and a fragment of its message."""

    name: str
    action: Callable[[World], object]
    error: type[LosslessError]
    fragment: str


def _tool(**fields: Any) -> ToolPart:
    values: dict[str, Any] = {"name": "grep", "call_id": "call_new", "input": {"q": "x"}}
    values.update(fields)
    return ToolPart(**values)


def _assistant_call(call_id: str = "call_new", **function: Any) -> list[dict[str, Any]]:
    """``record_messages`` input: one assistant message with one call to ``function``."""
    entry = {"name": "grep", "arguments": "{}", **function}
    call_entry = {"id": call_id, "type": "function", "function": entry}
    return [{"role": "assistant", "content": None, "tool_calls": [call_entry]}]


TEXT_ROWS = [
    Refused(
        "lone surrogate in text",
        lambda w: w.session.record("user", "broken \ud800 text"),
        InvalidInputError,
        "lone surrogate",
    ),
    Refused(
        "lone surrogate in a tool output",
        lambda w: w.session.record("assistant", [_tool(output="out \udc80")]),
        InvalidInputError,
        "parts[0].output",
    ),
    Refused(
        "lone surrogate in OpenAI content",
        lambda w: w.session.record_messages([{"role": "user", "content": "\udfff"}]),
        InvalidInputError,
        "lone surrogate",
    ),
    Refused(
        "lone surrogate in the second of two OpenAI messages",
        lambda w: w.session.record_messages(
            [{"role": "user", "content": "fine"}, {"role": "user", "content": "\ud800"}]
        ),
        InvalidInputError,
        "messages[1].content: is not valid text",
    ),
    Refused(
        "lone surrogate in an OpenAI call id",
        lambda w: w.session.record_messages(
            [{"role": "user", "content": "fine"}, *_assistant_call(call_id="call_\udc00")]
        ),
        InvalidInputError,
        "messages[1].tool_calls[0].id: is not valid text",
    ),
    Refused(
        "lone surrogate in a call id",
        lambda w: w.session.update_tool("call_\udcff", status="completed", output="x"),
        InvalidInputError,
        "call_id",
    ),
    Refused(
        "lone surrogate in a session id",
        lambda w: Session.load("ses_\ud800", db=w.db),
        InvalidInputError,
        "session_id",
    ),
    Refused(
        "lone surrogate in a system prompt",
        lambda w: Session.create(model="gpt-4o", db=w.db, system_prompt="\ud800"),
        InvalidInputError,
        "system_prompt",
    ),
    Refused(
        "NUL in a call id",
        lambda w: w.session.record("assistant", [_tool(call_id="call\x00id")]),
        InvalidInputError,
        "control character",
    ),
    Refused(
        "NUL in a tool name (OpenAI format)",
        lambda w: w.session.record_messages(_assistant_call(name="gr\x00ep")),
        InvalidInputError,
        "control character",
    ),
    Refused(
        "NUL in a session id",
        lambda w: w.store.append(w.session.id + "\x00", "user", "hello"),
        SessionNotFoundError,
        "no session",
    ),
    Refused(
        "NUL in a summary id",
        lambda w: lossless.expand("sum_\x00", db=w.db),
        SummaryNotFoundError,
        "no summary",
    ),
    Refused(
        "a 100 MB text part",
        lambda w: w.session.record("user", "x" * HUNDRED_MB),
        InvalidInputError,
        f"{PART_LIMIT}-byte limit",
    ),
    Refused(
        "a 100 MB tool output",
        lambda w: w.session.update_tool(OPEN_CALL, status="completed", output="x" * HUNDRED_MB),
        InvalidInputError,
        f"{PART_LIMIT}-byte limit",
    ),
    Refused(
        "100 MB of OpenAI content",
        lambda w: w.session.record_messages([{"role": "user", "content": "x" * HUNDRED_MB}]),
        InvalidInputError,
        f"{PART_LIMIT}-byte limit",
    ),
]

TOOL_INPUT_ROWS = [
    Refused(
        "tool input nested 5,000 levels (a dict)",
        lambda w: w.session.record("assistant", [_tool(input=nested_dict(DEPTH))]),
        InvalidInputError,
        "parts[0].input: nested too deeply",
    ),
    Refused(
        "tool input that is a list",
        lambda w: w.session.record("assistant", [_tool(input=["a", "b"])]),
        InvalidInputError,
        "parts[0].input: expected a dict",
    ),
    Refused(
        "tool input that is None",
        lambda w: w.store.append(w.session.id, "assistant", [_tool(input=None)]),
        InvalidInputError,
        "parts[0].input: expected a dict",
    ),
    Refused(
        "tool input holding NaN",
        lambda w: w.session.record("assistant", [_tool(input={"x": float("nan")})]),
        InvalidInputError,
        "parts[0].input: not valid JSON",
    ),
    Refused(
        "tool input holding a set",
        lambda w: w.session.record("assistant", [_tool(input={"x": {1, 2}})]),
        InvalidInputError,
        "parts[0].input: not valid JSON",
    ),
    Refused(
        "OpenAI arguments that are a dict",
        lambda w: w.session.record_messages(_assistant_call(arguments={"q": "x"})),
        InvalidInputError,
        "arguments' JSON text",
    ),
    Refused(
        "OpenAI arguments that are missing",
        lambda w: w.session.record_messages(_assistant_call(arguments=None)),
        InvalidInputError,
        "arguments' JSON text",
    ),
]

KIND_AND_ID_ROWS = [
    Refused(
        "unknown role",
        lambda w: w.session.record("tool", "hello"),
        InvalidInputError,
        "role",
    ),
    Refused(
        "unknown role (OpenAI format)",
        lambda w: w.session.record_messages([{"role": "developer", "content": "hi"}]),
        InvalidInputError,
        "messages[0].role",
    ),
    Refused(
        "unknown part kind",
        lambda w: w.session.record("user", ["ok", {"kind": "image", "url": "x"}]),
        InvalidInputError,
        "parts[1]",
    ),
    Refused(
        "unknown content part kind (OpenAI format)",
        lambda w: w.session.record_messages(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_audio", "input_audio": {"data": "AA==", "format": "wav"}}
                    ],
                }
            ]
        ),
        InvalidInputError,
        "not supported",
    ),
    Refused(
        "unknown tool status",
        lambda w: w.session.record("assistant", [_tool(status="done")]),
        InvalidInputError,
        "parts[0].status",
    ),
    Refused(
        "unknown session id",
        lambda w: w.store.append("ses_missing", "user", "hello"),
        SessionNotFoundError,
        "ses_missing",
    ),
    Refused(
        "unknown session id (load)",
        lambda w: Session.load("ses_missing", db=w.db),
        SessionNotFoundError,
        "ses_missing",
    ),
    Refused(
        "unknown message id",
        lambda w: w.store.native.get_message("msg_missing"),
        NotFoundError,
        "msg_missing",
    ),
    Refused(
        "unknown summary id (expand)",
        lambda w: lossless.expand("sum_missing", db=w.db),
        SummaryNotFoundError,
        "sum_missing",
    ),
    Refused(
        "unknown summary id (describe)",
        lambda w: lossless.describe("sum_missing", db=w.db),
        SummaryNotFoundError,
        "sum_missing",
    ),
    Refused(
        "unknown call id",
        lambda w: w.session.update_tool("call_missing", status="completed", output="x"),
        NotFoundError,
        "call_missing",
    ),
    Refused(
        "a result for a finished call",
        lambda w: w.session.update_tool(DONE_CALL, status="completed", output="again"),
        InvalidInputError,
        "already completed",
    ),
    Refused(
        "a result that answers no call (OpenAI format)",
        lambda w: w.session.record_messages(
            [{"role": "tool", "tool_call_id": "call_missing", "content": "x"}]
        ),
        InvalidInputError,
        "answers no call",
    ),
    Refused(
        "empty parts",
        lambda w: w.session.record("user", []),
        InvalidInputError,
        "at least one part",
    ),
    Refused(
        "an empty message to the model",
        lambda w: w.session.send("   "),
        InvalidInputError,
        "must not be empty",
    ),
    Refused(
        "empty content parts (OpenAI format)",
        lambda w: w.session.record_messages([{"role": "user", "content": []}]),
        InvalidInputError,
        "empty list",
    ),
]

TYPE_ROWS = [
    Refused(
        "an int as the role",
        lambda w: w.session.record(5, "hello"),
        InvalidInputError,
        "role: expected str, got int",
    ),
    Refused(
        "None as the call id",
        lambda w: w.session.update_tool(None, status="completed", output="x"),
        InvalidInputError,
        "call_id: expected str, got NoneType",
    ),
    Refused(
        "an int as a tool output",
        lambda w: w.session.update_tool(OPEN_CALL, status="completed", output=5),
        InvalidInputError,
        "output: expected str, got int",
    ),
    Refused(
        "an int as a session id",
        lambda w: w.store.history(5),
        InvalidInputError,
        "session_id: expected str, got int",
    ),
    Refused(
        "an int as a tool status",
        lambda w: w.session.update_tool(OPEN_CALL, status=3, output="x"),
        InvalidInputError,
        "status: expected str, got int",
    ),
    Refused(
        "an int as a search mode",
        lambda w: w.store.grep("walrus", mode=5),
        InvalidInputError,
        "mode: expected str, got int",
    ),
    Refused(
        "an int as a database path",
        lambda w: Session.create(model="gpt-4o", db=5),
        InvalidInputError,
        "db: expected a path",
    ),
    Refused(
        "an int as a search query",
        lambda w: lossless.grep(5, session=w.session),
        InvalidInputError,
        "query: expected str, got int",
    ),
    Refused(
        "an int as a tool name",
        lambda w: w.session.record("assistant", [_tool(name=5)]),
        InvalidInputError,
        "parts[0].name: expected str, got int",
    ),
    Refused(
        "a str as a token count",
        lambda w: w.session.record("user", [FileRefPart("file_0000abcd", "a.md", token_count="9")]),
        InvalidInputError,
        "parts[0].token_count",
    ),
    Refused(
        "None as the parts",
        lambda w: w.session.record("user", None),
        InvalidInputError,
        "parts: expected str",
    ),
    Refused(
        "a str as the message list (OpenAI format)",
        lambda w: w.session.record_messages("hello"),
        InvalidInputError,
        "messages: expected a list",
    ),
    Refused(
        "an int as a summary to describe",
        lambda w: lossless.describe(5, db=w.db),
        InvalidInputError,
        "target: expected a summary id, a session id or a Session, got int",
    ),
]

LIMIT_ROWS = [
    Refused(
        "a search limit of zero",
        lambda w: lossless.grep("walrus", session=w.session, limit=0),
        InvalidInputError,
        "limit",
    ),
    Refused(
        "a negative search limit on the store",
        lambda w: w.store.grep("walrus", limit=-1),
        InvalidInputError,
        "limit",
    ),
    Refused(
        "an invalid regular expression",
        lambda w: lossless.grep("(", session=w.session, mode="regex"),
        InvalidInputError,
        "regular expression",
    ),
    Refused(
        "an unknown search mode",
        lambda w: lossless.grep("walrus", session=w.session, mode="glob"),  # type: ignore[arg-type]
        InvalidInputError,
        "mode",
    ),
    Refused(
        "an expansion budget of zero",
        lambda w: lossless.expand(w.summary_id, max_tokens=0, db=w.db),
        InvalidInputError,
        "max_tokens",
    ),
    Refused(
        "an unknown rendering profile",
        lambda w: w.store.assemble(w.session.id, 1_000, "chatml"),
        InvalidInputError,
        "profile",
    ),
    Refused(
        "a busy timeout past SQLite's range (it panicked in the core)",
        lambda w: Store(w.db, busy_timeout_ms=2**40),
        InvalidInputError,
        "busy_timeout_ms",
    ),
    Refused(
        "a negative busy timeout",
        lambda w: Store(w.db, busy_timeout_ms=-1),
        InvalidInputError,
        "busy_timeout_ms",
    ),
    Refused(
        "a database path holding NUL",
        lambda w: Store(f"{w.db}\x00.db"),
        InvalidInputError,
        "path: contains a NUL byte",
    ),
    Refused(
        "a stored session opened for another model",
        lambda w: open_and_close("openai/other", w.db, w.session.id),
        InvalidInputError,
        "model",
    ),
]

ARGUMENT_ROWS = TEXT_ROWS + TOOL_INPUT_ROWS + KIND_AND_ID_ROWS + TYPE_ROWS + LIMIT_ROWS


@pytest.mark.parametrize("row", ARGUMENT_ROWS, ids=lambda row: row.name)
async def test_a_bad_argument_raises_a_typed_error_and_changes_nothing(
    world: World, row: Refused
) -> None:
    before = database_rows(world.db)
    with pytest.raises(row.error, match=re.escape(row.fragment)):
        await call(row.action, world)
    assert database_rows(world.db) == before
    # The session is still usable afterwards.
    await world.session.record("user", "still here")


# -- table 2: files --------------------------------------------------------------------------


@dataclass(frozen=True)
class BadFile:
    """A file (or a place) that is not a usable lossless database, and how it is opened."""

    name: str
    make: Callable[[Path, ExitStack], Path]
    error: type[LosslessError]
    fragment: str
    open: Callable[[Path], object] = field(default=lambda path: Store(path))
    # SQLite leaves an empty -wal file and its index beside a database it could open
    # only read-only: it may not remove them without the write lock.
    leaves_wal_files: bool = False


def lossless_file(directory: Path, *, keep_open: bool = False) -> bytes:
    """The bytes of a real lossless database, as its main file holds them: closed
    (everything checkpointed into it), or still open (recent writes in its -wal file)."""
    source = directory / "source" / "real.db"
    source.parent.mkdir()
    store = Store(source)
    for _ in range(3):
        session_id = store.create_session("gpt-4o")
        for turn in range(20):
            store.append(session_id, "user", f"turn {turn} " + "lorem ipsum " * 40)
    if keep_open:
        data = source.read_bytes()
        del store
        return data
    del store
    return source.read_bytes()


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def truncated(keep_open: bool) -> Callable[[Path, ExitStack], Path]:
    def make(directory: Path, cleanup: ExitStack) -> Path:
        data = lossless_file(directory, keep_open=keep_open)
        return write(directory / "cut.db", data[:5_000])

    return make


def garbled_parts_root(directory: Path, cleanup: ExitStack) -> Path:
    """A real database whose ``parts`` table's root page is overwritten with 0xFF."""
    data = bytearray(lossless_file(directory))
    conn = sqlite3.connect(directory / "source" / "real.db")
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'parts'").fetchone()
    conn.close()
    start = (root - 1) * page_size
    data[start : start + page_size] = b"\xff" * page_size
    return write(directory / "garbled.db", bytes(data))


def other_application(journal_mode: str) -> Callable[[Path, ExitStack], Path]:
    def make(directory: Path, cleanup: ExitStack) -> Path:
        path = directory / "accounts.db"
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute(f"PRAGMA journal_mode = {journal_mode}")
        conn.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT)")
        conn.execute("INSERT INTO accounts (owner) VALUES ('ada')")
        conn.close()
        return path

    return make


def version_without_tables(directory: Path, cleanup: ExitStack) -> Path:
    path = directory / "hollow.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA user_version = 3")
    conn.close()
    return path


def newer_schema(directory: Path, cleanup: ExitStack) -> Path:
    path = directory / "future.db"
    Store(path).create_session("gpt-4o")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    return path


def read_only(path: Path, cleanup: ExitStack) -> None:
    """Makes ``path`` unwritable, for root too (whom file modes do not stop), until
    ``cleanup`` closes."""
    mode = path.stat().st_mode
    path.chmod(0o555 if path.is_dir() else 0o444)
    cleanup.callback(path.chmod, mode)
    if os.geteuid() != 0:
        return
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("running as root without chattr: nothing can make a path read-only")
    cleanup.callback(subprocess.run, ["chattr", "-i", str(path)], check=True)


def in_read_only_directory(directory: Path, cleanup: ExitStack) -> Path:
    locked = directory / "locked"
    locked.mkdir()
    read_only(locked, cleanup)
    return locked / "new.db"


def read_only_database(directory: Path, cleanup: ExitStack) -> Path:
    path = directory / "readonly.db"
    store = Store(path)
    store.append(store.create_session("gpt-4o"), "user", "kept")
    del store
    read_only(path, cleanup)
    return path


def append_to_every_session(path: Path) -> None:
    store = Store(path)
    try:
        for session in store.sessions():
            store.append(session["id"], "user", "one more")
    finally:
        # Closes the connection (and removes its -wal file) even while the error's
        # traceback keeps this frame alive.
        del store


def read_every_session(path: Path) -> None:
    store = Store(path)
    try:
        for session in store.sessions():
            store.history(session["id"])
    finally:
        del store


FILE_ROWS = [
    BadFile(
        "the first 5,000 bytes of a closed database",
        truncated(keep_open=False),
        CorruptDatabaseError,
        "damaged",
    ),
    BadFile(
        "the first 5,000 bytes of a database still open",
        truncated(keep_open=True),
        CorruptDatabaseError,
        "damaged",
    ),
    BadFile(
        "a truncated database, through Session.create",
        truncated(keep_open=False),
        CorruptDatabaseError,
        "damaged",
        open=lambda path: Session.create(model="gpt-4o", db=path),
    ),
    BadFile(
        "a database whose parts table is garbled",
        garbled_parts_root,
        CorruptDatabaseError,
        "damaged",
        open=read_every_session,
    ),
    BadFile(
        "a database of another application",
        other_application("DELETE"),
        NotADatabaseError,
        "another application",
    ),
    BadFile(
        "a database of another application in WAL mode",
        other_application("WAL"),
        NotADatabaseError,
        "another application",
    ),
    BadFile(
        "a plain text file named .db",
        lambda directory, cleanup: write(directory / "notes.db", b"just some notes\n" * 300),
        NotADatabaseError,
        "not a database",
    ),
    BadFile(
        "random bytes",
        lambda directory, cleanup: write(directory / "noise.db", random.Random(7).randbytes(8192)),
        NotADatabaseError,
        "not a",
    ),
    BadFile(
        "a lossless version number without its tables",
        version_without_tables,
        CorruptDatabaseError,
        "missing",
    ),
    BadFile(
        "a database written by a newer lossless",
        newer_schema,
        SchemaVersionError,
        "newer",
    ),
    BadFile(
        "a directory",
        lambda directory, cleanup: directory,
        StoreError,
        "directory",
    ),
    BadFile(
        "a missing parent directory",
        lambda directory, cleanup: directory / "missing" / "x.db",
        StoreError,
        "cannot open",
    ),
    BadFile(
        "a new database in a read-only directory",
        in_read_only_directory,
        StoreError,
        "cannot open",
    ),
    BadFile(
        "an append to a read-only database file",
        read_only_database,
        StoreError,
        "readonly",
        open=append_to_every_session,
        leaves_wal_files=True,
    ),
    BadFile(
        "a search of a database that does not exist",
        lambda directory, cleanup: directory / "missing.db",
        StoreError,
        "no such database",
        open=lambda path: lossless.grep("walrus", db=path),
    ),
]


@pytest.mark.parametrize("row", FILE_ROWS, ids=lambda row: row.name)
async def test_a_bad_file_raises_a_typed_error_naming_it_and_is_left_as_it_was(
    tmp_path: Path, row: BadFile
) -> None:
    with ExitStack() as cleanup:
        path = row.make(tmp_path, cleanup)
        before = directory_files(tmp_path)
        with pytest.raises(row.error, match=re.escape(row.fragment)) as raised:
            await call(row.open, path)
        assert str(path) in str(raised.value)
        after = directory_files(tmp_path)
        if row.leaves_wal_files:
            assert after.pop(f"{path.name}-wal") == hashlib.sha256(b"").hexdigest()
            after.pop(f"{path.name}-shm")
        assert after == before


# A child process that appends a part larger than what its file-size limit lets the
# database grow by. SIGXFSZ would kill it; ignored, the write fails with EFBIG instead,
# as a write to a full disk fails with ENOSPC.
FULL_DISK_CHILD = textwrap.dedent(
    """
    import os, resource, signal, sys
    from lossless import Store
    from lossless.errors import LosslessError

    store = Store(sys.argv[1])
    session_id = store.sessions()[0]["id"]
    limit = os.path.getsize(sys.argv[1])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        store.append(session_id, "user", "lorem ipsum " * 300_000)
    except LosslessError as err:
        print(type(err).__name__)
        print(err)
    else:
        print("stored")
    """
)


def test_a_full_disk_raises_a_store_error_and_keeps_what_was_stored(tmp_path: Path) -> None:
    db = tmp_path / "full.db"
    store = Store(db)
    session_id = store.create_session("gpt-4o")
    for turn in range(10):
        store.append(session_id, "user", f"kept {turn}")
    del store
    before = database_rows(db)
    child = subprocess.run(
        [sys.executable, "-c", FULL_DISK_CHILD, str(db)],
        capture_output=True,
        text=True,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        check=True,
    )
    name, message = child.stdout.split("\n", 1)
    assert issubclass(getattr(lossless.errors, name), StoreError), child.stdout
    assert str(db) in message
    assert database_rows(db) == before
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    Store(db).append(session_id, "user", "room again")


# -- table 3: the model server -----------------------------------------------------------------


@dataclass(frozen=True)
class ServerFault:
    """Replies a misbehaving server sends to one model call, and a fragment of the error."""

    name: str
    replies: tuple[Reply, ...]
    fragment: str


SERVER_ROWS = [
    ServerFault("HTTP 500", (Reply(status=500, text="overloaded"),), "overloaded"),
    ServerFault("HTTP 429", (Reply(status=429, text="slow down"),), "slow down"),
    ServerFault("HTTP 400", (Reply(status=400, text="bad request"),), "bad request"),
    ServerFault("a hang past the timeout", (Reply(hang=True),), "Timeout"),
    ServerFault("garbage instead of a stream", (Reply(malformed=True),), "model call failed"),
    ServerFault(
        "garbage after some text",
        (Reply(text="one two three four five six", malformed=True),),
        "stream broke",
    ),
    ServerFault(
        "a connection closed before any content",
        (Reply(text="never sent", disconnect_after_chunks=0),),
        "model call failed",
    ),
]


@pytest.mark.parametrize("row", SERVER_ROWS, ids=lambda row: row.name)
async def test_a_misbehaving_server_raises_llm_error_and_keeps_every_stored_row(
    world: World, server: LocalLLMServer, row: ServerFault
) -> None:
    before = database_rows(world.db)
    server.enqueue(*row.replies)
    with pytest.raises(LLMError, match=re.escape(row.fragment)):
        await world.session.send("are you there?")
    assert_rows_kept(before, database_rows(world.db))
    # The user turn is kept; whatever streamed before the failure is flagged incomplete.
    history = world.session.history()
    asked = max(index for index, message in enumerate(history) if message.role == "user")
    assert (history[asked].text, history[asked].status) == ("are you there?", "complete")
    assert all(message.status == "incomplete" for message in history[asked + 1 :])
    assert row.fragment not in json.dumps(world.session.build_context().messages)


# -- inputs that are stored, not refused -------------------------------------------------------


@dataclass(frozen=True)
class OddReply:
    """A model reply the store cannot hold as sent, and what must be stored of it."""

    name: str
    reply: Reply
    check: Callable[[ToolPart | TextPart], bool]


ODD_REPLIES = [
    OddReply(
        "a tool name with a newline",
        Reply(tool_calls=[ToolCallSpec("read\nfile", {"path": "a.py"}, id="call_named")]),
        lambda part: (
            isinstance(part, ToolPart)
            and part.call_id == "call_named"
            and part.name == "read\ufffdfile"
        ),
    ),
    OddReply(
        "a call id of 600 characters",
        Reply(tool_calls=[ToolCallSpec("read", {"path": "a.py"}, id="c" * 600)]),
        lambda part: (
            isinstance(part, ToolPart)
            and part.call_id.startswith("call_")
            and len(part.call_id) < 512
        ),
    ),
    OddReply(
        "text holding a lone surrogate",
        Reply(text="half \ud800 a character"),
        lambda part: isinstance(part, TextPart) and part.text == "half \ufffd a character",
    ),
    OddReply(
        "arguments nested 5,000 levels",
        Reply(tool_calls=[ToolCallSpec("read", DEEP_JSON, id="call_deep")]),
        lambda part: isinstance(part, ToolPart) and part.input == DEEP_JSON,
    ),
]


@pytest.mark.parametrize("row", ODD_REPLIES, ids=lambda row: row.name)
async def test_a_reply_the_store_cannot_hold_as_sent_is_stored_cleaned(
    world: World, server: LocalLLMServer, row: OddReply
) -> None:
    before = database_rows(world.db)
    server.enqueue(row.reply)
    result = await world.session.send("go on")
    reply = world.session.history()[-1]
    assert (reply.id, reply.status) == (result.message_id, "complete")
    assert any(row.check(part) for part in reply.parts), reply.parts
    assert [call.call_id for call in result.tool_calls] == [
        part.call_id for part in reply.parts if isinstance(part, ToolPart)
    ]
    assert_rows_kept(before, database_rows(world.db))


RECALL_GARBAGE = [
    ("lossless_grep", DEEP_JSON, "nested too deeply"),
    ("lossless_grep", '{"query": "walrus", "limit": "many"}', "limit: expected an integer"),
    ("lossless_grep", '{"query": "walrus", "limit": -3}', "limit: must be at least 1"),
    ("lossless_expand", '{"summary_id": "sum_x", "max_tokens": 1e400}', "max_tokens: expected"),
    ("lossless_grep", "[1, 2]", "expected a JSON object"),
]


@pytest.mark.parametrize(("tool", "arguments", "fragment"), RECALL_GARBAGE)
async def test_recall_calls_with_garbage_arguments_are_answered_with_an_error(
    world: World, server: LocalLLMServer, tool: str, arguments: str, fragment: str
) -> None:
    server.enqueue(
        Reply(tool_calls=[ToolCallSpec(tool, arguments, id="call_recall")]),
        Reply(text="understood"),
    )
    result = await world.session.send("search your memory", tools="recall")
    assert result.text == "understood"
    answered = [
        part
        for message in world.session.history()
        for part in message.parts
        if isinstance(part, ToolPart) and part.call_id == "call_recall"
    ]
    assert [(part.status, part.input) for part in answered] == [("error", arguments)]
    assert fragment in (answered[0].error or "")


async def test_arguments_nested_5000_levels_are_kept_and_render_as_an_empty_object(
    world: World,
) -> None:
    session = world.session
    await session.record_messages(
        [
            {"role": "user", "content": "nest"},
            *_assistant_call(arguments=DEEP_JSON),
            {"role": "tool", "tool_call_id": "call_new", "content": "nested result"},
        ]
    )
    await session.record("assistant", [ToolPart("read", "call_deep", DEEP_JSON, status="pending")])
    await session.update_tool("call_deep", status="completed", output=DEEP_JSON)
    stored = [
        part
        for message in session.history()
        for part in message.parts
        if isinstance(part, ToolPart)
    ]
    assert [part.input for part in stored[-2:]] == [DEEP_JSON, DEEP_JSON]
    calls = [
        entry
        for message in session.build_context().messages
        for entry in message.get("tool_calls") or []
        if entry["id"] in ("call_new", "call_deep")
    ]
    assert [entry["function"]["arguments"] for entry in calls] == ["{}", "{}"]
    result = await session.compact()
    assert result.error is None
    assert lossless.grep("nested result", session=session)


async def test_expand_reads_the_database_it_is_given(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It opened lossless.db in the working directory, whatever ``db`` said.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    expansion = lossless.expand(world.summary_id, db=str(world.db))
    assert expansion.total_messages > 0
    assert list(elsewhere.iterdir()) == []


def test_grep_over_a_whole_database_named_by_a_str_path(tmp_path: Path) -> None:
    db = tmp_path / "whole.db"
    store = Store(db)
    store.append(store.create_session("gpt-4o"), "user", "the walrus sleeps")
    hits = lossless.grep("walrus", db=str(db))
    assert [hit.snippet for hit in hits] == ["the [walrus] sleeps"]
