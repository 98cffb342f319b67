"""Stored content is append-only for every connection, enforced by the database itself.

These tests bypass the library and talk to the file through Python's own sqlite3.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lossless import Store, ToolPart

MODEL = "gpt-4o"

# Every statement here must be refused whatever the stored content.
FORBIDDEN = [
    "DELETE FROM sessions",
    "DELETE FROM messages",
    "DELETE FROM parts",
    "DELETE FROM summaries",
    "DELETE FROM summary_sources",
    "DELETE FROM events",
    "DELETE FROM tool_outputs",
    "DELETE FROM messages WHERE role = 'user'",
    "DELETE FROM parts WHERE kind = 'tool'",
    "UPDATE sessions SET model = 'gpt-4'",
    "UPDATE sessions SET system_prompt = 'obey'",
    "UPDATE sessions SET config = '{}' || config",
    "UPDATE messages SET role = CASE role WHEN 'user' THEN 'assistant' ELSE 'user' END",
    "UPDATE messages SET seq = seq + 1000",
    "UPDATE messages SET created_at = created_at + 1",
    "UPDATE messages SET token_count = token_count + 1",
    "UPDATE parts SET body = body || 'x'",
    "UPDATE parts SET kind = 'text' WHERE kind = 'tool'",
    "UPDATE tool_outputs SET output = output || 'x'",
    "UPDATE parts SET tool_status = 'error' WHERE tool_status = 'completed'",
    "UPDATE parts SET file_ids = NULL WHERE file_ids IS NOT NULL",
    "UPDATE parts SET token_count = token_count + 1",
    "UPDATE summaries SET text = 'rewritten'",
    "UPDATE summaries SET file_ids = NULL",
    "UPDATE summary_sources SET source_id = 'msg_x'",
    "UPDATE events SET payload = '{}'",
    # REPLACE deletes the old row without firing DELETE triggers: refused on insert.
    "INSERT OR REPLACE INTO messages SELECT id, session_id, seq, 'system', created_at, model,"
    " status, token_count, input_tokens, output_tokens, cost, finish_reason FROM messages",
    "REPLACE INTO parts (pk, id, message_id, session_id, msg_seq, ord, kind, body, tool_name,"
    " call_id, tool_status, tool_error, token_count, output_tokens, file_ids,"
    " compacted_at, compacted_tokens) SELECT pk, id, message_id, session_id, msg_seq, ord, kind,"
    " 'gone', tool_name, call_id, tool_status, tool_error, token_count,"
    " output_tokens, file_ids, compacted_at, compacted_tokens FROM parts",
    "REPLACE INTO tool_outputs SELECT part_pk, 'gone' FROM tool_outputs",
    "REPLACE INTO summaries SELECT pk, id, session_id, kind, level, 'gone', token_count,"
    " span_start_seq, span_end_seq, message_count, depth, file_ids, created_at, superseded_by"
    " FROM summaries",
    "REPLACE INTO sessions SELECT id, 'gpt-4', created_at, config, system_prompt,"
    " view_version, next_seq, next_position FROM sessions",
    "REPLACE INTO events SELECT session_id, seq, id, 'renamed', payload, created_at FROM events",
]

DELETES = [
    "DELETE FROM sessions",
    "DELETE FROM messages",
    "DELETE FROM parts",
    "DELETE FROM summaries",
    "DELETE FROM summary_sources",
    "DELETE FROM events",
    "DELETE FROM tool_outputs",
]


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def snapshot(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every append-only table."""
    tables = [
        "sessions",
        "messages",
        "parts",
        "summaries",
        "summary_sources",
        "events",
        "file_refs",
        "tool_outputs",
    ]
    return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in tables}


def populate(store: Store, texts: list[str], outputs: list[str]) -> str:
    """A session with messages, tool calls, a committed summary and an event."""
    sid = store.create_session(MODEL, system_prompt="be brief")
    for index, text in enumerate(texts):
        store.append(sid, "user", f"{text} file_{index:08x}")
        output = outputs[index % len(outputs)] if outputs else "done"
        store.append(
            sid, "assistant", ["ok", ToolPart("run", f"c{index}", {"i": index}, output=output)]
        )
    for turn in range(2):
        store.append(sid, "user", f"protected {turn}")
    span = store.native.compaction_span(sid)
    summary = store.native.truncate_summary(span.message_ids, 300)
    store.native.commit_summary(sid, summary["text"], 3, span.message_ids, [], span.view_version)
    store.native.append_event(sid, "compaction_completed", '{"ok": true}')
    return sid


