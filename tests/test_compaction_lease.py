"""The compaction lease outlives a slow model summary: the round renews it while the
model call runs, and another process cannot take it meanwhile."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from lossless import _native
from lossless.config import Config
from lossless.testing import LocalLLMServer, Reply, SummaryResponder
from test_compaction import llm_compaction, open_session, stuff

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.both_backends,
]

TTL_S = 0.3


async def test_a_slow_model_summary_keeps_the_lease(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    summary = SummaryResponder()
    calls = threading.Event()

    def slow(request: dict[str, Any]) -> Reply:
        calls.set()
        time.sleep(TTL_S * 4)
        return summary(request)

    server.responder = slow
    compaction = llm_compaction(lease_ttl_s=TTL_S)
    async with await open_session(config_for, db, compaction=compaction) as session:
        stuff(session, 20)
        other = _native.Store(str(db))
        taken: list[bool] = []

        async def contend() -> None:
            await anyio.to_thread.run_sync(calls.wait)
            # Well past the lease's lifetime, the round still holds it.
            for _ in range(3):
                await anyio.sleep(TTL_S)
                taken.append(other.acquire_compaction_lease(session.id, "other", 60_000))

        async with anyio.create_task_group() as group:
            group.start_soon(contend)
            result = await session.compact()
        assert taken == [False, False, False]
        assert result.status == "completed", result
        assert other.acquire_compaction_lease(session.id, "other", 60_000), "given back"
