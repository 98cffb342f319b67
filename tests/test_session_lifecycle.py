"""Sessions open and close in any order and from any task, and closing waits for
their background work."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import TEST_MODEL
from lossless import Session
from lossless.config import Config
from lossless.events import Event, EventName
from lossless.testing import LocalLLMServer, Reply, SummaryResponder
from test_compaction import llm_compaction, open_session, stuff

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.both_backends,
]


async def test_sessions_close_in_the_order_they_opened(config: Config, db: Path) -> None:
    first = await Session.create(model=TEST_MODEL, db=db, config=config)
    second = await Session.create(model=TEST_MODEL, db=db, config=config)
    await first.record("user", "one")
    await first.close()
    await second.record("user", "two")
    await second.close()
    assert first.closed and second.closed


async def test_a_session_opened_in_one_task_closes_in_another(config: Config, db: Path) -> None:
    opened: list[Session] = []

    async def opener() -> None:
        opened.append(await Session.create(model=TEST_MODEL, db=db, config=config))

    async with anyio.create_task_group() as group:
        group.start_soon(opener)
    # The task that opened it has ended; this one records and closes it.
    session = opened[0]
    await session.record("user", "still usable")

    async with anyio.create_task_group() as group:
        group.start_soon(session.close)
    assert session.closed


async def test_many_sessions_opened_and_closed_by_concurrent_tasks(
    config: Config, db: Path
) -> None:
    sessions = [await Session.create(model=TEST_MODEL, db=db, config=config) for _ in range(8)]
    async with anyio.create_task_group() as group:
        for session in reversed(sessions[::2]):
            group.start_soon(session.close)
        for session in sessions[1::2]:
            group.start_soon(session.close)
    assert all(session.closed for session in sessions)


async def test_closing_waits_for_a_background_round_and_its_handlers(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    handled: list[str] = []

    async def slow_handler(event: Event) -> None:
        await anyio.sleep(0.05)
        handled.append(event.name.value)

    summary = SummaryResponder()

    def slow(request: dict[str, Any]) -> Reply:
        time.sleep(0.3)
        return summary(request)

    server.responder = slow
    session = await open_session(config_for, db, compaction=llm_compaction())
    session.events.subscribe(slow_handler, EventName.COMPACTION_COMPLETED)
    stuff(session, 40)
    assert session.view_tokens() > session.budget.soft_limit
    assert (await session.record("user", "one more")).compaction_triggered
    assert session.compaction.pending, "a background round runs"

    async def close_elsewhere() -> None:
        await session.close()

    async with anyio.create_task_group() as group:
        group.start_soon(close_elsewhere)
    assert not session.compaction.pending
    assert session.compaction.last_result is not None
    assert handled == [EventName.COMPACTION_COMPLETED.value], (
        "the async handler ran before close returned"
    )
