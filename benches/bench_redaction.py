"""What redaction at ingest costs a turn (issue 31, benchmark 1; the core's
throughput over mixed text is `rust/core/benches/redact.rs`).

``Session.record`` of a typical turn (a user message of 500 characters, then an
assistant message with a tool call and its 4 KB output), with redaction on (the
default) and off, on the same kind of file, side by side with the ratio. One turn in
twenty holds a secret, so the redacted path is measured too.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import random
import statistics
import string
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import FULL
from lossless import Session, ToolPart
from lossless.config import CompactionConfig, Config, ModelConfig, RedactionConfig

MODEL = "openai/bench-model"
TURNS = 400 if FULL else 40
WORDS = ["deploy", "payout", "ledger", "refund", "retry", "schema", "module", "client"]


def _config(enabled: bool) -> Config:
    return Config(
        model=ModelConfig(context_limit=1_000_000, max_output_tokens=1_000),
        compaction=CompactionConfig(soft_threshold=0.99),
        redaction=RedactionConfig(enabled=enabled),
    )


def _turn(rng: random.Random, n: int) -> tuple[str, str]:
    said = " ".join(rng.choice(WORDS) for _ in range(80))[:500]
    output = "\n".join(
        f"{line:4d} " + " ".join(rng.choice(WORDS) for _ in range(8)) for line in range(80)
    )
    if n % 20 == 0:
        token = "ghp_" + "".join(rng.choice(string.ascii_letters) for _ in range(36))
        output += f"\nGITHUB_TOKEN={token}"
    return said, output


async def _record_times(db: Path, enabled: bool) -> list[float]:
    rng = random.Random(7)
    took = []
    async with Session.open(model=MODEL, db=db, config=_config(enabled)) as session:
        for n in range(TURNS):
            said, output = _turn(rng, n)
            started = time.perf_counter()
            await session.record("user", said)
            call = ToolPart("read_file", f"c{n}", {"path": f"m{n}.py"}, output=output)
            await session.record("assistant", [call])
            took.append(time.perf_counter() - started)
    return took


@pytest.mark.benchmark(group="redaction")
def test_what_redaction_costs_a_turn(benchmark: Any, record: Any, tmp_path: Path) -> None:
    def measure() -> tuple[list[float], list[float]]:
        off = anyio.run(_record_times, tmp_path / "off.db", False)
        on = anyio.run(_record_times, tmp_path / "on.db", True)
        return off, on

    off, on = benchmark.pedantic(measure, rounds=1, iterations=1)
    off_ms, on_ms = statistics.median(off) * 1e3, statistics.median(on) * 1e3
    print(
        f"\nrecord of a typical turn ({TURNS} turns): redaction off {off_ms:.3f} ms, "
        f"on {on_ms:.3f} ms (x{on_ms / off_ms:.2f})"
    )
    record(
        benchmark,
        "record of a turn, redaction on",
        "redaction's cost on a typical turn",
        off_ms=round(off_ms, 3),
        on_ms=round(on_ms, 3),
    )
