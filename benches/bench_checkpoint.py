"""What checkpointing a streamed reply costs a turn.

Two sessions against the local server stream the same 16 KB reply (about 700 chunks,
no delay between them), one with the default checkpoints (every 0.25 s or 4,096
characters) and one with checkpoints switched off; their turns alternate. Figures:
the median `send()` of each, and how long a turn's checkpoint writes take to come
back (they run beside the stream, which does not wait for them). Target: at most 5%
of the framework's time per streamed turn (`bench_session.py` measures that time).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from lossless import Session
from lossless.config import Config, LLMConfig, ModelConfig, StoreConfig
from lossless.streams import StreamCheckpoint
from lossless.testing import LocalLLMServer, Reply

MODEL = "openai/bench-checkpoint"
REPLY = " ".join(f"token{index % 97}" for index in range(2_000))  # about 16 KB


def _config(server: LocalLLMServer, store: StoreConfig) -> Config:
    return Config(
        model=ModelConfig(context_limit=128_000, max_output_tokens=8_000, token_correction=1.0),
        llm=LLMConfig(api_base=server.base_url, api_key="test", num_retries=0),
        store=store,
    )


def run_pairs(db_dir: Path, turns: int) -> dict[str, Any]:
    in_checkpoints: list[float] = []
    real_write = StreamCheckpoint._write

    async def timed_write(self: StreamCheckpoint, *args: Any) -> None:
        started = time.perf_counter()
        try:
            await real_write(self, *args)
        finally:
            in_checkpoints.append(time.perf_counter() - started)

    StreamCheckpoint._write = timed_write  # type: ignore[method-assign]
    on_s: list[float] = []
    off_s: list[float] = []
    try:
        with LocalLLMServer() as server:
            server.responder = lambda request: Reply(text=REPLY)
            off = StoreConfig(checkpoint_interval_s=1e9, checkpoint_chars=10**9)

            async def main() -> None:
                async with (
                    Session.open(
                        model=MODEL, db=db_dir / "on.db", config=_config(server, StoreConfig())
                    ) as with_checkpoints,
                    Session.open(
                        model=MODEL, db=db_dir / "off.db", config=_config(server, off)
                    ) as without,
                ):
                    await with_checkpoints.send("warm up")
                    await without.send("warm up")
                    in_checkpoints.clear()
                    for turn in range(turns):
                        for session, times in ((with_checkpoints, on_s), (without, off_s)):
                            started = time.perf_counter()
                            await session.send(f"turn {turn}")
                            times.append(time.perf_counter() - started)

            anyio.run(main)
    finally:
        StreamCheckpoint._write = real_write  # type: ignore[method-assign]
    return {
        "send_on_ms": statistics.median(on_s) * 1e3,
        "send_off_ms": statistics.median(off_s) * 1e3,
        "checkpoints_per_turn": len(in_checkpoints) / turns,
        "in_checkpoints_ms": sum(in_checkpoints) / turns * 1e3,
    }


@pytest.mark.benchmark(group="checkpoint")
@pytest.mark.timeout(600)
def test_checkpointing_a_streamed_reply(benchmark: Any, record: Any, tmp_path: Path) -> None:
    turns = 40 if benchmark.enabled else 2
    runs: list[dict[str, Any]] = []
    benchmark.pedantic(lambda: runs.append(run_pairs(tmp_path, turns)), rounds=1, iterations=1)
    figures = runs[-1]
    print(
        f"\ncheckpoints: send {figures['send_on_ms']:.3f} ms with, "
        f"{figures['send_off_ms']:.3f} ms without (16 KB reply); "
        f"{figures['checkpoints_per_turn']:.1f} checkpoints a turn, "
        f"{figures['in_checkpoints_ms']:.3f} ms a turn in them"
    )
    assert figures["checkpoints_per_turn"] >= 1
    record(
        benchmark,
        "stream checkpoints, 16 KB reply",
        target="<= 5% of the framework's time per streamed turn",
        **{key: round(value, 3) for key, value in figures.items()},
    )
