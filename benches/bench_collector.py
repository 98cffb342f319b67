"""The event loop beside streamed model calls, with and without litellm's heap frozen.

A child process streams replies from the local server one after another (after a
first call that imports litellm and its provider modules), with a 1 ms watchdog
task beside the calls; it reports the watchdog's worst and p99 lateness and the
full garbage collections that ran, with their durations. It runs twice: as the
library does by default (decision 173: no collection during litellm's import, the
heap frozen after it and after the first call) and with ``LOSSLESS_GC_FREEZE=0``.
A full collection that walks litellm's heap holds the interpreter for a quarter
second on this machine, and the watchdog sees it.

The full run streams 1,500 replies (`LOSSLESS_BENCH_FULL=1`); the smoke run 10.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from conftest import FULL

CALLS = 1_500 if FULL else 10

_CHILD = textwrap.dedent(
    """
    import gc, json, sys, time
    import anyio
    from lossless.config import LLMConfig
    from lossless.llm import stream_completion
    from lossless.testing import LocalLLMServer, Reply

    calls = int(sys.argv[1])
    full_collections = []
    started = [0.0]

    def on_collection(phase, info):
        if phase == "start":
            started[0] = time.perf_counter()
        elif info["generation"] == 2:
            full_collections.append(time.perf_counter() - started[0])

    lags = []

    async def watchdog(done):
        while not done.is_set():
            began = time.perf_counter()
            await anyio.sleep(0.001)
            lags.append(time.perf_counter() - began - 0.001)

    with LocalLLMServer() as server:
        llm = LLMConfig(api_base=server.base_url, api_key="test", timeout_s=10.0)
        messages = [{"role": "user", "content": "summarise the ledger " * 40}]

        async def main():
            server.enqueue(Reply(text="first"))
            await stream_completion("openai/gpt-4o-mini", messages, llm=llm)
            gc.callbacks.append(on_collection)
            done = anyio.Event()
            async with anyio.create_task_group() as group:
                group.start_soon(watchdog, done)
                for _ in range(calls):
                    server.enqueue(Reply(text="the ledger settles the payout batch " * 20))
                    await stream_completion("openai/gpt-4o-mini", messages, llm=llm)
                done.set()

        anyio.run(main)
    lags.sort()
    print(json.dumps({
        "worst_ms": lags[-1] * 1e3,
        "p99_ms": lags[int(len(lags) * 0.99)] * 1e3,
        "full_collections_ms": [round(d * 1e3, 1) for d in full_collections],
    }))
    """
)


def _run(freeze: bool) -> dict[str, Any]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env["LOSSLESS_GC_FREEZE"] = "1" if freeze else "0"
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(CALLS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=1_200,
        check=True,
    )
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


@pytest.mark.benchmark(group="collector")
@pytest.mark.timeout(2400)
def test_full_collections_beside_streamed_calls(benchmark: Any, record: Any) -> None:
    runs: dict[str, dict[str, Any]] = {}

    def run() -> None:
        runs["frozen"] = _run(freeze=True)
        runs["unfrozen"] = _run(freeze=False)

    benchmark.pedantic(run, rounds=1, iterations=1)
    for name, figures in runs.items():
        collections = figures["full_collections_ms"]
        print(
            f"\n{CALLS:,} streamed calls, heap {name}: watchdog worst "
            f"{figures['worst_ms']:.1f} ms, p99 {figures['p99_ms']:.2f} ms; "
            f"{len(collections)} full collections, longest "
            f"{max(collections, default=0.0):.1f} ms"
        )
    frozen, unfrozen = runs["frozen"], runs["unfrozen"]
    record(
        benchmark,
        f"{CALLS:,} streamed calls: the loop's worst stall, heap frozen / not",
        frozen_worst_ms=round(frozen["worst_ms"], 1),
        unfrozen_worst_ms=round(unfrozen["worst_ms"], 1),
        frozen_longest_full_collection_ms=max(frozen["full_collections_ms"], default=0.0),
        unfrozen_longest_full_collection_ms=max(unfrozen["full_collections_ms"], default=0.0),
    )
