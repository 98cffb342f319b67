"""The store: appends, history, context assembly, the view cache, concurrency, errors."""

from __future__ import annotations

import json
import multiprocessing
import random
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lossless import FileRefPart, Store, TextPart, ToolPart, _native
from lossless._native import MARKER_TOKENS
from lossless.arena._plan import rules_of
from lossless.config import ArenaConfig
from lossless.errors import (
    InvalidInputError,
    LosslessError,
    NotADatabaseError,
    NotFoundError,
    SchemaVersionError,
    SessionNotFoundError,
    StoreError,
)

MODEL = "gpt-4o"
MAX_PART_BYTES = 8 * 1024 * 1024


pytestmark = pytest.mark.both_backends


@pytest.fixture
def db_path(database: Path | str) -> Path | str:
    return database


@pytest.fixture
def store(db_path: Path) -> Store:
    return Store(db_path)


@pytest.fixture
def sid(store: Store) -> str:
    return store.create_session(MODEL)


def raw(path: Path) -> sqlite3.Connection:
    """A plain sqlite3 connection on the store's file, outside the library."""
    return sqlite3.connect(path, isolation_level=None)


def tool_wire(call_id: str, output: str | None = "ok", **fields: Any) -> dict[str, Any]:
    wire = {
        "kind": "tool",
        "name": "read_file",
        "call_id": call_id,
        "input": '{"path": "a.py"}',
        "output": output,
        "status": "completed",
    }
    wire.update(fields)
    return wire


def budget_for(store: Store, sid: str) -> int:
    """A budget that holds the whole view."""
    return store.view_stats(sid)["tokens"]


# --- append writes everything in one transaction -----------------------------------


@pytest.mark.sqlite_only("reads the rows of SQLite's FTS5 index")
def test_append_writes_message_parts_view_item_index_and_counts(
    store: Store, sid: str, db_path: Path
) -> None:
    result = store.append(
        sid,
        "assistant",
        [
            TextPart("the zebra grazes"),
            ToolPart("grep", "call_1", {"q": "x"}, output="found walrus"),
        ],
    )
    conn = raw(db_path)
    role, seq, status, tokens = conn.execute(
        "SELECT role, seq, status, token_count FROM messages WHERE id = ?", (result["id"],)
    ).fetchone()
    assert (role, seq, status, tokens) == (
        "assistant",
        result["seq"],
        "complete",
        result["token_count"],
    )
    parts = conn.execute(
        "SELECT id, kind, body, output, token_count FROM parts"
        " LEFT JOIN tool_outputs ON part_pk = pk WHERE message_id = ? ORDER BY ord",
        (result["id"],),
    ).fetchall()
    assert [p[0] for p in parts] == result["part_ids"]
    assert [p[1] for p in parts] == ["text", "tool"]
    assert parts[0][2] == "the zebra grazes"
    assert parts[1][3] == "found walrus"
    assert all(p[4] > 0 for p in parts)
    # The message's count is the parts' counts plus its framing, and the view item carries it.
    assert tokens > sum(p[4] for p in parts)
    item = conn.execute(
        "SELECT kind, token_count FROM context_items WHERE session_id = ? AND item_id = ?",
        (sid, result["id"]),
    ).fetchone()
    assert item == ("message", tokens)
    # Both parts are queued for the index by the same transaction, and searchable
    # right after the call: a search moves the queue into the index first.
    queued = conn.execute(
        "SELECT p.id FROM search_backlog b JOIN parts p ON p.rowid = b.fts_rowid ORDER BY p.ord"
    ).fetchall()
    assert queued == [(part_id,) for part_id in result["part_ids"]]
    for word in ("zebra", "walrus"):
        assert [hit["owner_id"] for hit in store.grep(word)] == [result["id"]]
        # The index's own rows (its stored columns read without its tokenizer).
        owners = conn.execute(
            "SELECT c2 FROM fts_content WHERE c0 LIKE ?", (f"%{word}%",)
        ).fetchall()
        assert owners == [(result["id"],)]
    assert conn.execute("SELECT count(*) FROM search_backlog").fetchone() == (0,)


def test_flush_search_index_moves_the_queue_once(store: Store, sid: str) -> None:
    store.append(sid, "user", "the capybara swims")
    store.append(sid, "assistant", ["noted", ToolPart("look", "c9", {}, output="otter")])
    assert store.flush_search_index() == 3
    assert store.flush_search_index() == 0
    assert [hit["snippet"] for hit in store.grep("otter")] == ["look {}\n[otter]"]


@pytest.mark.sqlite_only("makes the write fail with a trigger written in SQLite's dialect")
def test_append_is_all_or_nothing(store: Store, sid: str, db_path: Path) -> None:
    store.append(sid, "user", "before")
    conn = raw(db_path)

    def counts() -> tuple[int, ...]:
        return tuple(
            conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("messages", "parts", "context_items", "search_backlog")
        )

    before = counts()
    # Make the last write of an append (its view item) fail inside the transaction.
    conn.execute(
        "CREATE TRIGGER refuse_view BEFORE INSERT ON context_items "
        "BEGIN SELECT RAISE(ABORT, 'test: view insert refused'); END"
    )
    with pytest.raises(StoreError, match="view insert refused"):
        store.append(sid, "user", ["first part", "second part"])
    assert counts() == before
    conn.execute("DROP TRIGGER refuse_view")
    # The store is still usable and its cache did not keep the failed item.
    store.append(sid, "user", "after")
    messages, _, _, omitted = store.assemble(sid, budget_for(store, sid))
    assert [m["content"] for m in messages] == ["before", "after"]
    assert omitted == 0
    seqs = [row["seq"] for row in store.history(sid)]
    assert len(seqs) == len(set(seqs)) == 2


# --- history and rendering -----------------------------------------------------------


