"""The main job end to end: replay, compaction, recall, on a real SQLite file."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console

from lossless.demo.runner import MIN_COMPACTIONS, run_demo
from lossless.demo.trajectory import RECALL_FACT
from lossless.testing import LocalLLMServer, SummaryResponder

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _run(db: Path, **kwargs: object) -> tuple[int, str]:
    buffer = io.StringIO()
    console = Console(file=buffer, width=160, force_terminal=False)
    code = run_demo(str(db), console=console, **kwargs)  # type: ignore[arg-type]
    return code, buffer.getvalue()


def test_demo_compacts_and_recalls_turn_three(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    code, output = _run(db, turns=520, model=None)
    assert code == 0, output
    assert "recovered verbatim" in output
    assert RECALL_FACT in output
    assert "a reply cut off by a timeout is kept" in output
    assert f"lossless --db {db} ui" in " ".join(output.split())
    assert "a compaction span: level" in output
    with sqlite3.connect(db) as conn:
        compactions = conn.execute(
            "SELECT count(*) FROM events"
            " WHERE name = 'compaction_completed' AND payload LIKE '%sum_%'"
        ).fetchone()[0]
        messages = conn.execute(
            "SELECT count(*) FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE s.model = 'gpt-4o'"
        ).fetchone()[0]
        cut_off = conn.execute(
            "SELECT count(*) FROM messages"
            " WHERE status = 'incomplete' AND finish_reason = 'cancelled'"
        ).fetchone()[0]
        live = conn.execute(
            "SELECT count(*) FROM summaries WHERE superseded_by IS NULL"
        ).fetchone()[0]
    assert compactions >= MIN_COMPACTIONS
    assert messages == 520
    assert cut_off == 1, "the reply cut off by the timeout is kept"
    assert live >= 1


def test_demo_summarises_through_a_model_endpoint(tmp_path: Path) -> None:
    # The demo's full length: at 300 turns the window fills only just enough for a
    # summary or two, so whether one is made depends on when the background rounds run.
    with LocalLLMServer(responder=SummaryResponder()) as server:
        code, output = _run(
            tmp_path / "llm.db", turns=520, model="openai/summariser", api_base=server.base_url
        )
        summarise_calls = len(server.requests)
    assert code == 0, output
    assert summarise_calls >= 1
    assert "L1" in output or "L2" in output
