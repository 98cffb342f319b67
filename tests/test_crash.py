"""A process killed with SIGKILL at random moments loses nothing it acknowledged.

A child (``crash_child.py``) records turns, tool calls and their results, compacts,
and streams replies from the local server into one database file; the test kills it
at a seeded random moment, over and over. After every kill: the file passes
``PRAGMA integrity_check``; every write the child acknowledged is stored; a reply
killed while streaming keeps what it had checkpointed; every complete message is in
the view exactly once, itself or through one live summary; every summary has its
source edges; and the next child loads the session and goes on.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import TEST_MODEL, make_config, view_coverage
from lossless.config import CompactionConfig, ModelConfig
from lossless.testing import LocalLLMServer, Reply

CHILD = Path(__file__).with_name("crash_child.py")
# Kills of children that only record and compact, and of children that also stream
# (those import litellm, which takes seconds: fewer of them), in all. They are made in
# SHARDS runs on a database each, which a parallel test run spreads over its workers.
KILLS = 100
STREAM_KILLS = 6
SHARDS = 2
# About two seconds of streaming at 5 ms a chunk of three words.
REPLY = " ".join(f"w{index}" for index in range(1_200))


@dataclass
class ChildRun:
    """What one child printed before it was killed, with when each line came."""

    lines: list[tuple[float, str]] = field(default_factory=list)

    def saw(self, prefix: str) -> bool:
        return any(line.startswith(prefix) for _, line in self.lines)

    def acked(self) -> list[str]:
        return [line.split()[1] for _, line in self.lines if line.startswith("ack ")]

    def session_id(self) -> str | None:
        for _, line in self.lines:
            if line.startswith("session "):
                return line.split()[1]
        return None

    def streamed_before(self, moment: float) -> int:
        """Characters of the reply streaming when the child died that it reported by
        ``moment`` (0 when no reply was streaming)."""
        seen = 0
        for at, line in self.lines:
            if line.startswith("chars ") and at <= moment:
                seen = int(line.split()[1])
            elif not line.startswith("chars "):
                seen = 0  # a reply ended (or none had begun): count the next one
        return seen


def _read(child: subprocess.Popen[str], run: ChildRun) -> None:
    assert child.stdout is not None
    for line in child.stdout:
        run.lines.append((time.monotonic(), line.strip()))


def kill_at_random(
    db: Path, session_id: str | None, config_json: str, seed: int, stream: bool
) -> ChildRun:
    """Starts a child, lets it work for a seeded random while, and kills it."""
    rng = random.Random(seed)
    args = [str(db), session_id or "-", config_json, TEST_MODEL, str(seed), "1" if stream else "0"]
    child = subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(CHILD.parent.parent / "python")},
    )
    run = ChildRun()
    reader = threading.Thread(target=_read, args=(child, run), daemon=True)
    reader.start()
    # Wait until the child has opened its session (and, streaming, until its first
    # reply streams), then let it work a while.
    started = "chars " if stream else "session "
    deadline = time.monotonic() + 60
    while not run.saw(started) and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(rng.uniform(0.8, 1.8) if stream else rng.uniform(0.0, 0.4))
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    reader.join(timeout=10)
    return run


def check_file(db: Path, session_id: str, acked: set[str]) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = {row[0] for row in conn.execute("SELECT id FROM messages")}
        assert acked <= stored, f"lost acknowledged messages: {sorted(acked - stored)[:5]}"
        orphans = conn.execute(
            "SELECT count(*) FROM summaries s WHERE NOT EXISTS "
            "(SELECT 1 FROM summary_sources e WHERE e.summary_id = s.id)"
        ).fetchone()[0]
        assert orphans == 0, "a summary without its source edges"
        for message_id, covered in view_coverage(conn.execute, session_id).items():
            assert covered == 1, f"{message_id} is in the view {covered} times"
    finally:
        conn.close()


def check_stream(db: Path, run: ChildRun, killed_at: float) -> bool:
    """A reply killed while streaming keeps at least what streamed a checkpoint
    interval (and some slack) before the kill. Returns whether there was one to check."""
    conn = sqlite3.connect(db)
    try:
        # The reply is still marked streaming (the next process to load the session
        # closes it): its text is its checkpoint.
        rows = conn.execute(
            "SELECT coalesce((SELECT group_concat(text, '') FROM "
            "(SELECT text FROM stream_chunks c WHERE c.message_id = m.id ORDER BY ord)), '') "
            "FROM messages m WHERE m.status = 'streaming' ORDER BY m.seq DESC LIMIT 1"
        ).fetchall()
    finally:
        conn.close()
    expected = run.streamed_before(killed_at - 0.75)
    if expected == 0:
        return False  # killed too early to expect a checkpoint, or between replies
    assert rows, "a reply was streaming when the child was killed"
    text = rows[0][0]
    assert REPLY.startswith(text) and len(text) >= expected
    return True


@pytest.mark.timeout(900)
@pytest.mark.parametrize("shard", range(SHARDS))
def test_sigkill_at_random_moments_loses_nothing_acknowledged(
    server: LocalLLMServer, tmp_path: Path, shard: int
) -> None:
    kills, stream_kills = KILLS // SHARDS, STREAM_KILLS // SHARDS
    server.responder = lambda request: Reply(text=REPLY, chunk_delay_s=0.005)
    config = make_config(
        server,
        model=ModelConfig(context_limit=6_000, max_output_tokens=500, token_correction=1.0),
        compaction=CompactionConfig(output_budget=500),
    )
    db = tmp_path / "crash.db"
    session_id: str | None = None
    acked: set[str] = set()
    streams_checked = 0
    for kill in range(kills + stream_kills):
        stream = kill >= kills
        seed = 1_000 + shard * (kills + stream_kills) + kill
        run = kill_at_random(db, session_id, config.model_dump_json(), seed, stream)
        killed_at = time.monotonic()
        session_id = session_id or run.session_id()
        assert session_id is not None, f"kill {kill}: the child never opened its session"
        acked.update(run.acked())
        check_file(db, session_id, acked)
        if stream:
            streams_checked += check_stream(db, run, killed_at)
    assert len(acked) > kills, "the children got work done between kills"
    assert streams_checked >= stream_kills // 2, "replies were killed while streaming"