def test_history_round_trips_text_tool_and_file_ref_parts(store: Store, sid: str) -> None:
    parts = [
        TextPart("look at this"),
        ToolPart("read_file", "call_7", {"path": "a.py"}, output="print(1)\n", status="completed"),
        FileRefPart("file_0123456789abcdef", "docs/big.md", "markdown", 5000, "a large doc"),
    ]
    store.append(sid, "assistant", parts)
    (record,) = store.history(sid)
    assert record["role"] == "assistant"
    text, tool, file_ref = record["parts"]
    assert text["kind"] == "text"
    assert text["text"] == "look at this"
    assert tool["kind"] == "tool"
    assert (tool["name"], tool["call_id"], tool["input"]) == (
        "read_file",
        "call_7",
        '{"path": "a.py"}',
    )
    assert (tool["output"], tool["status"], tool["error"]) == ("print(1)\n", "completed", None)
    assert file_ref["kind"] == "file_ref"
    assert (file_ref["file_id"], file_ref["path"], file_ref["file_type"]) == (
        "file_0123456789abcdef",
        "docs/big.md",
        "markdown",
    )
    assert (file_ref["token_count"], file_ref["summary"]) == (5000, "a large doc")
    assert not any(p["compacted"] for p in record["parts"])
    assert store.native.get_message(record["id"]) == record


def test_history_gives_each_message_its_own_parts(store: Store, sid: str) -> None:
    native = store.native
    other = store.create_session("gpt-4o")
    streamed = native.begin_message(sid, "assistant")
    for turn in range(3):
        native.append_message(sid, "user", [{"kind": "text", "text": f"question {turn}"}])
        native.append_message(other, "user", [{"kind": "text", "text": f"elsewhere {turn}"}])
    native.begin_message(sid, "assistant")  # no parts yet
    # Finished after later messages were stored: its parts come last on disk.
    native.finish_message(
        streamed, [{"kind": "text", "text": "late answer"}, tool_wire("call_late", "out")], True
    )
    history = store.history(sid)
    assert history[0]["id"] == streamed
    assert [len(record["parts"]) for record in history] == [2, 1, 1, 1, 0]
    assert history == [native.get_message(record["id"]) for record in history]
    assert [part["text"] for part in store.history(other)[0]["parts"]] == ["elsewhere 0"]


def test_assembly_renders_openai_tool_turns(store: Store, sid: str) -> None:
    store.append(sid, "user", "read both files")
    store.native.append_message(
        sid,
        "assistant",
        [
            {"kind": "text", "text": "reading"},
            tool_wire("call_a", "alpha contents"),
            tool_wire(
                "call_b", None, status="error", error="no such file", input='{"path": "b.py"}'
            ),
        ],
    )
    store.append(sid, "assistant", "done")
    messages, tokens, ids, omitted = store.assemble(sid, 100_000)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "assistant"]
    call = messages[1]
    assert call["content"] == "reading"
    assert call["tool_calls"] == [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
        },
        {
            "id": "call_b",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "b.py"}'},
        },
    ]
    assert messages[2] == {"role": "tool", "content": "alpha contents", "tool_call_id": "call_a"}
    assert messages[3]["tool_call_id"] == "call_b"
    assert "no such file" in messages[3]["content"]
    assert "tool_calls" not in messages[0]
    assert "tool_call_id" not in messages[4]
    assert len(ids) == 3
    assert omitted == 0
    assert tokens == budget_for(store, sid)


def test_file_ref_renders_its_id_and_summary(store: Store, sid: str) -> None:
    store.append(
        sid, "user", FileRefPart("file_00ff00ff00ff", "data.csv", "csv", 900, "prices by day")
    )
    (message,), _, _, _ = store.assemble(sid, 10_000)
    assert message["role"] == "user"
    for piece in ("file_00ff00ff00ff", "data.csv", "prices by day"):
        assert piece in message["content"]


def test_tool_part_on_a_user_message_is_shown_as_text(store: Store, sid: str) -> None:
    store.native.append_message(sid, "user", [tool_wire("call_u", "user-run output")])
    (message,), _, _, _ = store.assemble(sid, 10_000)
    assert message["role"] == "user"
    assert "tool_calls" not in message
    assert "user-run output" in message["content"]


# --- budgeted assembly -----------------------------------------------------------


def test_walk_stops_at_the_first_message_that_does_not_fit(store: Store, sid: str) -> None:
    store.append(sid, "user", "old and small")
    store.append(sid, "assistant", "big " * 400)
    store.append(sid, "user", "recent one")
    store.append(sid, "assistant", "recent two")
    items = store.native.view_items(sid)
    small = [items[0]["tokens"], items[2]["tokens"], items[3]["tokens"]]
    # Room for every small message but not the big one: the oldest small one stays out,
    # because the included history is one unbroken tail.
    budget = sum(small) + 1 + MARKER_TOKENS
    assert budget < items[1]["tokens"]
    messages, tokens, ids, omitted = store.assemble(sid, budget)
    # A lead marker says what was left out; it is no view item.
    assert [m["content"] for m in messages[1:]] == ["recent one", "recent two"]
    assert messages[0]["role"] == "user" and "2 earlier messages" in messages[0]["content"]
    assert ids == [items[2]["id"], items[3]["id"]]
    assert tokens == small[1] + small[2] + MARKER_TOKENS
    assert omitted == 2


def test_budget_zero_and_negative_give_an_empty_context(store: Store, sid: str) -> None:
    store.append(sid, "user", "hello")
    for budget in (0, -5):
        assert store.assemble(sid, budget) == ([], 0, [], 1)


def test_tool_call_and_result_are_never_split(store: Store, sid: str) -> None:
    store.native.append_message(sid, "assistant", [tool_wire("call_big", "result " * 300)])
    (item,) = store.native.view_items(sid)
    # The conversation opens with an assistant message: a lead marker comes first.
    room = item["tokens"] + MARKER_TOKENS
    messages, tokens, _, omitted = store.assemble(sid, room - 1)
    assert [m["role"] for m in messages] == ["user"]
    assert (tokens, omitted) == (MARKER_TOKENS, 1)
    messages, tokens, _, omitted = store.assemble(sid, room)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[1]["tool_calls"][0]["id"] == messages[2]["tool_call_id"] == "call_big"
    assert (tokens, omitted) == (room, 0)


