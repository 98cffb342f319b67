"""What OpenTelemetry tracing costs a turn: the same work with telemetry off and on,
in the same run, turn for turn.

1. ``send()`` against the project's local server (in this process, no latency):
   three sessions, one with ``Config.telemetry`` off (the default), one with it on
   and the API's no-op providers (what lossless's own hooks cost), one with it on
   and the SDK's TracerProvider and MeterProvider (spans batched and exported to
   memory from the SDK's thread, content not captured), their turns interleaved so
   all see the same machine. Each traced turn is a CLIENT span, its request and
   usage figures and six metric records. Reported: the three medians and each
   against off.
2. ``await session.context()`` (the own loop's request, no network) the same way:
   the work lossless does itself, where the spans' share shows most.

By default (``--benchmark-disable``) each runs once on a few turns as a smoke test.
Real run::

    .venv/bin/pytest benches/bench_telemetry.py --benchmark-enable -p no:cacheprovider -s
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracerProvider

# The local server in a process of its own, as bench_session.py runs it: in this one,
# its threads would compete for the interpreter with the turns measured.
from bench_session import Server
from bench_session import server as model_server  # noqa: F401  (a fixture)
from lossless import Session
from lossless.config import Config, LLMConfig, ModelConfig, TelemetryConfig

MODEL = "openai/bench-model"
QUESTION = (
    "turn {i}: the invoice export still rounds currency amounts before conversion; "
    "could you check lookup_rate in payhub/fx/service.py and tell me what to change?"
)


def _config(server: Server, telemetry: TelemetryConfig) -> Config:
    return Config(
        model=ModelConfig(
            context_limit=128_000, max_output_tokens=4_096, token_correction=1.0, profile="default"
        ),
        llm=LLMConfig(api_base=server.base_url, api_key="test", num_retries=0),
        telemetry=telemetry,
    )


def _telemetry() -> tuple[TelemetryConfig, TracerProvider, InMemorySpanExporter]:
    """Telemetry on, with the SDK as a service sets it up: spans batched and
    exported from the SDK's own thread (to memory here)."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    config = TelemetryConfig(tracer_provider=tracer_provider, meter_provider=meter_provider)
    return config, tracer_provider, exporter


#: Telemetry on, with the API's no-op providers: lossless's own share of the cost.
NO_OP = TelemetryConfig(tracer_provider=NoOpTracerProvider(), meter_provider=NoOpMeterProvider())
KINDS = ("off", "no-op", "sdk")


Step = Callable[[Session, int], Awaitable[Any]]
#: Seconds of each step, by (kind, clock).
Times = dict[tuple[str, str], list[float]]


async def _send(session: Session, turn: int) -> None:
    await session.send(QUESTION.format(i=turn))


async def _context(session: Session, turn: int) -> None:
    await session.context()


async def _interleaved(server: Server, step: Step, turns: int, db: Path) -> tuple[Times, int]:
    """``turns`` steps on each session (telemetry off, on with no-op providers, on
    with the SDK), in an order that rotates every turn; returns the seconds of each
    step per kind (wall time, and CPU time of this thread), and the spans the SDK
    session made."""
    sdk, tracer_provider, exporter = _telemetry()
    times: Times = {(kind, clock): [] for kind in KINDS for clock in ("wall", "cpu")}
    configs = {"off": TelemetryConfig(), "no-op": NO_OP, "sdk": sdk}
    sessions = {
        kind: await Session.create(
            model=MODEL, db=db / f"{kind}.db", config=_config(server, configs[kind])
        )
        for kind in KINDS
    }
    try:
        assert sessions["off"].telemetry is None and sessions["sdk"].telemetry is not None
        for session in sessions.values():
            await session.record("user", QUESTION.format(i=-1))
            await session.record("assistant", "Looking at lookup_rate now.")
        for turn in range(turns):
            shift = turn % len(KINDS)
            for kind in KINDS[shift:] + KINDS[:shift]:
                started, cpu = time.perf_counter(), time.thread_time()
                await step(sessions[kind], turn)
                times[kind, "cpu"].append(time.thread_time() - cpu)
                times[kind, "wall"].append(time.perf_counter() - started)
    finally:
        for session in sessions.values():
            await session.close()
    tracer_provider.force_flush()
    spans = len(exporter.get_finished_spans())
    tracer_provider.shutdown()
    return times, spans


def _report(benchmark: Any, record: Any, name: str, times: Times) -> None:
    # The first turns warm litellm and the tokenizer; they are not the steady state.
    warm = max(1, len(times["off", "wall"]) // 10)
    medians = {key: statistics.median(steps[warm:] or steps) for key, steps in times.items()}
    figures: dict[str, float] = {}
    for clock in ("wall", "cpu"):
        off, no_op, sdk = (medians[kind, clock] for kind in KINDS)
        print(
            f"\n{name}, {clock} time, median of {len(times['off', clock])} each: "
            f"off {off * 1e3:.3f} ms; on, no-op providers {no_op * 1e3:.3f} ms "
            f"({no_op / off:.3f}x, {(no_op - off) * 1e6:+.0f} µs); on, SDK "
            f"{sdk * 1e3:.3f} ms ({sdk / off:.3f}x, {(sdk - off) * 1e6:+.0f} µs)"
        )
        figures |= {
            f"{clock}_off_ms": round(off * 1e3, 3),
            f"{clock}_no_op_ms": round(no_op * 1e3, 3),
            f"{clock}_sdk_ms": round(sdk * 1e3, 3),
            f"{clock}_sdk_ratio": round(sdk / off, 3),
        }
    record(benchmark, f"{name}: telemetry on / off", **figures)


@pytest.mark.benchmark(group="telemetry")
@pytest.mark.timeout(1_800)
@pytest.mark.parametrize(
    ("name", "step", "full"), [("send()", _send, 400), ("context()", _context, 2_000)]
)
def test_telemetry_cost_of_a_turn(
    benchmark: Any, record: Any, request: pytest.FixtureRequest, name: str, step: Step, full: int
) -> None:
    server: Server = request.getfixturevalue("model_server")
    turns = full if benchmark.enabled else 6
    results: list[tuple[Times, int]] = []

    def run() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            results.append(anyio.run(_interleaved, server, step, turns, Path(tmp)))

    benchmark.pedantic(run, rounds=1, iterations=1)
    times, spans = results[0]
    assert all(len(steps) == turns for steps in times.values())
    # One span per step of the traced session (a model turn; a request).
    assert spans == turns
    _report(benchmark, record, name, times)
