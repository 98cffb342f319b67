"""Close means closed: once the last session on a SQLite file has closed, the file
alone holds everything, no connection of the process is left on it, and nothing
keeps a closed session's stores alive."""

from __future__ import annotations

import gc
import os
import shutil
import sqlite3
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

from conftest import TEST_MODEL
from lossless import Session
from lossless.config import Config
from lossless.testing import LocalLLMServer

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::UserWarning")]

TABLES = ("sessions", "messages", "parts", "events")


def _fill(session: Session, turns: int) -> None:
    """Turns long enough that the write-ahead log outgrows the file many times."""
    for turn in range(turns):
        text = f"turn {turn}: " + "a tool result line of some length\n" * 40
        session.store.append_message(session.id, "user", [{"kind": "text", "text": text}])


def _counts(path: Path) -> dict[str, int]:
    """Rows of each table of the database at ``path``, read without lossless (after
    checking the file is whole)."""
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in TABLES
        }


def _log_bytes(path: Path) -> int:
    log = Path(f"{path}-wal")
    return log.stat().st_size if log.exists() else 0


def _descriptors_on(path: Path) -> list[str]:
    """The files of this process's open descriptors that are ``path`` or its log."""
    names = {str(path), f"{path}-wal", f"{path}-shm"}
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target in names:
            found.append(target)
    return found


async def test_a_copy_of_the_file_alone_after_closing_holds_every_row(
    config: Config, tmp_path: Path
) -> None:
    db = tmp_path / "agent.db"
    async with Session.open(model=TEST_MODEL, db=db, config=config) as session:
        _fill(session, 400)
        await session.send("and one model turn")
        assert _log_bytes(db) > db.stat().st_size / 2
    assert _log_bytes(db) == 0
    copy = tmp_path / "copy.db"
    shutil.copyfile(db, copy)
    copied = _counts(copy)
    assert copied["messages"] == 402
    assert copied == _counts(db)
    async with Session.open(
        model=TEST_MODEL, db=copy, session_id=session.id, config=config
    ) as reopened:
        assert len(reopened.history()) == 402


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="lists descriptors via /proc")
async def test_no_connection_outlives_close(config: Config, tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    session = await Session.create(model=TEST_MODEL, db=db, config=config)
    await session.send("hello")
    await session.compact()
    assert _descriptors_on(db)
    await session.close()
    assert _descriptors_on(db) == []


@pytest.mark.both_backends
async def test_no_reference_cycle_keeps_a_session_and_its_stores(
    server: LocalLLMServer, config: Config, db: Path | str
) -> None:
    # Without the cyclic collector only reference counts free objects: a cycle
    # through the session (its compaction, arena, bus) would keep it, and the
    # stores it holds, alive. (A store can outlive it in an idle worker thread that
    # last ran one of its calls; closed, it holds no connection.)
    gc.collect()
    gc.disable()
    try:
        session = await Session.create(model=TEST_MODEL, db=db, config=config)
        await session.pin("Never deploy on Fridays.")
        await session.send("hello")
        await session.compact()
        gone = weakref.ref(session)
        await session.close()
        del session
        assert gone() is None
    finally:
        gc.enable()


_READER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN")
print(conn.execute("SELECT count(*) FROM messages").fetchone()[0], flush=True)
sys.stdin.read()
conn.execute("COMMIT")
conn.close()
"""


def _start_reader(db: Path) -> subprocess.Popen[bytes]:
    """Another process, holding a read transaction on ``db`` until its stdin closes."""
    return subprocess.Popen(
        [sys.executable, "-c", _READER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )


async def test_closing_beside_a_reader_in_another_process_neither_fails_nor_loses_rows(
    config: Config, tmp_path: Path
) -> None:
    db = tmp_path / "agent.db"
    session = await Session.create(model=TEST_MODEL, db=db, config=config)
    _fill(session, 50)
    reader = _start_reader(db)
    try:
        assert reader.stdout is not None
        assert int(reader.stdout.readline()) == 50
        _fill(session, 50)
        # The reader's snapshot keeps the log from being emptied: closing copies what
        # it can without waiting for the reader and without an error.
        await session.close()
    finally:
        assert reader.stdin is not None
        reader.stdin.close()
        assert reader.wait(timeout=30) == 0
    # The reader was the last connection: closing it finished the copy.
    assert _log_bytes(db) == 0
    assert _counts(db)["messages"] == 100