def commit_truncation(
    store: Store, sid: str, count: int | None = None, target: int = 400
) -> _native.CommitResult:
    """Summarise the oldest unprotected messages (level 3) and commit the summary."""
    span = store.native.compaction_span(sid)
    ids = span.message_ids[:count]
    summary = store.native.truncate_summary(ids, target)
    return store.native.commit_summary(sid, summary["text"], 3, ids, [], span.view_version)


def test_summaries_come_first_and_are_reserved_before_messages(store: Store, sid: str) -> None:
    for turn in range(8):
        # File ids only where the summary will cover them: the marker of messages
        # left out carries theirs, and this budget has room for a plain marker.
        named = f" file_{turn:08x}" if turn < 3 else ""
        store.append(sid, "user", f"question {turn}{named}")
        store.append(sid, "assistant", f"answer {turn} " + "words " * 40)
    committed = commit_truncation(store, sid, count=6)
    items = store.native.view_items(sid)
    assert items[0]["kind"] == "summary"
    assert items[0]["id"] == committed["summary_id"]
    assert all(item["kind"] == "message" for item in items[1:])
    # Budget: the summary, the lead marker and the newest two messages.
    budget = items[0]["tokens"] + items[-1]["tokens"] + items[-2]["tokens"] + MARKER_TOKENS
    messages, tokens, ids, omitted = store.assemble(sid, budget)
    assert ids == [items[0]["id"], items[-2]["id"], items[-1]["id"]]
    assert messages[0]["role"] == messages[1]["role"] == "user"
    assert "earlier messages are left out" in messages[1]["content"]
    assert messages[0]["content"].startswith(
        f"[summary {committed['summary_id']} of 6 earlier messages"
    )
    # The summary footer keeps the file ids of what it covers.
    for turn in range(3):
        assert f"file_{turn:08x}" in messages[0]["content"]
    assert tokens == budget
    assert omitted == len(items) - 3
    # A budget smaller than the summary still never exceeds the budget.
    messages, tokens, ids, omitted = store.assemble(sid, items[0]["tokens"] - 1)
    assert tokens <= items[0]["tokens"] - 1
    assert items[0]["id"] not in ids


# --- the view cache across connections -------------------------------------------


def test_cache_sees_appends_through_another_store(db_path: Path) -> None:
    a, b = Store(db_path), Store(db_path)
    sid = a.create_session(MODEL)
    a.append(sid, "user", "from a")
    assert [m["content"] for m in a.assemble(sid, 10_000)[0]] == ["from a"]
    b.append(sid, "assistant", "from b")
    assert [m["content"] for m in a.assemble(sid, 10_000)[0]] == ["from a", "from b"]
    a.append(sid, "user", "a again")
    assert [m["content"] for m in b.assemble(sid, 10_000)[0]] == ["from a", "from b", "a again"]
    assert a.view_stats(sid) == b.view_stats(sid)


def test_cache_sees_tool_updates_prunes_and_commits_through_another_store(db_path: Path) -> None:
    a, b = Store(db_path), Store(db_path)
    sid = a.create_session(MODEL)
    a.native.append_message(sid, "assistant", [tool_wire("call_1", None, status="pending")])
    # The conversation opens with the assistant: the context opens with a lead marker.
    first = a.assemble(sid, 100_000)
    assert "no result yet" in first[0][2]["content"]
    b.native.update_tool(sid, "call_1", "completed", output="the output " * 200)
    messages, tokens, _, _ = a.assemble(sid, 100_000)
    assert messages[2]["content"] == "the output " * 200
    assert tokens == b.view_stats(sid)["tokens"] + MARKER_TOKENS > first[1]
    for turn in range(4):
        b.append(sid, "user", f"turn {turn}")
    pruned = b.native.prune(sid, 0, 0, [])
    assert pruned["pruned_parts"] == 1
    messages, tokens, _, _ = a.assemble(sid, 100_000)
    assert "pruned from context" in messages[2]["content"]
    assert tokens == b.view_stats(sid)["tokens"] + MARKER_TOKENS
    committed = commit_truncation(b, sid)
    messages, _, ids, _ = a.assemble(sid, 100_000)
    assert ids[0] == committed["summary_id"]
    assert messages[0]["content"].startswith("[summary")
    assert a.view_stats(sid) == b.view_stats(sid)


# --- concurrency across processes --------------------------------------------------


def _append_worker(path: str, session_id: str | None, worker: int, count: int) -> list[int]:
    store = Store(path)
    if session_id is None:
        session_id = store.create_session(MODEL)
    seqs = []
    for index in range(count):
        parts: list[Any] = [f"worker {worker} message {index}"]
        if index % 3 == 0:
            parts.append(ToolPart("run", f"w{worker}-{index}", {}, output="x" * 500))
        seqs.append(store.append(session_id, "user" if index % 2 else "assistant", parts)["seq"])
    return seqs


def test_processes_append_concurrently_to_one_session(db_path: Path) -> None:
    store = Store(db_path)
    sid = store.create_session(MODEL)
    workers, count = 4, 200
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers) as pool:
        results = pool.starmap(
            _append_worker, [(str(db_path), sid, worker, count) for worker in range(workers)]
        )
    seqs = [seq for result in results for seq in result]
    assert sorted(seqs) == list(range(1, workers * count + 1))
    history = store.history(sid)
    assert [row["seq"] for row in history] == list(range(1, workers * count + 1))
    texts = {row["parts"][0]["text"] for row in history}
    assert texts == {f"worker {w} message {i}" for w in range(workers) for i in range(count)}
    # Each worker's own messages keep their order.
    for worker in range(workers):
        mine = [
            int(t.split()[-1])
            for t in (row["parts"][0]["text"] for row in history)
            if t.startswith(f"worker {worker} ")
        ]
        assert mine == list(range(count))
    items = store.native.view_items(sid)
    assert [item["id"] for item in items] == [row["id"] for row in history]
    assert len({item["position"] for item in items}) == len(items)
    messages, tokens, ids, omitted = store.assemble(sid, 10**9)
    assert (len(ids), omitted) == (workers * count, 0)
    # A conversation opened by the assistant gets a lead marker.
    marker = MARKER_TOKENS if history[0]["role"] == "assistant" else 0
    assert messages[0]["role"] == "user"
    assert tokens == sum(row["token_count"] for row in history) + marker


