"""Opening a session in a fresh process, with no limits in the config.

Each round starts a new interpreter that imports the session, creates a session of
``openai/gpt-4o`` with no limits in its config (they come from litellm's model map),
records 100 turns, closes it, and prints the wall time of ``Session.create`` and the
process's peak RSS. Targets: create ≤ 300 ms; peak RSS ≤ 100 MB (issue baseline:
2.9 s and 244 MB, when opening a session imported litellm).

Two baselines run the same way: the session with both limits in its config (no map
read), and the same session after ``import litellm`` in the timed span, which is what
the lookup cost when it went through litellm.

By default (``--benchmark-disable``) each runs once. Real run::

    .venv/bin/pytest benches/bench_create.py --benchmark-enable -p no:cacheprovider -s
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conftest import FIGURES, Figure

ISSUE_CREATE_S = 2.9
ISSUE_PEAK_RSS_MB = 244.0
TARGET_CREATE_S = 0.300
TARGET_PEAK_RSS_MB = 100.0

# The child: argv[1] is the variant ("map", "configured" or "litellm").
_CHILD = textwrap.dedent(
    """
    import json
    import resource
    import sys
    import time

    import anyio

    from lossless.config import Config, ModelConfig
    from lossless.session import Session

    variant = sys.argv[1]
    limits = ModelConfig(context_limit=128_000, max_output_tokens=16_384)
    config = Config(model=limits) if variant == "configured" else None


    async def main() -> float:
        started = time.perf_counter()
        if variant == "litellm":
            from lossless.llm import import_litellm

            import_litellm()
        session = await Session.create(model="openai/gpt-4o", db="create.db", config=config)
        created = time.perf_counter() - started
        async with session:
            for turn in range(100):
                role = "user" if turn % 2 == 0 else "assistant"
                await session.record(role, f"turn {turn}: the export rounds before converting")
        return created


    created = anyio.run(main)
    # ru_maxrss is in KiB on Linux, in bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    report = {"create_s": created, "peak_rss_bytes": peak, "litellm": "litellm" in sys.modules}
    print(json.dumps(report))
    """
)


@dataclass
class Runs:
    """What the child processes of one variant reported."""

    create_s: list[float] = field(default_factory=list)
    peak_rss_mb: list[float] = field(default_factory=list)
    imported_litellm: list[bool] = field(default_factory=list)

    def median_create_s(self) -> float:
        return statistics.median(self.create_s)

    def median_peak_rss_mb(self) -> float:
        return statistics.median(self.peak_rss_mb)


def run_child(variant: str, cwd: Path, runs: Runs) -> None:
    (cwd / "create.db").unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, variant],
        cwd=cwd,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    runs.create_s.append(report["create_s"])
    runs.peak_rss_mb.append(report["peak_rss_bytes"] / 2**20)
    runs.imported_litellm.append(report["litellm"])


def measure(benchmark: Any, variant: str, tmp_path: Path, rounds: int) -> Runs:
    runs = Runs()
    rounds = rounds if benchmark.enabled else 1
    benchmark.pedantic(
        run_child, args=(variant, tmp_path, runs), rounds=rounds, warmup_rounds=0, iterations=1
    )
    benchmark.extra_info.update(
        create_median_ms=round(runs.median_create_s() * 1e3, 1),
        peak_rss_median_mb=round(runs.median_peak_rss_mb(), 1),
    )
    return runs


def keep(name: str, runs: Runs, target: str = "") -> None:
    """The child's own create time is the figure; the process's wall time is not."""
    extra = {"peak_rss_mb": round(runs.median_peak_rss_mb(), 1), "rounds": len(runs.create_s)}
    FIGURES[name] = Figure(name, runs.median_create_s(), target, extra)


def summary(capsys: pytest.CaptureFixture[str], lines: list[str]) -> None:
    with capsys.disabled():
        print("\n--- session create in a fresh process, no limits configured ---")
        for line in lines:
            print(f"    {line}")


@pytest.mark.benchmark(group="session-create")
def test_create_with_limits_from_the_map(
    benchmark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = measure(benchmark, "map", tmp_path, rounds=15)
    assert not any(runs.imported_litellm), "opening a session imported litellm"
    if not benchmark.enabled:
        return
    keep("session create, limits from the map", runs, target="<= 300 ms, peak RSS <= 100 MB")
    create, peak = runs.median_create_s(), runs.median_peak_rss_mb()
    summary(
        capsys,
        [
            f"Session.create:  median {create * 1e3:7.1f} ms  [target <= 300 ms]  "
            f"issue baseline {ISSUE_CREATE_S} s = {ISSUE_CREATE_S / create:.1f}x",
            f"peak RSS:        median {peak:7.1f} MB  [target <= 100 MB]  "
            f"issue baseline {ISSUE_PEAK_RSS_MB:.0f} MB = {ISSUE_PEAK_RSS_MB / peak:.2f}x",
            f"rounds: {len(runs.create_s)}; create range "
            f"{min(runs.create_s) * 1e3:.1f}-{max(runs.create_s) * 1e3:.1f} ms",
        ],
    )


@pytest.mark.benchmark(group="session-create")
def test_create_with_configured_limits(benchmark: Any, tmp_path: Path) -> None:
    runs = measure(benchmark, "configured", tmp_path, rounds=15)
    assert not any(runs.imported_litellm)
    if benchmark.enabled:
        keep("session create baseline: limits configured", runs)


@pytest.mark.benchmark(group="session-create")
def test_create_after_importing_litellm(benchmark: Any, tmp_path: Path) -> None:
    runs = measure(benchmark, "litellm", tmp_path, rounds=5)
    assert all(runs.imported_litellm)
    if benchmark.enabled:
        keep("session create baseline: import litellm first", runs)
