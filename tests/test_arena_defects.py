"""Arena defects, each held by a test: keys per zone, external recall without
internal recall, a once entry rewritten, entries cut at write time seen by the
controller, and text trimmed when written."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from conftest import TEST_MODEL
from lossless import Session
from lossless.arena import RecallHit
from lossless.config import ArenaConfig, Config
from lossless.errors import InvalidInputError
from lossless.events import EventName
from lossless.testing import LocalLLMServer, Reply

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]


def _sent(server: LocalLLMServer) -> str:
    return json.dumps(server.requests[-1]["messages"])


def _newest_block(server: LocalLLMServer) -> str:
    """The last request's newest arena block (its last message): earlier blocks stay
    where they were sent."""
    return str(server.requests[-1]["messages"][-1]["content"])


async def test_the_same_key_in_two_zones_is_two_entries(session: Session) -> None:
    await session.record("user", "go on")
    await session.pin("Never deploy on Fridays.", key="task")
    await session.set_task("Refactor the payout client.")
    zones = {(e.zone, e.key): e.text for e in session.arena.entries()}
    assert zones == {
        ("truth", "task"): "Never deploy on Fridays.",
        ("task_state", "task"): "Refactor the payout client.",
    }
    sent = json.dumps(session.build_context().messages)
    assert "Never deploy on Fridays." in sent and "Refactor the payout client." in sent
    # Unpinning takes out the pinned fact only, never the task of the same key.
    assert await session.unpin("task")
    assert not await session.unpin("task")
    assert [(e.zone, e.key) for e in session.arena.entries()] == [("task_state", "task")]
    assert "Refactor the payout client." in json.dumps(session.build_context().messages)
    assert await session.arena.remove("task_state", "task")
    assert session.arena.entries() == []
    with pytest.raises(InvalidInputError, match="zone"):
        await session.arena.remove("nowhere", "task")  # type: ignore[arg-type]


class _Port:
    def __init__(self) -> None:
        self.queries: list[str] = []

    async def search(self, query: str, k: int) -> Sequence[RecallHit]:
        self.queries.append(query)
        return [RecallHit(text="The moon base capital is Tranquility City.", score=0.9)]


async def test_external_recall_runs_with_internal_recall_off(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    port = _Port()
    config = config_for(arena=ArenaConfig(recall=False, recall_port=port))
    async with Session.open(model=TEST_MODEL, db=db, config=config) as s:
        server.enqueue(Reply(text="Tranquility"))
        await s.send("what is the capital of the moon base?")
        assert port.queries == ["what is the capital of the moon base?"]
        assert "Tranquility City" in _sent(server)


async def test_a_once_entry_rewritten_with_new_text_is_sent_once_more(
    server: LocalLLMServer, session: Session
) -> None:
    await session.arena.add("memory_working", "hint", "first hint", once=True)
    sent: list[str] = []
    for text in ("first turn", "second turn"):
        server.enqueue(Reply(text="ok"))
        await session.send(text)
        sent.append(_newest_block(server))
    await session.arena.add("memory_working", "hint", "second hint", once=True)
    for text in ("third turn", "fourth turn"):
        server.enqueue(Reply(text="ok"))
        await session.send(text)
        sent.append(_newest_block(server))
    assert ["first hint" in request for request in sent] == [True, False, False, False]
    assert ["second hint" in request for request in sent] == [False, False, True, False]


async def test_an_entry_cut_at_write_time_makes_the_controller_give_its_zone_more(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    arena = ArenaConfig(caps={"memory_working": 64}, warmup_turns=2)
    long = "BEGIN " + "notes about the payout retries " * 60 + "END"
    async with Session.open(model=TEST_MODEL, db=db, config=config_for(arena=arena)) as s:
        adapted: list[Any] = []
        s.events.subscribe(adapted.append, EventName.ARENA_ZONE_ADAPTED)
        first = await s.set_working_memory(long)
        assert first.cut_from is not None and first.tokens <= 64
        report = s.build_context().injection
        assert report is not None and report.zones["memory_working"].cut_at_write > 0
        for n in range(4):
            server.enqueue(Reply(text="ok"))
            await s.send(f"turn {n}")
        assert adapted
        assert all(shift["to"] == "memory_working" for shift in adapted[-1].payload["shifts"])
        # The next write of the zone is cut at the cap the controller gave it.
        again = await s.set_working_memory(long)
        assert again.tokens > 64
        assert again.cut_from is None or again.tokens > first.tokens


async def test_text_is_stored_without_surrounding_whitespace(session: Session) -> None:
    result = await session.arena.add("truth", "rule", "\n   Never deploy on Fridays.  \t\n")
    (entry,) = session.arena.entries()
    assert entry.text == "Never deploy on Fridays."
    assert result.tokens == entry.tokens
    await session.record("user", "go")
    assert "\n   Never deploy" not in json.dumps(session.build_context().messages)
    with pytest.raises(InvalidInputError, match="text"):
        await session.arena.add("truth", "blank", " \n\t ")
