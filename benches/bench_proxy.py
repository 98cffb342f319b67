"""What the proxy adds to a request (issue 30, benchmark 2): the same conversation
sent to the project's local server directly and through ``lossless proxy``, the
client the ``openai`` SDK; the added latency's median and 99th percentile.

Each request carries the conversation so far (it grows by a tool round each time);
through the proxy it is synced into its session and the bounded request goes on.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

import anyio
import openai
import pytest

from conftest import FULL
from lossless.config import Config, ModelConfig
from lossless.proxy import LosslessProxy
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

ROUNDS = 300 if FULL else 60
CONFIG = Config(model=ModelConfig(context_limit=128_000, max_output_tokens=1_000))


async def _latencies(client: openai.AsyncOpenAI, server: LocalLLMServer) -> list[float]:
    messages: list[Any] = [{"role": "user", "content": "Make the billing tests pass."}]
    took = []
    for step in range(ROUNDS):
        server.enqueue(Reply(tool_calls=[ToolCallSpec("run_tests", json.dumps({"n": step}))]))
        started = time.perf_counter()
        reply = await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        took.append(time.perf_counter() - started)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        output = f"step {step}: 41 passed, 1 failed " + "log line " * 40
        messages.append(
            {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": output}
        )
    return took


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


@pytest.mark.benchmark(group="proxy")
def test_what_the_proxy_adds(benchmark: Any, record: Any, tmp_path: Path) -> None:
    async def measure() -> tuple[list[float], list[float]]:
        with LocalLLMServer() as server:
            async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k") as direct:
                plain = await _latencies(direct, server)
            async with (
                LosslessProxy(
                    upstream=server.base_url, db=tmp_path / "proxy.db", config=CONFIG, port=0
                ) as proxy,
                openai.AsyncOpenAI(base_url=proxy.url, api_key="k") as client,
            ):
                proxied = await _latencies(client, server)
        return plain, proxied

    plain, proxied = benchmark.pedantic(lambda: anyio.run(measure), rounds=1, iterations=1)
    added = [b - a for a, b in zip(sorted(plain), sorted(proxied), strict=True)]
    median_ms = round(statistics.median(proxied) - statistics.median(plain), 6) * 1e3
    p99_ms = round(_p99(proxied) - _p99(plain), 6) * 1e3
    print(
        f"\nproxy: direct median {statistics.median(plain) * 1e3:.2f} ms, "
        f"p99 {_p99(plain) * 1e3:.2f} ms; through the proxy median "
        f"{statistics.median(proxied) * 1e3:.2f} ms, p99 {_p99(proxied) * 1e3:.2f} ms; "
        f"added median {median_ms:.2f} ms, p99 {p99_ms:.2f} ms"
    )
    assert len(added) == ROUNDS
    record(
        benchmark,
        f"proxy, {ROUNDS} requests of a growing tool run",
        "added latency: median and p99",
        added_median_ms=round(median_ms, 2),
        added_p99_ms=round(p99_ms, 2),
        direct_median_ms=round(statistics.median(plain) * 1e3, 2),
    )
