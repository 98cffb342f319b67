"""One worker process of ``bench_fleet.py``.

Usage: ``python fleet_worker.py URL SESSIONS TURNS START_FILE``. Opens one store on
the database at URL, creates SESSIONS sessions, waits until START_FILE exists (so
every worker starts appending together), then appends TURNS turns round-robin over
its sessions, each a 300-character user text or a tool call with a 2 KB output,
timing every append. Prints one JSON line: start and end (wall clock) and the
latencies in seconds.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

from lossless import Store, ToolPart
from lossless.parts import PartsInput

WORDS = [
    "ledger",
    "payout",
    "refund",
    "invoice",
    "retry",
    "webhook",
    "settle",
    "batch",
    "merchant",
    "account",
]


def text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    while sum(len(word) + 1 for word in words) < chars:
        words.append(rng.choice(WORDS))
    return " ".join(words)[:chars]


def main() -> None:
    url, sessions, turns, start_file = sys.argv[1:5]
    rng = random.Random(os.getpid())
    store = Store(url)
    session_ids = [store.create_session("gpt-4o") for _ in range(int(sessions))]
    # The first count of a process loads the tokenizer's tables: not an append.
    store.append(session_ids[0], "user", "warm up")
    while not Path(start_file).exists():
        time.sleep(0.005)
    latencies: list[float] = []
    started = time.time()
    for turn in range(int(turns)):
        session_id = session_ids[turn % len(session_ids)]
        content: PartsInput
        if turn % 2:
            output = text(rng, 2048)
            content = [ToolPart("read_file", f"call_{turn}", {"n": turn}, output=output)]
            role = "assistant"
        else:
            content, role = text(rng, 300), "user"
        begun = time.perf_counter()
        store.append(session_id, role, content)
        latencies.append(time.perf_counter() - begun)
    print(json.dumps({"start": started, "end": time.time(), "latencies": latencies}))


if __name__ == "__main__":
    main()