def test_processes_create_a_new_file_concurrently(db_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        results = pool.starmap(
            _append_worker, [(str(db_path), None, worker, 25) for worker in range(4)]
        )
    assert all(result == list(range(1, 26)) for result in results)
    store = Store(db_path)
    sessions = store.sessions()
    assert len(sessions) == 4
    assert all(row["messages"] == 25 for row in sessions)


# --- opening files ---------------------------------------------------------------


@pytest.mark.sqlite_only("sets the file's PRAGMA user_version")
def test_newer_schema_is_refused_naming_the_path(db_path: Path) -> None:
    store = Store(db_path)
    store.create_session(MODEL)
    assert store.native.schema_version() >= 1
    raw(db_path).execute(f"PRAGMA user_version = {store.native.schema_version() + 1}")
    with pytest.raises(SchemaVersionError, match=str(db_path)) as info:
        Store(db_path)
    assert isinstance(info.value, StoreError)


@pytest.mark.parametrize("size", [16, 100, 4096, 65536])
def test_a_file_of_random_bytes_is_not_a_database(tmp_path: Path, size: int) -> None:
    path = tmp_path / "junk.bin"
    content = random.Random(size).randbytes(size)
    path.write_bytes(content)
    with pytest.raises(NotADatabaseError, match=str(path)):
        Store(path)
    assert path.read_bytes() == content


def test_a_database_of_another_application_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = raw(path)
    conn.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT)")
    conn.execute("INSERT INTO accounts (owner) VALUES ('ada')")
    conn.close()
    with pytest.raises(NotADatabaseError, match=str(path)):
        Store(path)
    assert raw(path).execute("SELECT owner FROM accounts").fetchall() == [("ada",)]


def test_a_directory_is_refused_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=str(tmp_path)):
        Store(tmp_path)


@pytest.mark.parametrize("path", ["missing-parent/deeper/x.db", "/proc/lossless-test.db"])
def test_a_location_that_cannot_hold_a_file_fails_naming_it(tmp_path: Path, path: str) -> None:
    target = tmp_path / path if not path.startswith("/") else Path(path)
    with pytest.raises(StoreError, match=str(target)):
        Store(target)
    assert not target.exists()


def test_an_empty_file_becomes_a_new_database(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    store = Store(path)
    sid = store.create_session(MODEL)
    store.append(sid, "user", "hi")
    assert [row["parts"][0]["text"] for row in Store(path).history(sid)] == ["hi"]


def test_memory_store_is_private(tmp_path: Path) -> None:
    a, b = Store(":memory:"), Store(":memory:")
    sid = a.create_session(MODEL)
    a.append(sid, "user", "hi")
    assert len(a.history(sid)) == 1
    with pytest.raises(SessionNotFoundError):
        b.history(sid)


# --- bad input leaves the store unchanged ----------------------------------------


@pytest.fixture
def seeded(store: Store, sid: str) -> Iterator[tuple[Store, str]]:
    store.append(sid, "user", "first")
    store.native.append_message(sid, "assistant", [tool_wire("call_0", "out")])
    before = (store.history(sid), store.assemble(sid, 100_000), store.stats())
    yield store, sid
    assert (store.history(sid), store.assemble(sid, 100_000), store.stats()) == before


@pytest.mark.parametrize(
    ("role", "parts", "field"),
    [
        ("user", [{"kind": "text", "text": "ok \ud800 no"}], "parts[0].text"),
        (
            "user",
            [{"kind": "text", "text": "fine"}, {"kind": "text", "text": "\udfff"}],
            "parts[1].text",
        ),
        ("assistant", [tool_wire("c1", "out\ud83d")], "parts[0].output"),
        ("assistant", [tool_wire("c1", name="bad\x00name")], "parts[0].name"),
        ("assistant", [tool_wire("call\x00id")], "parts[0].call_id"),
        ("assistant", [tool_wire("")], "parts[0].call_id"),
        ("assistant", [tool_wire("c1", status="finished")], "parts[0].status"),
        ("user", [{"kind": "image", "text": "x"}], "parts[0].kind"),
        ("user", [{"text": "no kind"}], "parts[0].kind"),
        ("user", [{"kind": "text"}], "parts[0].text"),
        ("user", [{"kind": "text", "text": b"bytes"}], "parts[0].text"),
        ("user", ["plain string"], "parts[0]"),
        ("user", [], "parts"),
        ("user", "not a list", "parts"),
        ("tool", [{"kind": "text", "text": "x"}], "role"),
        ("robot", [{"kind": "text", "text": "x"}], "role"),
        ("", [{"kind": "text", "text": "x"}], "role"),
        (
            "user",
            [{"kind": "file_ref", "file_id": "file_12345678", "path": "a", "token_count": -1}],
            "parts[0].token_count",
        ),
        (
            "user",
            [{"kind": "file_ref", "file_id": "file_12345678", "path": "a\nb"}],
            "parts[0].path",
        ),
    ],
)
def test_bad_input_is_refused_naming_the_field(
    seeded: tuple[Store, str], role: str, parts: Any, field: str
) -> None:
    store, sid = seeded
    with pytest.raises(InvalidInputError) as info:
        store.native.append_message(sid, role, parts)
    assert str(info.value).startswith(f"{field}:") or str(info.value).startswith(f"{field}.")
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, LosslessError)


def test_facade_refuses_what_is_not_a_part(seeded: tuple[Store, str]) -> None:
    store, sid = seeded
    for bad in ([], [object()], 42, b"bytes", {"kind": "text", "text": "x"}):
        with pytest.raises(InvalidInputError, match="parts"):
            store.append(sid, "user", bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"parts\[0\]\.text"):
        store.append(sid, "user", "lone \ud800 surrogate")


