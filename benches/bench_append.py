"""Appending one message (500-character text + 4 KB tool output) to a real database file.

Target: median <= 100 µs. The breakdown benchmarks in the same group show where the
time goes: counting the message's tokens, and the store's own work on a tiny message.
The append queues its parts for the full-text index; every 64th such append (128
queued parts) also indexes the queue, which the mean shows and the median does not.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pytest

from lossless import Store, TokenCounter, ToolPart

MODEL = "gpt-4o"


@pytest.fixture(scope="module")
def message(corpus: Any) -> tuple[str, str]:
    rng = random.Random(7)
    text = " ".join(corpus.texts[rng.randrange(len(corpus.texts))] for _ in range(4))[:500]
    output = "\n".join(corpus.outputs[rng.randrange(len(corpus.outputs))] for _ in range(2))[:4096]
    assert (len(text), len(output)) == (500, 4096)
    return text, output


@pytest.fixture
def session(tmp_path: Path) -> tuple[Store, str]:
    store = Store(tmp_path / "append.db")
    return store, store.create_session(MODEL)


@pytest.mark.benchmark(group="append")
def test_append_message(
    benchmark: Any, record: Any, session: tuple[Store, str], message: tuple[str, str]
) -> None:
    store, sid = session
    text, output = message
    calls = itertools.count()
    # The first count of a process loads the BPE tables (hundreds of ms): not an append.
    TokenCounter(MODEL).count_many([text, output])

    def append() -> dict[str, Any]:
        call = next(calls)
        tool = ToolPart(
            "read_file", f"call_{call}", {"path": "payhub/fx/service.py"}, output=output
        )
        return store.append(sid, "assistant", [text, tool])

    result = benchmark(append)
    assert result["token_count"] > 800
    assert store.view_stats(sid)["items"] == next(calls)
    record(benchmark, "append 500 chars + 4 KB tool output", target="<= 100 µs")


@pytest.mark.benchmark(group="append")
def test_count_tokens_of_the_message(benchmark: Any, record: Any, message: tuple[str, str]) -> None:
    # What append spends on tokenising (tiktoken-rs), measured alone.
    counter = TokenCounter(MODEL)
    text, output = message
    counts = benchmark(counter.count_many, [text, output])
    assert sum(counts) > 800
    record(benchmark, "  of which: count tokens of the same content")


@pytest.mark.benchmark(group="append")
def test_append_tiny_message(benchmark: Any, record: Any, session: tuple[Store, str]) -> None:
    # The store's own cost (transaction, rows, index, view) with nothing to tokenise.
    store, sid = session
    result = benchmark(store.append, sid, "user", "ok")
    assert result["token_count"] > 0
    record(benchmark, "  store overhead: append a 2-character message")
