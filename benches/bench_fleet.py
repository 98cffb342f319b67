"""A fleet on one PostgreSQL server: 16 worker processes × 8 sessions each.

Every worker opens its own connection, creates its sessions, and then all append
turns together (a 300-character user text or a tool call with a 2 KB output,
round-robin over their sessions) as fast as they can. Figures: turns stored per
second across the fleet (all turns over the wall time from the first worker's
start to the last one's end), and the median and p99 latency of one append. The
server is a throwaway cluster on this machine (``fsync`` off), reached over TCP.

The full run appends 400 turns per worker (``LOSSLESS_BENCH_FULL=1``); the smoke
run 10.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lossless.testing.postgres import PostgresCluster

WORKERS = 16
SESSIONS = 8
TURNS = 400 if os.environ.get("LOSSLESS_BENCH_FULL") == "1" else 10
WORKER = Path(__file__).with_name("fleet_worker.py")


@pytest.fixture(scope="module")
def fleet_url() -> Iterator[str]:
    with PostgresCluster() as cluster:
        yield cluster.url(cluster.create_database())


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def run_fleet(url: str, start_file: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(WORKER.parent.parent / "python")}
    args = [url, str(SESSIONS), str(TURNS), str(start_file)]
    workers = [
        subprocess.Popen(
            [sys.executable, str(WORKER), *args], stdout=subprocess.PIPE, text=True, env=env
        )
        for _ in range(WORKERS)
    ]
    # Every worker has its sessions once they all wait; then they start together.
    start_file.touch()
    reports = []
    for worker in workers:
        out, _ = worker.communicate(timeout=600)
        assert worker.returncode == 0, out
        reports.append(json.loads(out.strip().splitlines()[-1]))
    latencies = [latency for report in reports for latency in report["latencies"]]
    wall = max(r["end"] for r in reports) - min(r["start"] for r in reports)
    return {
        "turns": len(latencies),
        "turns_per_s": len(latencies) / wall,
        "p50_ms": _percentile(latencies, 0.5) * 1e3,
        "p99_ms": _percentile(latencies, 0.99) * 1e3,
    }


@pytest.mark.benchmark(group="fleet")
@pytest.mark.timeout(900)
def test_a_fleet_of_workers_appends_to_one_server(
    benchmark: Any, record: Any, fleet_url: str, tmp_path: Path
) -> None:
    runs: list[dict[str, float]] = []

    def run() -> None:
        runs.append(run_fleet(fleet_url, tmp_path / f"start-{len(runs)}"))

    benchmark.pedantic(run, rounds=1, iterations=1)
    figures = runs[-1]
    print(
        f"\nfleet, {WORKERS} processes × {SESSIONS} sessions, {figures['turns']:,} turns: "
        f"{figures['turns_per_s']:,.0f} turns/s; append p50 {figures['p50_ms']:.2f} ms, "
        f"p99 {figures['p99_ms']:.2f} ms"
    )
    assert figures["turns"] == WORKERS * TURNS
    record(
        benchmark,
        f"fleet {WORKERS}×{SESSIONS}, {TURNS} turns each",
        target="turns/s and p99 append (no target)",
        turns_per_s=round(figures["turns_per_s"]),
        p50_ms=round(figures["p50_ms"], 3),
        p99_ms=round(figures["p99_ms"], 3),
    )
