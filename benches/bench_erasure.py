"""Erasure of a large session (issue 31, benchmark 2): the total time of
``erase(session=...)`` (one transaction) and of ``maintain()`` erasing the same
session for its time to live (short transactions), each while another session of
the same file records turns; the longest that session's ``record`` waited is the
longest hold of the write lock it met.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import FULL, MODEL
from lossless import Store, ToolPart
from lossless.governance import erase, maintain, set_retention

MESSAGES = 10_000 if FULL else 1_000
WORDS = [
    "deploy",
    "payout",
    "ledger",
    "refund",
    "invoice",
    "retry",
    "cache",
    "schema",
    "module",
    "client",
]


def _session(store: Store, rng: random.Random) -> str:
    session = store.create_session(MODEL)
    for n in range(MESSAGES):
        if n % 3 == 2:
            output = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 400)))
            part = ToolPart("read_file", f"c{n}", {"n": n}, output=output)
            store.append(session, "assistant", [part])
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 60)))
            store.append(session, "user" if n % 3 == 0 else "assistant", text)
    return session


def _while_recording(db: Path, work: Callable[[], Any]) -> tuple[float, list[float]]:
    """Runs ``work`` while another session records turns; its seconds and the
    latencies of every record made meanwhile."""
    recorder = Store(db)
    other = recorder.create_session(MODEL)
    latencies: list[float] = []
    done = threading.Event()

    def record() -> None:
        while not done.is_set():
            started = time.perf_counter()
            recorder.append(other, "user", "a live turn meanwhile")
            latencies.append(time.perf_counter() - started)
            time.sleep(0.002)

    thread = threading.Thread(target=record)
    thread.start()
    time.sleep(0.05)
    started = time.perf_counter()
    work()
    took = time.perf_counter() - started
    done.set()
    thread.join()
    return took, latencies


@pytest.mark.benchmark(group="erasure")
def test_erasing_a_large_session(benchmark: Any, record: Any, tmp_path: Path) -> None:
    db = tmp_path / "erase.db"
    store = Store(db)
    rng = random.Random(31)
    whole, expiring = _session(store, rng), _session(store, rng)
    set_retention(store, session=expiring, ttl=timedelta(seconds=1))

    def measure() -> tuple[tuple[float, list[float]], tuple[float, list[float]]]:
        once = _while_recording(db, lambda: erase(store, session=whole))
        later = datetime.now().astimezone() + timedelta(minutes=1)
        batched = _while_recording(db, lambda: maintain(store, now=later))
        return once, batched

    (erase_s, erase_waits), (maintain_s, maintain_waits) = benchmark.pedantic(
        measure, rounds=1, iterations=1
    )
    assert [row for row in store.sessions() if row.id in (whole, expiring)] == []
    print(
        f"\nerasure of a {MESSAGES:,}-message session: erase() {erase_s * 1e3:.0f} ms in one "
        f"transaction, longest record meanwhile {max(erase_waits) * 1e3:.1f} ms; "
        f"maintain() {maintain_s * 1e3:.0f} ms in batches, longest record meanwhile "
        f"{max(maintain_waits) * 1e3:.1f} ms "
        f"(median {statistics.median(maintain_waits) * 1e3:.2f} ms)"
    )
    record(
        benchmark,
        f"erasure of a {MESSAGES:,}-message session",
        "retention batches hold the lock about 50 ms at most",
        erase_ms=round(erase_s * 1e3, 1),
        erase_longest_wait_ms=round(max(erase_waits) * 1e3, 1),
        maintain_ms=round(maintain_s * 1e3, 1),
        maintain_longest_wait_ms=round(max(maintain_waits) * 1e3, 1),
    )
