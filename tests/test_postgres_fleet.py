"""A fleet of worker processes sharing sessions on one PostgreSQL server.

Sixteen workers (``postgres_fleet_child.py``) pick up the same eight sessions in
turn, as the workers of a fleet do: each records turns and tool results and
compacts, with a context limit small enough that compaction runs all the time, and
some are killed with SIGKILL at random moments. Afterwards: every write a worker
acknowledged is stored; no worker saw a lock error or a failed compaction; no
message or summary was summarised twice; every complete message is in its
session's view exactly once; everything stored is indexed for search or queued for
it; and the sessions go on.

The compaction lease, held by the connection that runs the round, is shown across
processes too: a worker killed while holding it frees it with its connection.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import anyio

from conftest import TEST_MODEL, view_coverage
from lossless import _native
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.session import Session
from lossless.testing.postgres import PostgresCluster

CHILD = Path(__file__).with_name("postgres_fleet_child.py")
WORKERS = 16
SESSIONS = 8
ROUNDS = 2
KILLED = 5
# Enough for turns to push the view past its soft threshold every few turns.
CONFIG = Config(
    model=ModelConfig(context_limit=3_000, max_output_tokens=300, token_correction=1.0),
    compaction=CompactionConfig(output_budget=300),
)
ENV = {**os.environ, "PYTHONPATH": str(CHILD.parent.parent / "python")}


@dataclass
class Worker:
    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    def read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.strip())

    def tagged(self, tag: str) -> list[str]:
        return [line.split(" ", 1)[1] for line in self.lines if line.startswith(tag + " ")]


def start_worker(url: str, seed: int, session_ids: list[str]) -> Worker:
    args = [url, CONFIG.model_dump_json(), TEST_MODEL, str(seed), str(ROUNDS), *session_ids]
    process = subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    worker = Worker(process)
    worker.reader = threading.Thread(target=worker.read, daemon=True)
    worker.reader.start()
    return worker


def rows(cluster: PostgresCluster, database: str, sql: str) -> list[list[str]]:
    out = cluster.psql(sql, database)
    return [line.split("|") for line in out.splitlines() if line]


async def create_sessions(url: str) -> list[str]:
    ids = []
    for _ in range(SESSIONS):
        async with await Session.create(model=TEST_MODEL, db=url, config=CONFIG) as session:
            ids.append(session.id)
    return ids


def test_a_fleet_of_killed_and_living_workers_loses_and_repeats_nothing(
    postgres_cluster: PostgresCluster,
) -> None:
    database = postgres_cluster.create_database()
    url = postgres_cluster.url(database)
    session_ids = anyio.run(create_sessions, url)
    rng = random.Random(17)
    workers = [start_worker(url, seed, session_ids) for seed in range(WORKERS)]
    doomed = rng.sample(workers, KILLED)
    # Each doomed worker dies at a random moment once it has acknowledged a write.
    deadline = time.monotonic() + 120
    for worker in doomed:
        while not worker.tagged("ack") and worker.process.poll() is None:
            assert time.monotonic() < deadline, "a worker never got going"
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 1.5))
        os.kill(worker.process.pid, signal.SIGKILL)
    for worker in workers:
        worker.process.wait(timeout=max(1.0, deadline - time.monotonic()))
        assert worker.reader is not None
        worker.reader.join(timeout=10)
    for worker in workers:
        if worker in doomed and worker.process.returncode == -signal.SIGKILL:
            continue
        stderr = worker.process.stderr.read() if worker.process.stderr else ""
        assert worker.process.returncode == 0, (worker.lines[-3:], stderr[-2_000:])
        assert worker.lines[-1] == "finished"
    assert not [line for w in workers for line in w.lines if line.startswith("error ")]
    assert not [line for w in workers for line in w.lines if line.startswith("failed ")]

    acked = {message for worker in workers for message in worker.tagged("ack")}
    stored = {row[0] for row in rows(postgres_cluster, database, "SELECT id FROM messages")}
    assert acked <= stored, f"lost acknowledged messages: {sorted(acked - stored)[:5]}"
    done = {call for worker in workers for call in worker.tagged("done")}
    completed = {
        row[0]
        for row in rows(
            postgres_cluster,
            database,
            "SELECT call_id FROM parts WHERE kind = 'tool' AND tool_status = 'completed'",
        )
    }
    assert done <= completed, f"lost tool results: {sorted(done - completed)[:5]}"
    living = WORKERS - KILLED
    assert len(acked) >= living * ROUNDS * SESSIONS * 2

    # Nothing summarised twice: a message or a summary is the source of one summary
    # at most, ever; and every complete message is in its view exactly once.
    twice = rows(
        postgres_cluster,
        database,
        "SELECT source_kind, source_id FROM summary_sources "
        "GROUP BY source_kind, source_id HAVING count(*) > 1",
    )
    assert twice == []
    summaries = rows(postgres_cluster, database, "SELECT count(*) FROM summaries")
    assert int(summaries[0][0]) > 0, "compaction ran"
    # Every part and summary is in the search index or still queued for it.
    unindexed = rows(
        postgres_cluster,
        database,
        "SELECT count(*) FROM (SELECT pk AS rowid FROM parts UNION ALL "
        "SELECT -pk FROM summaries) stored WHERE NOT EXISTS "
        "(SELECT 1 FROM search_index i WHERE i.fts_rowid = stored.rowid) AND NOT EXISTS "
        "(SELECT 1 FROM search_backlog b WHERE b.fts_rowid = stored.rowid)",
    )
    assert unindexed == [["0"]]
    failed = rows(
        postgres_cluster,
        database,
        "SELECT count(*) FROM events WHERE name = 'compaction_failed'",
    )
    assert failed == [["0"]]
    for session_id in session_ids:
        in_view = view_coverage(partial(rows, postgres_cluster, database), session_id)
        for message_id, covered in in_view.items():
            assert covered == 1, f"{message_id} is in the view {covered} times"

    # The sessions go on: a worker picks each up and records a turn.
    after = start_worker(url, 99, session_ids)
    after.process.wait(timeout=120)
    assert after.lines[-1:] == ["finished"], after.lines[-3:]
    postgres_cluster.drop_database(database)


def test_a_killed_worker_frees_the_compaction_lease_it_held(postgres_url: str) -> None:
    store = _native.Store(postgres_url)
    session_id = store.create_session(TEST_MODEL, "{}", None)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from lossless import _native\n"
            "store = _native.Store(sys.argv[1])\n"
            "assert store.acquire_compaction_lease(sys.argv[2], 'holder', 1)\n"
            "print('held', flush=True)\n"
            "sys.stdin.read()\n",
            postgres_url,
            session_id,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        # No expiry: the lease outlives its one millisecond while its holder lives.
        time.sleep(0.1)
        assert not store.acquire_compaction_lease(session_id, "other", 60_000)
    finally:
        holder.kill()
        holder.wait()
    deadline = time.monotonic() + 10
    while not store.acquire_compaction_lease(session_id, "other", 60_000):
        assert time.monotonic() < deadline, "the lease outlived its killed holder"
        time.sleep(0.02)
    store.release_compaction_lease(session_id, "other")
