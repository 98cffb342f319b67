"""Start-up time of the ``lossless`` command line (target: ``lossless stats`` ≤ 300 ms).

The interpreter's own start-up and ``import lossless`` sit in the same group as
baselines, so the share the CLI adds (typer, rich, and the pydantic that typer uses
to convert option values) is visible.

Run: ``pytest benches/bench_cli.py --benchmark-enable``.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from lossless import Store, ToolPart

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A few sessions of a few hundred messages: stats must not grow with them much."""
    path = tmp_path_factory.mktemp("bench_cli") / "lossless.db"
    store = Store(path)
    rng = random.Random(7)
    for _ in range(3):
        sid = store.create_session("gpt-4o")
        for turn in range(100):
            store.append(sid, "user", f"step {turn}: look at module {rng.randrange(1000)}")
            output = "\n".join(f"{rng.random():.6f}" for _ in range(30))
            store.append(
                sid,
                "assistant",
                [ToolPart("read_file", f"call_{turn}", {"turn": turn}, output=output)],
            )
    return str(path)


def _run(*args: str) -> None:
    subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL)


@pytest.mark.benchmark(group="cli")
def test_interpreter_start(benchmark: BenchmarkFixture, record: Any) -> None:
    benchmark(_run, "-c", "pass")
    record(benchmark, "cli baseline: python -c pass")


@pytest.mark.benchmark(group="cli")
def test_import_lossless(benchmark: BenchmarkFixture, record: Any) -> None:
    benchmark(_run, "-c", "import lossless")
    record(benchmark, "cli baseline: import lossless")


@pytest.mark.benchmark(group="cli")
def test_lossless_stats(benchmark: BenchmarkFixture, record: Any, db: str) -> None:
    benchmark(_run, "-m", "lossless", "--db", db, "stats")
    record(benchmark, "cli: lossless stats (process wall time)", target="<= 300 ms")
