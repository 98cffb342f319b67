"""Several processes on one database file, and many sessions on one event loop."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from conftest import sql_rows
from lossless import Session, ToolPart
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.events import EventName
from lossless.parts import part_to_wire

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

PROCESSES = 8
SESSIONS_PER_PROCESS = 4
TURNS = 40

# Each writer process creates its sessions and records turns into all of them at
# once; it prints its session ids and the ids of every message the library
# acknowledged, as JSON, or the error that reached it.
_WRITER = textwrap.dedent(
    """
    import json, os, sys, anyio
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    from lossless import Session, ToolPart
    from lossless.config import Config

    db, sessions, turns, config_json = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    config = Config.model_validate_json(config_json)

    async def work(acked, index):
        async with Session.open(model="gpt-4o", db=db, config=config) as session:
            acked[session.id] = []
            for turn in range(turns):
                if turn % 2:
                    part = ToolPart("read", f"c{index}_{turn}", {"n": turn}, output="x " * 400)
                    result = await session.record("assistant", [part])
                else:
                    result = await session.record("user", f"turn {turn} of writer {index}")
                acked[session.id].append(result.message_id)

    async def main():
        acked = {}
        async with anyio.create_task_group() as group:
            for index in range(sessions):
                group.start_soon(work, acked, index)
        print(json.dumps(acked))

    try:
        anyio.run(main)
    except Exception as err:
        print(json.dumps({"error": f"{type(err).__name__}: {err}"}))
    """
)


def _config() -> Config:
    # Small windows: rounds run in every session while the writers go on.
    return Config(
        model=ModelConfig(context_limit=8_000, max_output_tokens=500),
        compaction=CompactionConfig(output_budget=500),
    )


@pytest.mark.sqlite_only("checks the shared file with PRAGMA integrity_check")
def test_many_processes_append_to_one_file_without_losing_a_row(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    config_json = _config().model_dump_json()
    args = [str(db), str(SESSIONS_PER_PROCESS), str(TURNS), config_json]
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, *args], stdout=subprocess.PIPE, text=True)
        for _ in range(PROCESSES)
    ]
    outputs = [json.loads(writer.communicate(timeout=600)[0]) for writer in writers]
    errors = [output["error"] for output in outputs if "error" in output]
    assert not errors, errors
    acked = {sid: ids for output in outputs for sid, ids in output.items()}
    assert len(acked) == PROCESSES * SESSIONS_PER_PROCESS
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        for session_id, ids in acked.items():
            stored = [
                row[0]
                for row in conn.execute(
                    "SELECT id FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
                )
            ]
            assert stored == ids, f"{session_id}: stored messages differ from those acknowledged"
    finally:
        conn.close()


_COMPACTOR = textwrap.dedent(
    """
    import json, os, sys, anyio
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    from lossless import Session

    async def main():
        async with Session.open(model="gpt-4o", db=sys.argv[1], session_id=sys.argv[2]) as s:
            result = await s.compact()
            print(json.dumps({"status": result.status, "summaries": result.summary_ids}))

    anyio.run(main)
    """
)


async def _fill(db: Path | str) -> str:
    """A session over its soft limit, written straight to the store (nothing compacts)."""
    async with Session.open(model="gpt-4o", db=db, config=_config()) as session:
        for turn in range(60):
            part = ToolPart("read", f"c{turn}", {"n": turn}, output=f"output {turn} " * 60)
            session.store.append_message(session.id, "user", [{"kind": "text", "text": "go"}])
            session.store.append_message(session.id, "assistant", [part_to_wire(part)])
        return session.id


def test_two_processes_compacting_one_session_never_summarise_twice(database: Path | str) -> None:
    db = database
    session_id = anyio.run(_fill, db)
    compactors = [
        subprocess.Popen(
            [sys.executable, "-c", _COMPACTOR, str(db), session_id],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [json.loads(proc.communicate(timeout=300)[0]) for proc in compactors]
    statuses = sorted(result["status"] for result in results)
    assert "completed" in statuses and statuses in (
        ["busy", "completed"],
        ["completed", "not_needed"],
        ["completed", "completed"],
    ), results
    # Every message is the source of at most one leaf summary.
    repeated = sql_rows(
        db,
        "SELECT source_id, count(*) FROM summary_sources WHERE source_kind = 'message' "
        "GROUP BY source_id HAVING count(*) > 1",
    )
    assert repeated == []


async def test_many_sessions_on_one_loop_compact_in_the_background(
    database: Path | str,
) -> None:
    db = database
    config = _config()
    failures: list[str] = []

    async def agent(index: int) -> None:
        async with Session.open(model="gpt-4o", db=db, config=config) as session:
            session.events.subscribe(
                lambda event: failures.append(str(event.payload["error"])),
                EventName.COMPACTION_FAILED,
            )
            for turn in range(30):
                part = ToolPart("read", f"c{index}_{turn}", {"n": turn}, output="y " * 300)
                await session.record(
                    "assistant" if turn % 3 else "user", [part] if turn % 3 else "go"
                )
            await session.compaction.wait_for_pending()
            assert session.view_tokens() <= session.budget.usable

    async with anyio.create_task_group() as group:
        for index in range(64):
            group.start_soon(agent, index)
    assert failures == []
