"""Benchmark fixtures: seeded fixture databases built once per size, and a summary.

By default every benchmark runs once as a smoke test (``--benchmark-disable`` in
pyproject) at n = 1,000. Real runs::

    LOSSLESS_BENCH_FULL=1 .venv/bin/pytest benches --benchmark-enable -p no:cacheprovider

measure n = 1,000 / 10,000 / 100,000 (building 100,000 messages takes a few minutes)
and print a summary of every figure, with its target, at the end of the run.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lossless import Store

FULL = os.environ.get("LOSSLESS_BENCH_FULL") == "1"
SIZES = [1_000, 10_000, 100_000] if FULL else [1_000]
MODEL = "gpt-4o"
SEED = 1729

# A 200k-token window less the reply (16,384) and the compaction reserve (8,192).
CONTEXT_WINDOW = 200_000
MAX_OUTPUT_TOKENS = 16_384
COMPACTION_RESERVE = 8_192
BUDGET = CONTEXT_WINDOW - MAX_OUTPUT_TOKENS - COMPACTION_RESERVE

TOOL_SHARE = 0.30  # share of all messages that carry a large tool output
TOOL_NAMES = ["read_file", "run_tests", "grep", "list_dir", "git_diff"]

_WORD_TEXT = (
    "the a an and or but if then else when while for with without into onto from to of in on at by "
    "is are was were be been has have had do does did can could should would will may might must "
    "test tests fixture module function class method value values result results error errors "
    "failure passed failed skipped timeout retry request response client server session context "
    "token tokens budget window summary message messages store database query index cache version "
    "payment invoice currency rate ledger account balance transfer refund settlement report export "
    "file files path line lines column row rows table field fields config option default setting "
    "user assistant tool call output input status pending running completed schema migration "
    "because however therefore instead also only still already again first second last next "
    "update create delete read write parse render format check verify assert raise return import"
)
_WORDS = _WORD_TEXT.split()
_IDENTS = [
    "lookup_rate",
    "settle_invoice",
    "apply_refund",
    "parse_ledger",
    "TokenCounter",
    "render_row",
    "ServiceClient",
    "retry_policy",
    "currency_code",
    "export_csv",
    "build_index",
    "load_config",
]
_PATHS = [
    f"payhub/{area}/{name}.py"
    for area in ("fx", "ledger", "billing", "reports", "api")
    for name in ("service", "models", "client", "views", "utils")
]


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 18))]
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words)), rng.choice(_IDENTS))
    return " ".join(words).capitalize() + rng.choice([".", ".", ".", "?", ":"])


def _output_line(rng: random.Random) -> str:
    kind = rng.random()
    path = rng.choice(_PATHS)
    if kind < 0.35:
        return f"{path}:{rng.randint(1, 900)}: {_sentence(rng)}"
    if kind < 0.6:
        ident = rng.choice(_IDENTS)
        value, retries = rng.randint(0, 10_000), rng.randint(0, 5)
        return f"    {ident}({rng.choice(_WORDS)}={value}, retries={retries})"
    if kind < 0.75:
        status = rng.choice(["PASSED", "PASSED", "PASSED", "FAILED", "SKIPPED"])
        test = f"tests/test_{rng.choice(_WORDS)}.py::test_{rng.choice(_IDENTS).lower()}"
        return f"{test} {status} [{rng.randint(1, 99)}%]"
    return _sentence(rng)


def prose(rng: random.Random, low: int, high: int) -> str:
    """Deterministic English-like text of ``low`` to ``high`` characters."""
    target = rng.randint(low, high)
    text = ""
    while len(text) < target:
        text += (" " if text else "") + _sentence(rng)
    return text[:target]


def tool_output(rng: random.Random, low: int = 2048, high: int = 8192) -> str:
    """Deterministic tool output (grep hits, calls, test lines) of ``low`` to ``high`` bytes."""
    target = rng.randint(low, high)
    lines: list[str] = []
    size = 0
    while size < target:
        line = _output_line(rng)
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)[:target]


@dataclass
class Corpus:
    """Pools of texts and outputs the fixture sessions draw from."""

    texts: list[str]
    outputs: list[str]


@dataclass
class BenchDB:
    path: Path
    session_id: str
    n: int
    build_seconds: float
    tool_messages: int


def build_messages(
    n: int, corpus: Corpus, seed: int = SEED
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``n`` messages alternating user/assistant; ~30% of them carry a 2-8 KB tool output."""
    rng = random.Random(seed + n)
    for index in range(n):
        role = "user" if index % 2 == 0 else "assistant"
        text = corpus.texts[rng.randrange(len(corpus.texts))]
        # Only assistant turns carry tool calls: 60% of them make 30% of all messages.
        if role == "assistant" and rng.random() < TOOL_SHARE * 2:
            output = corpus.outputs[rng.randrange(len(corpus.outputs))]
            name = TOOL_NAMES[index % len(TOOL_NAMES)]
            parts = [
                {"kind": "text", "text": text},
                {
                    "kind": "tool",
                    "name": name,
                    "call_id": f"call_{index:07d}",
                    "input": json.dumps({"path": _PATHS[index % len(_PATHS)], "n": index}),
                    "output": f"[{name} #{index}]\n{output}",
                    "status": "completed",
                },
            ]
        else:
            parts = [{"kind": "text", "text": text}]
        yield role, parts