def test_oversized_text_is_refused(seeded: tuple[Store, str]) -> None:
    store, sid = seeded
    with pytest.raises(InvalidInputError, match=r"parts\[0\]\.text.*limit"):
        store.append(sid, "user", "x" * 50_000_000)
    # The limit counts UTF-8 bytes, not characters.
    with pytest.raises(InvalidInputError, match=r"parts\[1\]\.output"):
        store.append(
            sid, "assistant", ["ok", ToolPart("t", "c", output="é" * (MAX_PART_BYTES // 2 + 1))]
        )


def test_unknown_session_is_a_key_error_and_a_store_error(seeded: tuple[Store, str]) -> None:
    store, _ = seeded
    calls = [
        lambda: store.append("ses_missing", "user", "x"),
        lambda: store.history("ses_missing"),
        lambda: store.assemble("ses_missing", 100),
        lambda: store.view_stats("ses_missing"),
        lambda: store.native.update_tool("ses_missing", "c", "running"),
    ]
    for call in calls:
        with pytest.raises(SessionNotFoundError, match="ses_missing") as info:
            call()
        assert isinstance(info.value, KeyError)
        assert isinstance(info.value, StoreError)
        assert isinstance(info.value, NotFoundError)


def test_nul_inside_text_is_stored_and_read_back_exactly(
    store: Store, sid: str, db_path: Path | str
) -> None:
    text = "before\x00after\x00\x00 end"
    output = "\x00binary-ish\x00"
    if isinstance(db_path, str):
        # PostgreSQL's text cannot hold U+0000: refused as bad input, nothing written.
        for parts in ([text], ["plain", ToolPart("dump", "c1", output=output)]):
            with pytest.raises(InvalidInputError, match="NUL"):
                store.append(sid, "assistant", parts)
        assert store.history(sid) == []
        return
    store.append(sid, "assistant", [text, ToolPart("dump", "c1", output=output)])
    (record,) = store.history(sid)
    assert record["parts"][0]["text"] == text
    assert record["parts"][1]["output"] == output
    # The conversation opens with the assistant: a lead marker comes first.
    messages, _, _, _ = store.assemble(sid, 10_000)
    assert messages[1]["content"] == text
    assert messages[2]["content"] == output


def test_non_bmp_and_combining_text_round_trips(store: Store, sid: str) -> None:
    text = "emoji 🦀🧪, cjk 漢字, combining e\u0301, rtl שלום"
    store.append(sid, "user", text)
    assert store.history(sid)[0]["parts"][0]["text"] == text
    assert store.assemble(sid, 10_000)[0][0]["content"] == text


# --- tool lifecycle ----------------------------------------------------------------


def test_tool_lifecycle_moves_forward_and_then_freezes(store: Store, sid: str) -> None:
    native = store.native
    native.append_message(sid, "assistant", [tool_wire("call_1", None, status="pending")])

    def tool() -> dict[str, Any]:
        return store.history(sid)[0]["parts"][0]

    assert (tool()["status"], tool()["output"]) == ("pending", None)
    native.update_tool(sid, "call_1", "running")
    assert (tool()["status"], tool()["output"]) == ("running", None)
    native.update_tool(sid, "call_1", "completed", output="42 files")
    assert (tool()["status"], tool()["output"]) == ("completed", "42 files")
    assert store.assemble(sid, 10_000)[0][2]["content"] == "42 files"
    tokens = store.view_stats(sid)["tokens"]
    for status, output, error in [
        ("completed", "43 files", None),
        ("running", None, None),
        ("error", None, "late failure"),
        ("completed", None, None),
    ]:
        with pytest.raises(InvalidInputError, match="call_1"):
            native.update_tool(sid, "call_1", status, output=output, error=error)
    assert (tool()["status"], tool()["output"], tool()["error"]) == ("completed", "42 files", None)
    assert store.view_stats(sid)["tokens"] == tokens


def test_tool_output_is_set_once(store: Store, sid: str) -> None:
    native = store.native
    native.append_message(sid, "assistant", [tool_wire("call_2", "partial", status="running")])
    with pytest.raises(InvalidInputError, match="already has a result"):
        native.update_tool(sid, "call_2", "completed", output="rewritten")
    native.update_tool(sid, "call_2", "completed")
    part = store.history(sid)[0]["parts"][0]
    assert (part["status"], part["output"]) == ("completed", "partial")


def test_tool_error_result_is_rendered_and_searchable(store: Store, sid: str) -> None:
    native = store.native
    native.append_message(sid, "assistant", [tool_wire("call_3", None, status="running")])
    native.update_tool(sid, "call_3", "error", error="permission denied for quokka.txt")
    messages, _, _, _ = store.assemble(sid, 10_000)
    assert "permission denied" in messages[2]["content"]
    hits = store.grep("quokka", session_id=sid)
    assert [hit["owner_id"] for hit in hits] == [store.history(sid)[0]["id"]]


def test_tool_update_counts_tokens_of_the_new_output(store: Store, sid: str) -> None:
    native = store.native
    native.append_message(sid, "assistant", [tool_wire("call_4", None, status="pending")])
    before = store.view_stats(sid)["tokens"]
    native.update_tool(sid, "call_4", "completed", output="word " * 1000)
    after = store.view_stats(sid)["tokens"]
    assert after - before >= 990
    # With the lead marker the conversation opens with (it starts with the assistant).
    assert store.assemble(sid, after + MARKER_TOKENS)[1] == after + MARKER_TOKENS
    assert [m["role"] for m in store.assemble(sid, after + MARKER_TOKENS - 1)[0]] == ["user"]


def test_a_tool_call_cannot_go_back_to_pending(store: Store, sid: str) -> None:
    native = store.native
    native.append_message(sid, "assistant", [tool_wire("call_5", None, status="running")])
    with pytest.raises(InvalidInputError, match="already running"):
        native.update_tool(sid, "call_5", "pending")
    native.update_tool(sid, "call_5", "running")
    assert store.history(sid)[0]["parts"][0]["status"] == "running"


def test_an_error_is_shown_whatever_the_status(store: Store, sid: str) -> None:
    # A call can complete with warnings; what it reported (and the file ids in it)
    # is part of the context.
    store.native.append_message(
        sid, "assistant", [tool_wire("call_6", "built", error="warning in file_0000beef")]
    )
    messages, _, _, _ = store.assemble(sid, 10_000)
    assert messages[2]["content"] == "built\n[error] warning in file_0000beef"
    assert store.file_ids(sid) == ["file_0000beef"]


def test_unknown_tool_call_is_not_found(store: Store, sid: str) -> None:
    with pytest.raises(NotFoundError, match="nope"):
        store.native.update_tool(sid, "nope", "completed", output="x")


def test_newest_call_with_a_reused_call_id_is_updated(store: Store, sid: str) -> None:
    native = store.native
    native.append_message(sid, "assistant", [tool_wire("dup", "first result")])
    native.append_message(sid, "assistant", [tool_wire("dup", None, status="running")])
    native.update_tool(sid, "dup", "completed", output="second result")
    outputs = [row["parts"][0]["output"] for row in store.history(sid)]
    assert outputs == ["first result", "second result"]


def test_a_summary_never_covers_an_unfinished_tool_call(store: Store, sid: str) -> None:
    # The call's output (and any file id in it) arrives later; a summary written now
    # could not carry it, so the span leaves out the message holding the call. The
    # newest user message and the newest message stay out of spans too.
    first = store.append(sid, "user", "start")["id"]
    slow = store.native.append_message(
        sid, "assistant", [tool_wire("call_slow", None, status="running")]
    )
    last = store.append(sid, "assistant", "meanwhile")["id"]
    span = store.native.compaction_span(sid, 0, tail_messages=1)
    assert span.message_ids == []
    with pytest.raises(InvalidInputError, match=slow["id"]):
        store.native.commit_summary(
            sid, "all of it", 3, [first, slow["id"], last], [], span.view_version
        )
    assert store.native.view_items(sid)[1]["id"] == slow["id"]
    store.native.update_tool(sid, "call_slow", "completed", output="wrote file_0badc0de")
    span = store.native.compaction_span(sid, 0, tail_messages=1)
    assert span.message_ids == [slow["id"]]
    summary = store.native.truncate_summary(span.message_ids, 500)
    committed = store.native.commit_summary(
        sid, summary["text"], 3, span.message_ids, [], span.view_version
    )
    assert "file_0badc0de" in committed["file_ids"]
    messages, _, ids, _ = store.assemble(sid, 10_000)
    assert ids[1] == committed["summary_id"]
    assert "file_0badc0de" in messages[1]["content"]


def test_finish_turn_stores_the_reply_and_its_event_in_one_transaction(
    store: Store, sid: str
) -> None:
    native = store.native
    streamed = native.begin_message(sid, "assistant")
    payload = {"message_id": streamed, "role": "assistant"}
    text = [{"kind": "text", "text": "the answer"}]
    finished = native.finish_turn(
        sid, streamed, text, True, None, "message_created", json.dumps(payload)
    )
    assert finished["id"] == streamed
    assert finished["view_tokens"] == native.view_stats(sid)["tokens"] > 0
    assert [json.loads(e["payload_json"]) for e in native.events(sid)] == [payload]
    # A reply finished twice is refused whole: no second event, nothing changed.
    with pytest.raises(InvalidInputError, match="already complete"):
        native.finish_turn(sid, streamed, text, True, None, "message_created", json.dumps(payload))
    assert len(native.events(sid)) == 1
    # An event that cannot be recorded is refused before anything is written.
    other = native.begin_message(sid, "assistant")
    with pytest.raises(InvalidInputError, match="JSON"):
        native.finish_turn(sid, other, text, True, None, "message_created", "not json")
    assert native.get_message(other)["status"] == "streaming"
    assert len(native.events(sid)) == 1


_HOLD_THE_WRITE_LOCK = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.read()
connection.execute("ROLLBACK")
"""


@pytest.mark.sqlite_only("another process holds the file's write lock")
def test_a_write_that_cannot_wait_gives_way_to_another_writer(
    store: Store, sid: str, db_path: Path
) -> None:
    """Without ``wait``, a write gives up at once, having written nothing, while
    another process holds the file's write lock (the busy timeout is 30 s); once
    the lock is free, the same call writes."""
    native = store.native
    parts = [{"kind": "text", "text": "hello"}]
    payload = json.dumps({"role": "user"})
    # Another process: two SQLite libraries in one process do not see each other's locks.
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_THE_WRITE_LOCK, str(db_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        started = time.perf_counter()
        assert (
            native.append_turn(sid, "user", parts, "message_created", payload, wait=False) is None
        )
        assert native.begin_message(sid, "assistant", wait=False) is None
        assert time.perf_counter() - started < 1.0
    finally:
        holder.communicate("")
    assert native.history(sid) == [] and native.events(sid) == []
    appended = native.append_turn(sid, "user", parts, "message_created", payload, wait=False)
    assert appended is not None and appended["view_tokens"] > 0
    assert [m["id"] for m in native.history(sid)] == [appended["id"]]
    # A part too large to count at once on an event loop is left to a write that may wait.
    large = [{"kind": "text", "text": "word " * 20_000}]
    assert native.append_turn(sid, "user", large, "message_created", payload, wait=False) is None
    assert len(native.history(sid)) == 1


def test_view_stats_are_typed_and_still_read_by_name(store: Store) -> None:
    sid = store.create_session("gpt-4o")
    store.append(sid, "user", "Migrate every module. Never touch legacy_billing/.")
    stats = store.view_stats(sid)
    assert stats.items == stats.message_items == 1 and stats.summary_items == 0
    assert stats.tokens == stats.instruction_tokens > 0
    # As the mapping the call returned before it had a type of its own.
    assert stats["tokens"] == stats.tokens
    assert dict(stats)["summary_tokens"] == stats.summary_tokens and len(dict(stats)) == 7
    with pytest.raises(KeyError):
        stats["bytes"]
    assert stats == store.view_stats(sid)
    store.append(sid, "assistant", "Reading the modules first.")
    assert store.view_stats(sid).version > stats.version


def test_session_results_are_typed_and_still_read_by_name(store: Store) -> None:
    sid = store.create_session(MODEL, config_json='{"a": 1}', system_prompt="Be brief.")
    store.append(sid, "user", "hello")
    info = store.native.get_session(sid)
    assert (info.id, info.model, info.config_json, info.system_prompt) == (
        sid,
        MODEL,
        '{"a": 1}',
        "Be brief.",
    )
    assert dict(info) == {
        "id": sid,
        "model": MODEL,
        "created_at": info.created_at,
        "config_json": '{"a": 1}',
        "system_prompt": "Be brief.",
    }
    assert info.get("system_prompt") == "Be brief." and info.get("absent", 7) == 7
    assert info.get("absent") is None
    with pytest.raises(KeyError):
        info["absent"]
    (row,) = store.sessions()
    assert list(row.keys()) == ["id", "model", "created_at", "messages", "summaries"]
    assert (row["id"], row.messages, row["summaries"]) == (sid, 1, 0)
    assert row == store.sessions()[0] and row.created_at == info.created_at
    assert store.native.streams(sid) == []
    message_id = store.native.begin_message(sid, "assistant")
    (stream,) = store.native.streams(sid)
    assert dict(stream) == {
        "message_id": message_id,
        "owner": "local",
        "beat_at": stream.beat_at,
        "chars": 0,
    }
    assert stream.message_id == stream["message_id"] and stream["beat_at"] > 0


def test_turn_results_are_typed_and_still_read_by_name(store: Store, sid: str) -> None:
    appended = store.append(sid, "user", ["first", "second"])
    assert list(appended.keys()) == ["id", "seq", "token_count", "part_ids", "redacted"]
    assert (appended["id"], appended["seq"], appended.get("seq")) == (appended.id, 1, 1)
    assert len(appended.part_ids) == 2 and appended.token_count > 0
    assert appended.get("view_tokens", "absent") == "absent"
    payload = json.dumps({"role": "user"})
    parts = [{"kind": "text", "text": "third"}]
    turn = store.native.append_turn(sid, "user", parts, "message_created", payload)
    assert dict(turn) == {
        "id": turn.id,
        "seq": 2,
        "token_count": turn.token_count,
        "part_ids": turn.part_ids,
        "view_tokens": store.view_stats(sid).tokens,
        "redacted": [],
    }
    first, second = store.history(sid)
    assert list(first.keys()) == [
        "id",
        "session_id",
        "seq",
        "role",
        "status",
        "created_at",
        "model",
        "token_count",
        "input_tokens",
        "output_tokens",
        "cost",
        "finish_reason",
        "parts",
    ]
    assert (first.id, first.session_id, first.status, first.cost) == (
        appended.id,
        sid,
        "complete",
        None,
    )
    assert [part["text"] for part in first.parts] == ["first", "second"]
    assert first["parts"] is first.parts and dict(second)["id"] == turn.id
    # Records compare by their fields, the parts' dicts included.
    assert store.native.get_message(first.id) == first and first != second
    with pytest.raises(KeyError):
        first["text"]


def test_event_stats_file_and_map_results_are_typed_and_read_by_name(
    store: Store, sid: str, tmp_path: Path
) -> None:
    store.append(sid, "user", "hello")
    event_id = store.native.append_event(sid, "custom", '{"a": 1}')
    (event,) = [event for event in store.events(sid) if event.name == "custom"]
    assert dict(event) == {
        "id": event.id,
        "seq": event_id,
        "name": "custom",
        "payload_json": '{"a": 1}',
        "created_at": event.created_at,
    }
    stats = store.stats()
    assert (stats.sessions, stats["messages"], stats.get("events")) == (1, 1, stats.events)
    assert list(stats.keys())[:3] == ["sessions", "messages", "parts"] and len(dict(stats)) == 10
    source = tmp_path / "notes.txt"
    source.write_text("one\ntwo\n")
    scan = _native.scan_file(source)
    assert (scan.bytes, scan["lines"], scan.utf8, scan.has_nul) == (8, 2, True, False)
    assert list(scan.keys()) == ["sha256", "file_id", "bytes", "lines", "has_nul", "utf8"]
    record, stored = _native.store_file(
        store.native, source, scan.sha256, "notes.txt", "text", 4, "two lines"
    )
    assert stored and record.file_id == scan["file_id"] and record["line_count"] == 2
    assert _native.file_record(store.native, scan.file_id) == record
    assert dict(record)["summary"] == "two lines" and record.is_text
    map_id = _native.create_map(store.native, "llm", sid, "{}", ['"a"', '"b"'])
    run = _native.map_run(store.native, map_id)
    assert (run.kind, run["parent_id"], run.item_count) == ("llm", sid, 2)
    _native.record_map_outcome(store.native, map_id, 1, True, '"B"', None, None, 1, "{}")
    (outcome,) = _native.map_outcomes(store.native, map_id)
    assert (outcome.idx, outcome["succeeded"], outcome.output, outcome.get("error")) == (
        1,
        True,
        '"B"',
        None,
    )
    with pytest.raises(KeyError):
        outcome["status"]


def test_search_results_are_typed_and_read_by_name(store: Store, sid: str) -> None:
    for turn in range(6):
        store.append(sid, "user", f"question {turn} about the parser")
        store.append(sid, "assistant", f"answer {turn}: the parser rotates tokens")
    span = store.native.compaction_span(sid, protect_user_turns=1)
    store.native.commit_extractive_summary(span, 200)
    (hit, *_) = store.grep("rotates", session_id=sid)
    assert list(hit.keys()) == [
        "session_id",
        "owner_kind",
        "owner_id",
        "part_id",
        "snippet",
        "rank",
        "covering_summary_id",
        "leaf_summary_id",
    ]
    assert hit["owner_id"] == hit.owner_id and hit.session_id == sid
    (node,) = store.describe(sid)
    assert (node.live, node["source_kind"], node.kind) == (True, "message", "leaf")
    assert dict(node)["sources"] == node.sources and len(node.keys()) == 16
    expansion = store.expand(node.id, max_tokens=20_000)
    assert expansion["summary_id"] == node.id and expansion.session_id == sid
    first = expansion.messages[0]
    assert expansion["messages"] is expansion.messages and dict(first)["id"] == first.id
    assert list(first.keys()) == ["id", "seq", "role", "text", "tokens"]
    assert expansion == store.expand(node.id, max_tokens=20_000)
    page = store.read(first.id)
    assert (page.message_id, page["cursor"], page.next_cursor) == (first.id, 0, None)
    with pytest.raises(KeyError):
        page["message"]


def test_arena_and_view_results_are_typed_and_read_by_name(store: Store, sid: str) -> None:
    native = store.native
    rules = rules_of(ArenaConfig(), max_cap=4_000)
    text = "The budget cap is $500."
    writes: list[tuple[str, str, str, str, str | None, bool, bool, int]] = [
        ("truth", "cap", "user", "high", text, False, False, 512)
    ]
    (written,) = native.arena_write(sid, writes, rules)
    assert isinstance(written, _native.ArenaWriteRow)
    assert (written.key, written["accepted"], written.evicted) == ("cap", True, [])
    (entry,) = native.arena_entries(sid)
    assert (entry.zone, entry["priority"], entry.text) == ("truth", "high", text)
    assert dict(entry)["seq"] == entry.seq == written.seq
    plan = native.arena_plan(sid, rules, 1_000, [])
    assert plan is native.arena_plan(sid, rules, 1_000, [])  # the same plan, kept
    truth = plan.zones.truth
    assert plan.zones["truth"] is truth and truth.accepted == entry.tokens
    assert list(plan.zones.keys())[:3] == ["identity", "truth", "task_state"]
    assert plan["injected"] == ["cap"] and "budget cap" in plan.stable
    with pytest.raises(AttributeError):
        plan.cap = 0  # type: ignore[misc]
    zones = [(0, 0, 0)] * 7
    observed = native.arena_observe(sid, rules, zones, [])
    assert (observed.turns, observed["shifts"]) == (1, [])
    store.append(sid, "user", "what is the budget cap?")
    (item,) = native.view_items(sid)
    assert (item.kind, item["role"], dict(item)["seq"]) == ("message", "user", item.seq)
    assert native.recall(sid, "budget", 3, 200) == []


def assert_frozen(*rows: Any) -> None:
    """Every field of each of ``rows`` is read-only."""
    for row in rows:
        for key in dict(row):
            with pytest.raises(AttributeError):
                setattr(row, key, None)


def test_compaction_texts_and_commits_are_typed_and_read_by_name(store: Store, sid: str) -> None:
    for turn in range(6):
        store.append(sid, "user", f"step {turn} reads file_{turn:08x}")
        store.append(sid, "assistant", f"done {turn}: " + "words " * 60)
    native = store.native
    pruned = native.prune(sid, 0, 0, [])
    assert dict(pruned) == {"candidates": 0, "pruned_parts": 0, "tokens_saved": 0}
    assert (pruned.pruned_parts, pruned["tokens_saved"]) == (0, 0)
    span = native.compaction_span(sid, 1)
    by_span, by_list = native.transcript(span), native.transcript(span.message_ids)
    assert list(by_list.keys()) == [
        "text",
        "token_count",
        "message_count",
        "file_ids",
        "message_ids",
    ]
    # A span's text leaves out the ids its caller takes from the span.
    assert by_span.keys() == by_list.keys()[:4] and "message_ids" not in by_span
    assert "message_ids" in by_list and by_list.message_ids == span.message_ids
    assert (by_span.text, by_span["message_count"]) == (by_list["text"], by_list.message_count)
    assert by_span.get("message_ids") is None and by_span == native.transcript(span)
    with pytest.raises(KeyError):
        by_span["message_ids"]
    result = native.commit_extractive_summary(span, 400)
    committed = result.committed
    assert committed is not None and result["committed"] is committed
    assert dict(committed)["messages_covered"] == result.message_count == span.message_count
    (summary,) = native.live_summaries(sid)
    assert (summary.id, summary["kind"], summary.level) == (committed.summary_id, "leaf", 1)
    assert summary == native.live_summaries(sid)[0] and dict(summary)["text"] == result.text
    merged = native.condense_truncate([summary.id], 200)
    assert merged.message_ids == [] and merged["file_ids"] == summary.file_ids
    assert_frozen(pruned, by_span, by_list, result, committed, summary, merged)


def test_a_compaction_round_is_typed_and_read_by_name(store: Store, sid: str) -> None:
    for turn in range(8):
        store.append(sid, "user", f"step {turn} reads file_{turn:08x}")
        store.append(sid, "assistant", f"done {turn}: " + "words " * 60)
    native = store.native
    before = store.view_stats(sid).tokens
    rules = _native.RoundRules(
        before // 2,
        tail_messages=2,
        user_turns=1,
        prune_protect_tokens=0,
        prune_minimum_tokens=0,
        protected_tools=[],
        summary_max_tokens=300,
    )
    # With a model to summarise, the round hands over its span and writes nothing.
    handed = native.compaction_round(sid, rules, before, True)
    assert handed.span is not None and handed["span"] is handed.span
    assert (handed.committed, handed.view_after, handed["saved"]) == ([], None, 0)
    assert handed.span_messages == handed.span.message_count > 0
    done = native.compaction_round(sid, rules, before, False)
    assert done.span is None and done["pruned"] is done.pruned
    assert dict(done.pruned) == {"candidates": 0, "pruned_parts": 0, "tokens_saved": 0}
    (leaf,) = done.committed
    assert done["committed"] is done.committed and list(leaf.keys())[-2:] == ["level", "messages"]
    assert (leaf.level, leaf["messages"]) == (3, handed.span_messages)
    assert done.saved == leaf.tokens_before - leaf["tokens_after"]
    assert done.view_after == store.view_stats(sid).tokens
    assert_frozen(handed, done, leaf)
