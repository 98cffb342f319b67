"""``sync`` with a 1,000-message history that grew by one message, beside the same
turn through ``record`` + ``context()`` (issue 30, benchmark 1).

Each measured call hands over one message more than the call before: ``sync`` takes
the whole list (hashing it to recognise the stored part, storing the new message,
then assembling the request), the baseline records the one message and assembles.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import SEED, median, prose
from lossless import Session
from lossless.config import Config, ModelConfig

MESSAGES = 1_000
MODEL = "openai/bench-model"
CONFIG = Config(model=ModelConfig(context_limit=1_000_000, max_output_tokens=1_000))


def _history(rng: random.Random) -> list[dict[str, Any]]:
    roles = ["user", "assistant"]
    return [{"role": roles[n % 2], "content": prose(rng, 40, 200)} for n in range(MESSAGES)]


@pytest.mark.benchmark(group="sync")
@pytest.mark.parametrize("path", ["record+context", "sync"])
def test_a_history_grown_by_one(benchmark: Any, record: Any, tmp_path: Path, path: str) -> None:
    rng = random.Random(SEED)
    messages = _history(rng)
    extra = [prose(rng, 40, 200) for _ in range(5_000)]

    async def measure() -> int:
        async with Session.open(model=MODEL, db=tmp_path / "sync.db", config=CONFIG) as session:
            if path == "sync":
                await session.sync(messages)
            else:
                await session.record_messages(messages)
            await session.context()

            def once() -> int:
                text = extra[len(messages) - MESSAGES]
                message = {
                    "role": "user" if len(messages) % 2 == 0 else "assistant",
                    "content": text,
                }
                messages.append(message)
                if path == "sync":
                    return anyio.from_thread.run(session.sync, messages).tokens

                async def recorded() -> int:
                    await session.record(message["role"], text)
                    return (await session.context()).tokens

                return anyio.from_thread.run(recorded)

            tokens = await anyio.to_thread.run_sync(lambda: benchmark(once))
            assert len(session.history()) == len(messages)
            return tokens

    tokens = anyio.run(measure)
    assert tokens > 0
    figures: dict[str, Any] = {"history_messages": MESSAGES}
    baseline = median("record+context, 1,000 messages + 1")
    if path == "sync" and baseline and benchmark.enabled and benchmark.stats is not None:
        figures["ratio_to_record_context"] = round(benchmark.stats.stats.median / baseline, 2)
    record(benchmark, f"{path}, 1,000 messages + 1", "median", **figures)