@pytest.fixture
def populated(tmp_path: Path) -> Iterator[tuple[Path, sqlite3.Connection]]:
    path = tmp_path / "store.db"
    populate(Store(path), ["alpha", "beta", "gamma"], ["out one", "out two"])
    conn = raw(path)
    yield path, conn
    conn.close()


def assert_refused(conn: sqlite3.Connection, statement: str) -> None:
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute(statement)


@pytest.mark.parametrize("statement", DELETES)
def test_deletes_are_refused(populated: tuple[Path, sqlite3.Connection], statement: str) -> None:
    _, conn = populated
    before = snapshot(conn)
    table = statement.split()[-1]
    assert before[table], f"{table} should hold rows for this test to mean anything"
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute(statement)
    assert snapshot(conn) == before


@pytest.mark.parametrize("statement", FORBIDDEN, ids=lambda s: s[:48])
def test_forbidden_statements_are_refused_and_change_nothing(
    populated: tuple[Path, sqlite3.Connection], statement: str
) -> None:
    path, conn = populated
    before = snapshot(conn)
    assert_refused(conn, statement)
    assert snapshot(conn) == before
    # Inside an explicit transaction, the refusal does not leave partial changes either.
    conn.execute("BEGIN")
    assert_refused(conn, statement)
    conn.execute("COMMIT")
    assert snapshot(conn) == before
    # The library still reads the same history.
    store = Store(path)
    (session,) = store.sessions()
    assert len(store.history(session["id"])) == 8


def test_replacing_summary_edges_keeps_every_stored_edge(
    populated: tuple[Path, sqlite3.Connection],
) -> None:
    # Every column of an edge is its key: REPLACE can only put back the same row, or
    # add a row beside the stored ones; it never changes or drops a stored edge.
    _, conn = populated
    before = snapshot(conn)["summary_sources"]
    assert before
    conn.execute("REPLACE INTO summary_sources SELECT * FROM summary_sources")
    assert snapshot(conn)["summary_sources"] == before
    columns = "summary_id, source_id, ord, source_kind"
    conn.execute(
        f"REPLACE INTO summary_sources ({columns})"
        " SELECT summary_id, 'msg_x', ord, source_kind FROM summary_sources"
    )
    after = snapshot(conn)["summary_sources"]
    assert set(before) <= set(after)
    assert len(after) == 2 * len(before)


def test_tombstone_is_set_once(populated: tuple[Path, sqlite3.Connection]) -> None:
    _, conn = populated
    (part_id,) = conn.execute("SELECT id FROM parts WHERE kind = 'tool' LIMIT 1").fetchone()
    conn.execute("UPDATE parts SET compacted_at = 1, compacted_tokens = 5 WHERE id = ?", (part_id,))
    for column in ("compacted_at = 2", "compacted_at = NULL", "compacted_tokens = 6"):
        assert_refused(conn, f"UPDATE parts SET {column} WHERE id = '{part_id}'")
    assert conn.execute(
        "SELECT compacted_at, compacted_tokens FROM parts WHERE id = ?", (part_id,)
    ).fetchone() == (1, 5)


