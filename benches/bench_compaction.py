"""Compaction benchmarks at 10,000 messages, and a 2,000-turn replay with compaction on.

1. The prune scan over a 10,000-message view: which tool outputs lie outside the
   protected tail and the 40,000-token window, and whether tombstoning them saves
   enough to write. Target: <= 10 ms (leading Python library: 13.2 s). Reported
   next to it: the same scan when it decides to write, with the tombstones written.
2. Level 3 (deterministic truncation) over the 10,000-message span. Target: <= 5 ms
   (leading Python library: 1.76 s).
3. A full round with the extractive summariser at 10,000 messages, as the engine
   runs it (lease, prune, span, and the summary committed in the call that reads
   the span). Target: <= 20 ms. Reported next to it: the same native calls made
   directly.
4. A 2,000-turn replay of ``lossless.demo.generate_trajectory(turns=2000)`` through
   ``Session.record`` with a 32,000-token window: per-turn time stays flat. Target:
   mean of the last 100 turns <= 1.5x the mean of the first 100 (median over three
   replays; every 100-turn window's mean is printed too). The trajectory's last 100
   turns carry about a quarter more text than its first 100, so the same 100 turns
   are also recorded after 100 and after 1,900 turns: that ratio holds the content
   equal.

The 10,000-message fixture is the benches' shared one (conftest ``bench_db``): user
and assistant turns alternating, 30% of all messages carrying a 2-8 KB tool output.
Benches that write work on a fresh copy of it each round (the copy, and a first
write that creates its WAL file, are not timed).

By default (``--benchmark-disable``) each benchmark runs once on 1,000 messages and
200 turns, as a smoke test. Real run::

    .venv/bin/pytest benches/bench_compaction.py --benchmark-enable -p no:cacheprovider
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import asyncio
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import BenchDB
from lossless import _native
from lossless.compaction import CompactionEngine, Summariser
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.demo import generate_trajectory
from lossless.events import EventBus
from lossless.models import Budget, ModelLimits
from lossless.session import Session

MODEL = "gpt-4o"
PROTECTED_TOOLS = ["skill"]


@pytest.fixture(scope="module")
def enabled(request: pytest.FixtureRequest) -> bool:
    options = request.config.option
    return bool(options.benchmark_enable or not options.benchmark_disable)


@pytest.fixture(scope="module")
def size(enabled: bool) -> int:
    return 10_000 if enabled else 1_000


@pytest.fixture(scope="module")
def fixture_db(bench_db: Callable[[int], BenchDB], size: int) -> BenchDB:
    return bench_db(size)


@pytest.fixture
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as directory:
        yield Path(directory)


def fresh_copy(db: BenchDB, scratch: Path) -> _native.Store:
    """A store on a new copy of the fixture, its view loaded as in a running session."""
    copy = scratch / f"copy-{time.perf_counter_ns()}.db"
    shutil.copyfile(db.path, copy)
    wal = Path(f"{db.path}-wal")
    if wal.exists():
        shutil.copyfile(wal, f"{copy}-wal")
    store = _native.Store(str(copy))
    store.view_stats(db.session_id)
    # A running session has written before: the first write of a fresh copy creates
    # its WAL file (several ms) and would be charged to whatever is measured.
    store.append_event(db.session_id, "bench_warmup", "{}")
    return store


def test_prune_scan(benchmark: Any, record: Any, fixture_db: BenchDB, scratch: Path) -> None:
    store = fresh_copy(fixture_db, scratch)
    sid = fixture_db.session_id

    def scan() -> _native.PruneResult:
        # A minimum no prune can meet: the whole decision, nothing written.
        return store.prune(sid, 40_000, 2**62, PROTECTED_TOOLS, 2)

    result = benchmark(scan)
    assert result["candidates"] > 0 and result["pruned_parts"] == 0
    record(
        benchmark,
        f"prune scan n={fixture_db.n:,}",
        target="<= 10 ms",
        candidates=result["candidates"],
        reference="leading Python library 13.2 s",
    )


def test_prune_scan_and_write(
    benchmark: Any, record: Any, fixture_db: BenchDB, scratch: Path
) -> None:
    sid = fixture_db.session_id
    results: list[_native.PruneResult] = []

    def setup() -> tuple[tuple[_native.Store], dict[str, Any]]:
        return (fresh_copy(fixture_db, scratch),), {}

    def prune(store: _native.Store) -> None:
        results.append(store.prune(sid, 40_000, 20_000, PROTECTED_TOOLS, 2))

    benchmark.pedantic(prune, setup=setup, rounds=5 if benchmark.enabled else 1, iterations=1)
    assert results[-1]["pruned_parts"] > 0
    record(
        benchmark,
        f"prune scan + tombstone writes n={fixture_db.n:,}",
        pruned_parts=results[-1]["pruned_parts"],
        tokens_saved=results[-1]["tokens_saved"],
    )


def test_level3(benchmark: Any, record: Any, fixture_db: BenchDB, scratch: Path) -> None:
    store = fresh_copy(fixture_db, scratch)
    span = store.compaction_span(fixture_db.session_id, 2)
    result = benchmark(store.truncate_summary, span, 2_048)
    assert result["text"].startswith("[deterministic truncation")
    record(
        benchmark,
        f"level 3 over n={fixture_db.n:,}",
        target="<= 5 ms",
        messages=span.message_count,
        summary_tokens=result["token_count"],
        reference="leading Python library 1.76 s",
    )


_CONFIG = Config(model=ModelConfig(context_limit=200_000, max_output_tokens=16_384))
_BUDGET = Budget.of(ModelLimits(200_000, 16_384), _CONFIG, 0)


def _engine(store: _native.Store, sid: str) -> CompactionEngine:
    config, budget = _CONFIG, _BUDGET
    counter = _native.TokenCounter(MODEL)
    summariser = Summariser(store, config, count=counter.count, compaction_window=200_000)
    return CompactionEngine(
        store=store,
        session_id=sid,
        config=config,
        budget=lambda: budget,
        bus=EventBus(tape=store),
        summariser=summariser,
    )


def test_full_round_extractive(
    benchmark: Any, record: Any, fixture_db: BenchDB, scratch: Path
) -> None:
    sid = fixture_db.session_id
    loop = asyncio.new_event_loop()
    results: list[Any] = []

    def setup() -> tuple[tuple[CompactionEngine], dict[str, Any]]:
        return (_engine(fresh_copy(fixture_db, scratch), sid),), {}

    def round_(engine: CompactionEngine) -> None:
        results.append(loop.run_until_complete(engine.run_compaction()))

    try:
        benchmark.pedantic(round_, setup=setup, rounds=15 if benchmark.enabled else 1, iterations=1)
    finally:
        loop.close()
    result = results[-1]
    assert result.status == "completed" and result.rounds == 1, result
    # A view past the usable budget is summarised down to the round's goal, from its
    # oldest messages (decision 191), and lands within the soft limit.
    assert result.messages_covered > fixture_db.n // 2
    assert result.tokens_after <= _BUDGET.soft_limit < result.tokens_before
    record(
        benchmark,
        f"full round, extractive, n={fixture_db.n:,}",
        target="<= 20 ms",
        levels=result.levels,
        tokens_before=result.tokens_before,
        tokens_after=result.tokens_after,
    )


def test_full_round_native_calls(
    benchmark: Any, record: Any, fixture_db: BenchDB, scratch: Path
) -> None:
    """The same round as the native calls the engine makes, without its event loop,
    lease and thread hops."""
    sid = fixture_db.session_id

    def setup() -> tuple[tuple[_native.Store], dict[str, Any]]:
        return (fresh_copy(fixture_db, scratch),), {}

    def round_(store: _native.Store) -> None:
        view = store.view_stats(sid)["tokens"]
        store.prune(sid, 40_000, max(20_000, view - 50_000), PROTECTED_TOOLS, 2)
        span = store.compaction_span(sid, 2)
        assert store.commit_extractive_summary(span, 2_048)["committed"] is not None
        store.view_stats(sid)

    benchmark.pedantic(round_, setup=setup, rounds=15 if benchmark.enabled else 1, iterations=1)
    record(benchmark, f"full round, native calls only, n={fixture_db.n:,}")


# -- the replay ----------------------------------------------------------------------------


def test_replay_per_turn_time_is_flat(
    benchmark: Any, record: Any, enabled: bool, scratch: Path
) -> None:
    turns = 2_000 if enabled else 200
    window = 100 if enabled else 20
    replays = 3 if enabled else 1
    trajectory = generate_trajectory(turns=turns)
    config = Config(
        model=ModelConfig(context_limit=32_000, max_output_tokens=2_000),
        compaction=CompactionConfig(),
    )
    runs: list[list[float]] = []
    outcomes: list[dict[str, Any]] = []

    async def replay() -> None:
        times: list[float] = []
        outcome: dict[str, Any] = {}
        db = scratch / f"replay-{len(runs)}.db"
        async with await Session.create(model=MODEL, db=db, config=config) as session:
            for turn in trajectory:
                parts = list(turn.parts)
                started = time.perf_counter()
                await session.record(turn.role, parts)
                times.append(time.perf_counter() - started)
            await session.compaction.wait_for_pending()
            outcome["view_tokens"] = session.view_tokens()
            outcome["soft_limit"] = session.budget.soft_limit
            outcome["usable"] = session.budget.usable
            names = [row["name"] for row in session.store.events(session.id)]
            outcome["compactions"] = names.count("compaction_completed")
            outcome["stalled"] = names.count("compaction_stalled") + names.count(
                "compaction_failed"
            )
            outcome["summaries"] = session.store.stats()["summaries"]
        runs.append(times)
        outcomes.append(outcome)

    def run() -> None:
        anyio.run(replay)

    benchmark.pedantic(run, rounds=replays, iterations=1)
    ratios = []
    for times, outcome in zip(runs, outcomes, strict=True):
        first = statistics.mean(times[:window])
        last = statistics.mean(times[-window:])
        ratios.append(last / first)
        windows = " ".join(
            f"{statistics.mean(times[i : i + window]) * 1e3:.2f}" for i in range(0, turns, window)
        )
        print(
            f"\nreplay of {turns} turns: first {window} turns {first * 1e3:.3f} ms/turn "
            f"(median {statistics.median(times[:window]) * 1e3:.3f}), last {window} "
            f"{last * 1e3:.3f} ms/turn (median {statistics.median(times[-window:]) * 1e3:.3f}), "
            f"ratio {last / first:.2f} (target <= 1.5); "
            f"{outcome['compactions']} compactions, {outcome['summaries']} summaries, "
            f"final view {outcome['view_tokens']} tokens (soft limit {outcome['soft_limit']})"
            f"\n  mean ms/turn per {window} turns: {windows}"
        )
        assert outcome["stalled"] == 0
        assert outcome["view_tokens"] <= outcome["usable"]
    ratio = statistics.median(ratios)
    print(f"replay: median last/first ratio over {replays} replays {ratio:.2f} (target <= 1.5)")
    record(
        benchmark,
        f"replay {turns} turns (one whole replay)",
        target="per-turn last/first <= 1.5x",
        ratio_median=round(ratio, 3),
        ratios=[round(value, 2) for value in ratios],
        compactions=[outcome["compactions"] for outcome in outcomes],
    )


def test_replay_same_turns_early_and_late(
    benchmark: Any, record: Any, enabled: bool, scratch: Path
) -> None:
    """The same 100 turns recorded after 100 turns and after 1,900: the growth of the
    per-turn cost with session length, the content held equal (the trajectory's own
    turns differ in size: its last 100 carry about a quarter more text than its first)."""
    turns = 2_000 if enabled else 200
    block = slice(100, 200) if enabled else slice(20, 40)
    trajectory = generate_trajectory(turns=turns)
    config = Config(
        model=ModelConfig(context_limit=32_000, max_output_tokens=2_000),
        compaction=CompactionConfig(),
    )
    measured: dict[str, list[float]] = {}

    async def probe(history: int, label: str) -> None:
        db = scratch / f"probe-{label}-{len(measured.get(label, []))}.db"
        async with await Session.create(model=MODEL, db=db, config=config) as session:
            for turn in trajectory[:history]:
                await session.record(turn.role, list(turn.parts))
            await session.compaction.wait_for_pending()
            started = time.perf_counter()
            for turn in trajectory[block]:
                await session.record(turn.role, list(turn.parts))
            elapsed = time.perf_counter() - started
        measured.setdefault(label, []).append(elapsed / (block.stop - block.start))

    def run() -> None:
        anyio.run(probe, block.start, "early")
        anyio.run(probe, turns - (block.stop - block.start), "late")

    benchmark.pedantic(run, rounds=3 if enabled else 1, iterations=1)
    early = statistics.median(measured["early"])
    late = statistics.median(measured["late"])
    print(
        f"\nsame {block.stop - block.start} turns after {block.start} turns: {early * 1e3:.3f} "
        f"ms/turn; after {turns - (block.stop - block.start)} turns: {late * 1e3:.3f} ms/turn; "
        f"ratio {late / early:.2f}"
    )
    record(
        benchmark,
        "replay: same 100 turns late / early",
        target="<= 1.5x",
        ratio=round(late / early, 3),
        early_ms=round(early * 1e3, 3),
        late_ms=round(late * 1e3, 3),
    )
