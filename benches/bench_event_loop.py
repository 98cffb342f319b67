"""The event loop while compaction rounds run in the background.

An agent records turns (text and tool outputs) into a session whose view crosses the
soft threshold again and again, so rounds run beside the turns; a watchdog task
sleeps 1 ms at a time and measures how late it wakes. Targets: the watchdog's stall
p99 <= 1 ms and worst <= 2 ms; `record` p99 <= 1 ms. Before compaction had its own
connection and turns wrote off the loop, 6,000 turns showed a stall of 10.8 ms at
p99 and 13 ms at worst.

The full run records 10,000 messages (`LOSSLESS_BENCH_FULL=1`); the smoke run 600.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from lossless import Session, ToolPart
from lossless.config import CompactionConfig, Config, ModelConfig

MESSAGES = 10_000 if os.environ.get("LOSSLESS_BENCH_FULL") == "1" else 600
TICK_S = 0.001
WORDS = [
    "payout",
    "ledger",
    "refund",
    "invoice",
    "retry",
    "webhook",
    "error",
    "passed",
    "settle",
    "batch",
]


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


async def _watchdog(lags: list[float], done: anyio.Event) -> None:
    while not done.is_set():
        started = time.perf_counter()
        await anyio.sleep(TICK_S)
        lags.append(max(0.0, time.perf_counter() - started - TICK_S))


def _turns(rng: random.Random) -> list[tuple[str, Any]]:
    """The turns to record, made before the loop runs (making them is not the
    library's time)."""
    turns: list[tuple[str, Any]] = []
    for index in range(MESSAGES):
        if index % 2 == 0:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 200)))
            turns.append(("user" if index % 20 == 0 else "assistant", text))
        else:
            output = " ".join(rng.choice(WORDS) for _ in range(rng.randint(100, 1_500)))
            part = ToolPart("read_file", f"call_{index}", {"n": index}, output=output)
            turns.append(("assistant", [part]))
    return turns


async def _agent(session: Session, turns: list[tuple[str, Any]], record_s: list[float]) -> None:
    for role, parts in turns:
        started = time.perf_counter()
        await session.record(role, parts)
        record_s.append(time.perf_counter() - started)


def run_with_watchdog(db: Path) -> dict[str, Any]:
    """Records the session with a watchdog beside it; returns the figures."""
    config = Config(
        model=ModelConfig(context_limit=64_000, max_output_tokens=4_000),
        compaction=CompactionConfig(output_budget=4_000),
    )
    lags: list[float] = []
    record_s: list[float] = []
    figures: dict[str, Any] = {}
    turns = _turns(random.Random(5))

    async def main() -> None:
        async with Session.open(model="gpt-4o", db=db, config=config) as session:
            done = anyio.Event()
            async with anyio.create_task_group() as group:
                group.start_soon(_watchdog, lags, done)
                await _agent(session, turns, record_s)
                await session.compaction.wait_for_pending()
                done.set()
            names = [row["name"] for row in session.store.events(session.id)]
            figures["rounds"] = names.count("compaction_completed")
            figures["worst_view"] = session.view_tokens() / session.budget.usable

    anyio.run(main)
    figures.update(
        stall_p99_ms=_percentile(lags, 0.99) * 1e3,
        stall_worst_ms=max(lags) * 1e3,
        record_p50_ms=_percentile(record_s, 0.5) * 1e3,
        record_p99_ms=_percentile(record_s, 0.99) * 1e3,
        ticks=len(lags),
    )
    return figures


@pytest.mark.benchmark(group="event-loop")
@pytest.mark.timeout(1800)
def test_the_event_loop_keeps_running_while_rounds_run(
    benchmark: Any, record: Any, tmp_path: Path
) -> None:
    runs: list[dict[str, Any]] = []

    def run() -> None:
        runs.append(run_with_watchdog(tmp_path / f"loop-{len(runs)}.db"))

    benchmark.pedantic(run, rounds=1, iterations=1)
    figures = runs[-1]
    print(
        f"\nevent loop, {MESSAGES:,} messages with background compaction: "
        f"watchdog stall p99 {figures['stall_p99_ms']:.3f} ms, worst "
        f"{figures['stall_worst_ms']:.3f} ms over {figures['ticks']:,} ticks; record p50 "
        f"{figures['record_p50_ms']:.3f} ms, p99 {figures['record_p99_ms']:.3f} ms; "
        f"{figures['rounds']} rounds"
    )
    assert figures["rounds"] > 0, "rounds ran beside the turns"
    record(
        benchmark,
        f"event loop, {MESSAGES:,} messages, background rounds",
        target="stall p99 <= 1 ms, worst <= 2 ms; record p99 <= 1 ms",
        stall_p99_ms=round(figures["stall_p99_ms"], 3),
        stall_worst_ms=round(figures["stall_worst_ms"], 3),
        record_p99_ms=round(figures["record_p99_ms"], 3),
        rounds=figures["rounds"],
    )
