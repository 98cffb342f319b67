"""Encryption at rest: what SQLCipher costs a turn and an assembly.

The same work on a plain file and on an encrypted one (a raw 256-bit key, so no
key derivation), side by side with the ratio:

1. ``Session.record`` of a typical turn: a user message of 500 characters, then an
   assistant message with a tool call and its 4 KB output. Each commit encrypts the
   pages it writes to the write-ahead log.
2. Context assembly, warm: ``session.build_context()`` on a session of 400 such
   turns (800 messages), the own loop's peek. Pages read once stay decrypted in
   SQLite's page cache, so this is what most requests cost.
3. Context assembly, cold: a new connection to the file (keyed) and its first
   assembly of the same session: every page it reads is decrypted and checked.

Compaction is off, so every turn and assembly does the same work. By default
(``--benchmark-disable``) each runs once on a few turns. Real run::

    .venv/bin/pytest benches/bench_encryption.py --benchmark-enable -p no:cacheprovider -s
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import hashlib
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import FIGURES, Corpus, Figure
from lossless import Session, Store, ToolPart
from lossless.config import CompactionConfig, Config, ModelConfig

MODEL = "openai/bench-model"
KEY = hashlib.sha256(b"lossless encryption benchmark").digest()
TURNS = 400
COLD_ROUNDS = 30
VARIANTS = ("plain", "encrypted")


@dataclass
class Timings:
    """Per-call times of one variant, in seconds."""

    record: list[float] = field(default_factory=list)
    warm: list[float] = field(default_factory=list)
    cold: list[float] = field(default_factory=list)


RESULTS: dict[str, Timings] = {}


def config() -> Config:
    return Config(
        model=ModelConfig(context_limit=1_000_000, max_output_tokens=16_384, profile="default"),
        compaction=CompactionConfig(enabled=False),
    )


def turn_texts(corpus: Corpus, turns: int) -> list[tuple[str, str, str]]:
    """(user text, assistant text, tool output) of each turn: 500, 200 and 4,096 chars."""
    rng = random.Random(11)

    def pick(pool: list[str], size: int) -> str:
        text = ""
        while len(text) < size:
            text += pool[rng.randrange(len(pool))] + "\n"
        return text[:size]

    return [
        (pick(corpus.texts, 500), pick(corpus.texts, 200), pick(corpus.outputs, 4_096))
        for _ in range(turns)
    ]


async def measure(
    db: Path, key: bytes | None, texts: list[tuple[str, str, str]], cold_rounds: int
) -> Timings:
    timings = Timings()
    session = await Session.create(model=MODEL, db=db, config=config(), encryption_key=key)
    async with session:
        for turn, (user, said, output) in enumerate(texts):
            call = f"call_{turn}"
            tool = ToolPart("read_file", call, {"path": "payhub/fx/service.py"}, status="pending")
            started = time.perf_counter()
            await session.record("user", user)
            await session.record("assistant", [said, tool])
            await session.update_tool(call, status="completed", output=output)
            timings.record.append(time.perf_counter() - started)
        for _ in range(max(cold_rounds, 3)):
            started = time.perf_counter()
            session.build_context()
            timings.warm.append(time.perf_counter() - started)
        budget = session.budget.usable
        session_id = session.id
    for _ in range(cold_rounds):
        started = time.perf_counter()
        store = Store(db, read_only=True, encryption_key=key)
        store.assemble(session_id, budget)
        timings.cold.append(time.perf_counter() - started)
        store.native.close()
    return timings


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.benchmark(group="encryption")
def test_turn_and_assembly(benchmark: Any, tmp_path: Path, corpus: Corpus, variant: str) -> None:
    turns = TURNS if benchmark.enabled else 3
    cold_rounds = COLD_ROUNDS if benchmark.enabled else 1
    texts = turn_texts(corpus, turns)
    key = KEY if variant == "encrypted" else None
    db = tmp_path / f"{variant}.db"

    def run() -> Timings:
        return anyio.run(measure, db, key, texts, cold_rounds)

    timings = benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    assert len(timings.record) == turns
    header = db.read_bytes()[:16]
    assert (header == b"SQLite format 3\0") == (key is None)
    if benchmark.enabled:
        RESULTS[variant] = timings
        for name, values in (
            ("record a turn", timings.record),
            (f"assemble warm ({2 * turns} messages)", timings.warm),
            ("assemble cold (new connection)", timings.cold),
        ):
            label = f"{variant}: {name}"
            FIGURES[label] = Figure(label, statistics.median(values))


def test_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """Prints the medians of both variants side by side (after the two runs above)."""
    if set(RESULTS) != set(VARIANTS):
        pytest.skip("the benchmarks above ran as a smoke test, or not at all")
    plain, encrypted = RESULTS["plain"], RESULTS["encrypted"]
    rows: list[tuple[str, Callable[[Timings], list[float]]]] = [
        ("record a turn", lambda t: t.record),
        ("assemble, warm", lambda t: t.warm),
        ("assemble, cold (new connection)", lambda t: t.cold),
    ]
    with capsys.disabled():
        print("\n--- encryption at rest (SQLCipher, raw key): medians ---")
        print(f"    {'':<34}{'plain':>12}{'encrypted':>12}{'ratio':>8}")
        for name, values in rows:
            off, on = statistics.median(values(plain)), statistics.median(values(encrypted))
            print(f"    {name:<34}{_fmt(off):>12}{_fmt(on):>12}{on / off:>7.2f}x")


def _fmt(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} µs"
