"""Erasure through the public API: a session, a message and a subject leave every
table, the search index, blobs and summaries in one transaction, with a receipt
and no bytes left in the file; everything else stays as it was."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import TEST_MODEL
from lossless import MediaPart, Session, Store, ToolPart, expand, grep, read
from lossless.config import CompactionConfig, Config
from lossless.errors import (
    InvalidInputError,
    LosslessError,
    NotFoundError,
    SessionNotFoundError,
)
from lossless.governance import (
    add_subject,
    erase,
    erasure_receipts,
    maintain,
    retention_rules,
    set_retention,
)
from lossless.testing.conformance import check_request
from test_media import png

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

SECRET = "zebra-quartz-7731-obsidian"
KEPT = "the lighthouse keeper logs every ship"


def _compacting(config_for: Callable[..., Config]) -> Config:
    return config_for(
        compaction=CompactionConfig(
            output_budget=1_000, tail_tokens=200, tail_messages=4, protect_user_turns=1
        )
    )


async def _secret_session(s: Session) -> dict[str, str]:
    """A session holding the secret in a user message, a tool output and an image,
    compacted so a summary covers it; returns the ids of what holds it."""
    said = await s.record("user", f"My vault phrase is {SECRET}, keep it safe.")
    tool = await s.record(
        "assistant",
        [ToolPart("read_file", "c1", {"path": "notes.txt"}, output=f"notes: {SECRET} (old)")],
    )
    shot = await s.record("user", [MediaPart(data=png(8, 8, seed=9), media_type="image/png")])
    for n in range(8):
        await s.record("user", f"filler turn {n} about unrelated chores")
        await s.record("assistant", f"done with chore {n}")
    result = await s.compact()
    assert result.status == "completed", result
    return {"said": said.message_id, "tool": tool.message_id, "shot": shot.message_id}


def _bytes_on_disk(db: Path | str) -> bytes:
    path = Path(db)
    return b"".join(
        Path(f"{path}{suffix}").read_bytes()
        for suffix in ("", "-wal", "-shm")
        if Path(f"{path}{suffix}").exists()
    )


def _history_texts(s: Session) -> str:
    return json.dumps([str(m.parts) for m in s.history()])


async def test_erasing_a_session_removes_it_everywhere_and_keeps_the_others(
    server: Any, config_for: Callable[..., Config], db: Path | str
) -> None:
    config = _compacting(config_for)
    async with Session.open(model=TEST_MODEL, db=db, config=config, key="conv-1") as s:
        await _secret_session(s)
        add_subject(s, s.id, "customer-42")
        fork = await s.fork(key="conv-1b")
        await fork.record("user", f"fork repeats {SECRET}")
        erased_id, fork_id = s.id, fork.id
    async with Session.open(model=TEST_MODEL, db=db, config=config) as other:
        await other.record("user", KEPT)
        other_id, before = other.id, _history_texts(other)
    store = Store(db)
    assert grep(SECRET, db=store), "the secret is searchable before"
    receipt = erase(store, session=erased_id, by="dpo@example.com", reason="request 17")
    counts = json.loads(receipt.counts)
    assert set(counts["sessions"]) == {erased_id, fork_id}
    assert counts["messages"] >= 20 and counts["summaries"] >= 1 and counts["media"] == 1
    assert receipt.erased_by == "dpo@example.com" and receipt.target == erased_id
    assert SECRET not in json.dumps([str(r) for r in erasure_receipts(store)])
    assert not grep(SECRET, db=store) and not grep("vault phrase", db=store)
    assert {row.id for row in store.sessions()} == {other_id}
    with pytest.raises(SessionNotFoundError):
        erase(store, session=erased_id)
    async with Session.open(model=TEST_MODEL, db=db, config=config, session_id=other_id) as o:
        assert _history_texts(o) == before
    async with Session.open(model=TEST_MODEL, db=db, config=config, key="conv-1") as fresh:
        assert fresh.id not in (erased_id, fork_id) and not fresh.history()
    if isinstance(db, Path):
        assert receipt.scrubbed
        assert SECRET.encode() not in _bytes_on_disk(db)
        assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone() == ("ok",)


async def test_erasing_a_message_marks_its_summaries_and_keeps_the_request_valid(
    server: Any, config_for: Callable[..., Config], db: Path | str
) -> None:
    config = _compacting(config_for)
    async with Session.open(model=TEST_MODEL, db=db, config=config) as s:
        ids = await _secret_session(s)
        fork = await s.fork()
        store = s.store
        for key in ("said", "tool"):
            receipt = erase(s, message=ids[key], by="owner")
            assert receipt.target_kind == "message"
        assert json.loads(receipt.counts)["summaries_replaced"] >= 1
        for session in (s, fork):
            context = session.build_context()
            assert SECRET not in json.dumps(context.messages)
            check_request(context.messages)
            texts = _history_texts(session)
            assert SECRET not in texts and "filler turn 3" in texts
            assert ids["said"] not in {m.id for m in session.history()}
        assert not grep(SECRET, db=s)
        summaries = [hit for hit in grep("erased on request", db=s)]
        assert summaries, "the summary that covered it says it was erased"
        for summary in {hit.owner_id for hit in summaries if hit.owner_id.startswith("sum_")}:
            assert SECRET not in json.dumps(str(expand(summary, db=s)))
        with pytest.raises(LosslessError):
            read(ids["said"], db=s)
        with pytest.raises(NotFoundError):
            erase(s, message=ids["said"])
        await s.record("user", "and the session goes on")
        assert store is s.store
    if isinstance(db, Path):
        assert SECRET.encode() not in _bytes_on_disk(db)


async def test_erasing_a_subject_removes_its_sessions_only(
    config_for: Callable[..., Config], db: Path | str
) -> None:
    ids = []
    for n, subject in enumerate(["alice", "alice", None]):
        async with Session.open(model=TEST_MODEL, db=db, config=config_for()) as s:
            await s.record("user", f"session {n} {SECRET if subject else KEPT}")
            if subject:
                add_subject(s, s.id, subject)
            ids.append(s.id)
    store = Store(db)
    receipt = erase(store, subject="alice", reason="right to erasure")
    assert sorted(json.loads(receipt.counts)["sessions"]) == sorted(ids[:2])
    assert [row.id for row in store.sessions()] == [ids[2]]
    assert not grep(SECRET, db=store) and grep("lighthouse", db=store)
    empty = erase(store, subject="nobody")
    assert json.loads(empty.counts)["sessions"] == []


@pytest.mark.sqlite_only(reason="the raw delete goes through the file's own triggers")
async def test_outside_an_erasure_the_triggers_still_refuse_every_delete(
    config_for: Callable[..., Config], db: Path
) -> None:
    ids = []
    for text in ("erased", "kept forever"):
        async with Session.open(model=TEST_MODEL, db=db, config=config_for()) as s:
            await s.record("user", text)
            ids.append(s.id)
    erase(Store(db), session=ids[0])
    raw = sqlite3.connect(db, isolation_level=None)
    # Each table holds a row, so its row trigger fires.
    for table in ("messages", "parts", "sessions", "erasure_receipts"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            raw.execute(f"DELETE FROM {table}")
    assert raw.execute("SELECT count(*) FROM erasure_grants").fetchone() == (0,)


_ERASER = textwrap.dedent(
    """
    import sys
    from lossless import Store
    from lossless.governance import erase
    print("ready", flush=True)
    erase(Store(sys.argv[1]), session=sys.argv[2])
    print("done", flush=True)
    """
)


@pytest.mark.sqlite_only(reason="kills a process writing the file")
def test_a_killed_erasure_leaves_all_of_it_or_none(tmp_path: Path) -> None:
    """An erasure killed at different moments: the session is whole or gone,
    never half erased, and the file is sound."""
    outcomes = set()
    for attempt, delay in enumerate([0.0, 0.05, 0.15, 0.3, 0.6, 1.2]):
        db = tmp_path / f"kill{attempt}.db"
        store = Store(db)
        session = store.create_session(TEST_MODEL)
        for n in range(600):
            store.append(session, "user", f"line {n} {SECRET}")
        whole = len(store.history(session))
        store.native.close()
        child = subprocess.Popen(
            [sys.executable, "-c", _ERASER, str(db), session],
            stdout=subprocess.PIPE,
            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        )
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait()
        after = Store(db)
        rows = [row.id for row in after.sessions()]
        if rows:
            assert rows == [session] and len(after.history(session)) == whole
            outcomes.add("none")
        else:
            assert not grep(SECRET, db=after)
            outcomes.add("all")
        raw = sqlite3.connect(db)
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert raw.execute("SELECT count(*) FROM erasure_grants").fetchone() == (0,)
    assert outcomes, outcomes


async def test_retention_erases_what_expired_in_batches_and_keeps_the_rest(
    config_for: Callable[..., Config], db: Path | str
) -> None:
    store = Store(db)
    ids = {}
    for name in ("own", "subject", "none", "lifted", "large"):
        session = store.create_session(TEST_MODEL)
        for n in range(500 if name == "large" else 3):
            store.append(session, "user", f"{name} message {n} {SECRET}")
        ids[name] = session
    set_retention(store, session=ids["own"], ttl=timedelta(seconds=1))
    set_retention(store, session=ids["large"], ttl=1.0)
    add_subject(store, ids["subject"], "bob")
    add_subject(store, ids["lifted"], "carol")
    set_retention(store, subject="bob", ttl=timedelta(hours=1))
    set_retention(store, subject="carol", ttl=timedelta(seconds=1))
    set_retention(store, subject="carol", ttl=None)
    assert {(r.target_kind, r.target) for r in retention_rules(store)} == {
        ("session", ids["own"]),
        ("session", ids["large"]),
        ("subject", "bob"),
    }
    soon = datetime.now().astimezone() + timedelta(minutes=1)
    report = maintain(store, now=soon)
    assert sorted(report.erased_sessions) == sorted([ids["own"], ids["large"]])
    assert {r.reason for r in report.receipts} == {"retention"}
    later = maintain(store, now=soon + timedelta(hours=2))
    assert later.erased_sessions == [ids["subject"]]
    assert sorted(row.id for row in store.sessions()) == sorted([ids["none"], ids["lifted"]])
    assert maintain(store, now=soon + timedelta(hours=3)).erased_sessions == []
    with pytest.raises(InvalidInputError):
        set_retention(store, session=ids["none"], ttl=-5)
    with pytest.raises(InvalidInputError):
        set_retention(store, session=ids["none"], subject="bob", ttl=5)


@pytest.mark.sqlite_only(reason="the command line opens a file")
def test_the_command_line_erases_sets_retention_and_maintains(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from lossless.cli import app

    db = tmp_path / "cli.db"
    store = Store(db)
    kept, gone, expiring = (store.create_session(TEST_MODEL) for _ in range(3))
    for session in (kept, gone, expiring):
        store.append(session, "user", f"text of {session} {SECRET}")
    store.native.close()
    runner = CliRunner()

    def run(*args: str) -> str:
        result = runner.invoke(app, ["--db", str(db), *args])
        assert result.exit_code == 0, result.output
        return result.output

    assert "erased session" in run("erase", "--session", gone, "--yes", "--reason", "asked")
    assert "kept for 1 day" in run("retention", "--session", expiring, "--ttl", "1d")
    assert expiring in run("retention")
    assert "0 expired sessions" in run("maintain")
    bad = runner.invoke(app, ["--db", str(db), "retention", "--session", kept, "--ttl", "soon"])
    assert bad.exit_code != 0 and "duration" in bad.output
    assert {row.id for row in Store(db).sessions()} == {kept, expiring}
    assert [r.reason for r in erasure_receipts(Store(db))] == ["asked"]


@pytest.mark.sqlite_only(reason="the MCP server is started on the file")
async def test_a_running_mcp_server_no_longer_serves_what_was_erased(tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    db = tmp_path / "served.db"
    store = Store(db)
    erased, kept = store.create_session(TEST_MODEL), store.create_session(TEST_MODEL)
    said = store.append(erased, "user", f"the phrase is {SECRET}")
    store.append(kept, "user", KEPT)
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lossless", "--db", str(db), "mcp"],
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        cwd=str(tmp_path),
    )

    def answer(result: Any) -> Any:
        return None if result.is_error else json.loads(result.content[0].text)

    async with Client(server, read_timeout_seconds=60) as client:
        assert answer(await client.call_tool("grep", {"query": SECRET}))
        erase(store, session=erased)
        sessions = answer(await client.call_tool("sessions", {}))
        assert [row["id"] for row in sessions] == [kept]
        assert not answer(await client.call_tool("grep", {"query": SECRET}))
        read = await client.call_tool("read", {"message_id": said.id})
        assert read.is_error or SECRET not in read.content[0].text