@pytest.fixture(scope="session")
def budget() -> int:
    """Tokens an assembly may use: a 200k window less reply and compaction reserve."""
    return BUDGET


@pytest.fixture(scope="session")
def corpus() -> Corpus:
    rng = random.Random(SEED)
    return Corpus(
        texts=[prose(rng, 60, 600) for _ in range(1024)],
        outputs=[tool_output(rng) for _ in range(512)],
    )


@pytest.fixture(scope="session")
def bench_db(tmp_path_factory: pytest.TempPathFactory, corpus: Corpus) -> Callable[[int], BenchDB]:
    """``bench_db(n)``: a database file with one session of ``n`` messages, built once per run."""
    built: dict[int, BenchDB] = {}
    root = tmp_path_factory.mktemp("bench-db")

    def get(n: int) -> BenchDB:
        if n not in built:
            path = root / f"session-{n}.db"
            started = time.perf_counter()
            store = Store(path)
            native = store.native
            session_id = native.create_session(MODEL, "{}", "You are a careful coding agent.")
            tools = 0
            for role, parts in build_messages(n, corpus):
                tools += len(parts) > 1
                native.append_message(session_id, role, parts)
            built[n] = BenchDB(path, session_id, n, time.perf_counter() - started, tools)
        return built[n]

    return get


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "n" in metafunc.fixturenames:
        metafunc.parametrize("n", SIZES, ids=[f"n={n:,}" for n in SIZES])


# --- the summary -------------------------------------------------------------------


@dataclass
class Figure:
    name: str
    median_s: float
    target: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


FIGURES: dict[str, Figure] = {}


@pytest.fixture
def record() -> Callable[..., None]:
    """``record(benchmark, name, target=..., **extra)``: keep a median for the summary."""

    def keep(benchmark: Any, name: str, target: str = "", **extra: Any) -> None:
        benchmark.extra_info.update(extra)
        if target:
            benchmark.extra_info["target"] = target
        if benchmark.enabled and benchmark.stats is not None:
            median = benchmark.stats.stats.median
            benchmark.extra_info["median_us"] = round(median * 1e6, 2)
            FIGURES[name] = Figure(name, median, target, dict(extra))

    return keep


def median(name: str) -> float | None:
    figure = FIGURES.get(name)
    return figure.median_s if figure else None


def _fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} µs"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not FIGURES:
        return
    write = terminalreporter.write_line
    terminalreporter.section("lossless benchmark summary")
    for figure in FIGURES.values():
        extra = ", ".join(f"{k}={v}" for k, v in figure.extra.items())
        target = f"  [target {figure.target}]" if figure.target else ""
        write(f"{figure.name:<44} median {_fmt(figure.median_s):>11}{target}  {extra}")
    ratios: list[str] = []
    small = median(f"assembly n={SIZES[0]:,}")
    for n in SIZES:
        native = median(f"assembly n={n:,}")
        raw = median(f"assembly baseline sqlite3 n={n:,}")
        if native and raw:
            ratios.append(f"assembly n={n:,}: sqlite3 baseline / lossless = {raw / native:.2f}x")
        if native and small and n != SIZES[0]:
            growth = native / small
            ratios.append(f"assembly n={n:,} / n={SIZES[0]:,} = {growth:.2f}x (target <= 1.3x)")
    for n, seconds in ((1_000, 1.1), (10_000, 8.8)):
        native = median(f"assembly n={n:,}")
        if native:
            speedup = seconds / native
            ratios.append(
                f"assembly n={n:,}: leading Python library ({seconds} s) = {speedup:,.0f}x"
            )
    for line in ratios:
        write(line)