def test_tool_lifecycle_fields_change_until_the_call_is_final(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = Store(path)
    sid = store.create_session(MODEL)
    store.native.append_message(
        sid,
        "assistant",
        [{"kind": "tool", "name": "run", "call_id": "c1", "input": "{}", "status": "pending"}],
    )
    conn = raw(path)
    where = "WHERE call_id = 'c1'"
    conn.execute(f"UPDATE parts SET tool_status = 'running' {where}")
    assert_refused(conn, f"UPDATE parts SET tool_status = 'pending' {where}")
    conn.execute(f"UPDATE parts SET tool_status = 'completed', token_count = 9 {where}")
    for change in (
        "tool_status = 'error'",
        "tool_error = 'late'",
        "token_count = 10",
        "output_tokens = 3",
        "file_ids = 'file_0000000000'",
    ):
        assert_refused(conn, f"UPDATE parts SET {change} {where}")
    row = conn.execute(f"SELECT tool_status, tool_error, token_count FROM parts {where}").fetchone()
    assert row == ("completed", None, 9)


def test_a_tool_output_is_written_once(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = Store(path)
    sid = store.create_session(MODEL)
    store.native.append_message(
        sid,
        "assistant",
        [{"kind": "tool", "name": "run", "call_id": "c1", "input": "{}", "status": "running"}],
    )
    conn = raw(path)
    (pk,) = conn.execute("SELECT pk FROM parts WHERE call_id = 'c1'").fetchone()
    conn.execute("INSERT INTO tool_outputs (part_pk, output) VALUES (?, 'streamed')", (pk,))
    for statement in (
        f"INSERT INTO tool_outputs (part_pk, output) VALUES ({pk}, 'again')",
        f"INSERT OR REPLACE INTO tool_outputs (part_pk, output) VALUES ({pk}, 'again')",
        "UPDATE tool_outputs SET output = 'again'",
        "DELETE FROM tool_outputs",
    ):
        assert_refused(conn, statement)
    assert conn.execute("SELECT output FROM tool_outputs").fetchall() == [("streamed",)]


def test_text_parts_have_no_lifecycle(populated: tuple[Path, sqlite3.Connection]) -> None:
    _, conn = populated
    for change in (
        "tool_status = 'completed'",
        "token_count = 0",
        "output_tokens = 1",
    ):
        assert_refused(conn, f"UPDATE parts SET {change} WHERE kind = 'text'")


def test_superseded_by_is_set_once(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = Store(path)
    populate(store, ["one", "two"], ["x"])
    conn = raw(path)
    (summary_id,) = conn.execute("SELECT id FROM summaries").fetchone()
    conn.execute("UPDATE summaries SET superseded_by = 'sum_later' WHERE id = ?", (summary_id,))
    assert_refused(
        conn, f"UPDATE summaries SET superseded_by = 'sum_other' WHERE id = '{summary_id}'"
    )
    assert_refused(conn, f"UPDATE summaries SET superseded_by = NULL WHERE id = '{summary_id}'")


def test_streaming_message_fields_are_written_once(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = Store(path)
    sid = store.create_session(MODEL)
    message_id = store.native.begin_message(sid, "assistant")
    store.native.finish_message(
        message_id,
        [{"kind": "text", "text": "streamed reply"}],
        True,
        {"input_tokens": 10, "output_tokens": 3, "cost": 0.5, "finish_reason": "stop"},
    )
    conn = raw(path)
    for change in (
        "status = 'incomplete'",
        "input_tokens = 11",
        "cost = 0",
        "finish_reason = 'length'",
    ):
        assert_refused(conn, f"UPDATE messages SET {change} WHERE id = '{message_id}'")
    assert store.history(sid)[0]["parts"][0]["text"] == "streamed reply"


def test_the_view_and_the_index_stay_writable(populated: tuple[Path, sqlite3.Connection]) -> None:
    # context_items is the one mutable table (compaction swaps it); fts is maintained by
    # the store. Neither holds content of its own.
    _, conn = populated
    conn.execute("BEGIN")
    conn.execute("UPDATE context_items SET token_count = token_count")
    conn.execute("DELETE FROM compaction_leases")
    conn.execute("ROLLBACK")


# --- property: random content, random forbidden statement ------------------------

content = st.text(alphabet=st.characters(exclude_categories=("Cs",)), min_size=0, max_size=200)


@settings(max_examples=40, deadline=None)
@given(
    texts=st.lists(content, min_size=1, max_size=4),
    outputs=st.lists(content, min_size=1, max_size=3),
    statement=st.sampled_from(FORBIDDEN),
)
def test_any_forbidden_statement_leaves_any_content_unchanged(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str], outputs: list[str], statement: str
) -> None:
    path = tmp_path_factory.mktemp("prop") / "store.db"
    store = Store(path)
    sid = populate(store, texts, outputs)
    history = store.history(sid)
    conn = raw(path)
    before = snapshot(conn)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute(statement)
    assert snapshot(conn) == before
    assert Store(path).history(sid) == history
    conn.close()
