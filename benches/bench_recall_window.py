"""Focused recall in a long session: expand centred on a message, and read.

Targets: ``expand(summary, around=msg)`` <= 2 ms median in a 100,000-message session
(the root summary covering all of them, a 4,000-token window, the recall tools'
budget); ``read(msg)`` of one stored message <= 0.5 ms median.

The session is the realistic corpus of ``conftest`` (30% of messages carry a 2-8 KB
tool output), every message under leaf summaries of 40 messages (about 20,000
tokens of source each, the default leaf chunk), 50 leaves per condensed summary
and one root above those. Smoke runs use 2,000 messages; ``LOSSLESS_BENCH_FULL=1``
100,000.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import FULL, MODEL, Corpus, build_messages
from lossless import Store

MESSAGES = 100_000 if FULL else 2_000
LEAF = 40
FAN_OUT = 50
WINDOW = 4_000


@dataclass
class Summarised:
    store: Store
    root: str
    ids: list[str]


def _condense(store: Store, sid: str, children: list[str]) -> list[str]:
    """Summaries over ``children``, FAN_OUT at a time."""
    native = store.native
    return [
        native.commit_summary(sid, f"condensed {i}", 3, [], children[i : i + FAN_OUT])["summary_id"]
        for i in range(0, len(children), FAN_OUT)
    ]


@pytest.fixture(scope="module")
def summarised(tmp_path_factory: pytest.TempPathFactory, corpus: Corpus) -> Summarised:
    path: Path = tmp_path_factory.mktemp("window") / "window.db"
    writer = Store(path)
    sid = writer.create_session(MODEL)
    native = writer.native
    ids = [
        native.append_message(sid, role, parts)["id"]
        for role, parts in build_messages(MESSAGES + 4, corpus)
    ]
    level = [
        native.commit_summary(sid, f"leaf {i}", 1, ids[i : i + LEAF], [])["summary_id"]
        for i in range(0, MESSAGES, LEAF)
    ]
    while len(level) > 1:
        level = _condense(writer, sid, level)
    writer.flush_search_index()
    return Summarised(Store(path, read_only=True), level[0], ids[:MESSAGES])


@pytest.mark.benchmark(group="recall-window")
def test_expand_around_a_message(
    benchmark: Any, summarised: Summarised, record: Callable[..., None]
) -> None:
    focus = summarised.ids[MESSAGES // 2 + 7]
    window = benchmark(summarised.store.expand, summarised.root, max_tokens=WINDOW, around=focus)
    assert focus in [message["id"] for message in window["messages"]]
    assert window["total_messages"] == MESSAGES
    record(
        benchmark,
        f"expand around, {MESSAGES:,} messages",
        "<= 2 ms at 100,000 messages",
        shown=len(window["messages"]),
    )


@pytest.mark.benchmark(group="recall-window")
def test_expand_oldest_first(
    benchmark: Any, summarised: Summarised, record: Callable[..., None]
) -> None:
    window = benchmark(summarised.store.expand, summarised.root, max_tokens=WINDOW)
    assert window["messages_before"] == 0 and window["messages"]
    record(benchmark, f"expand oldest first, {MESSAGES:,} messages", shown=len(window["messages"]))


@pytest.mark.benchmark(group="recall-window")
def test_expand_centred_on_a_query(
    benchmark: Any, summarised: Summarised, record: Callable[..., None]
) -> None:
    window = benchmark(
        summarised.store.expand, summarised.root, max_tokens=WINDOW, query="settle_invoice retries"
    )
    assert window["focus_id"] is not None
    record(benchmark, f"expand query, {MESSAGES:,} messages", shown=len(window["messages"]))


def _tool_message(summarised: Summarised) -> str:
    """A message in the middle of the session that carries a tool output."""
    for message_id in summarised.ids[MESSAGES // 2 :]:
        if summarised.store.native.get_message(message_id)["parts"][-1]["kind"] == "tool":
            return message_id
    raise AssertionError("no tool message")


@pytest.mark.benchmark(group="recall-read")
def test_read_a_tool_message(
    benchmark: Any, summarised: Summarised, record: Callable[..., None]
) -> None:
    message_id = _tool_message(summarised)
    page = benchmark(summarised.store.read, message_id, max_tokens=WINDOW)
    assert page["next_cursor"] is None and "output:" in page["text"]
    record(
        benchmark,
        "read one message with a tool output",
        "<= 0.5 ms",
        chars=page["total_chars"],
    )


@pytest.mark.benchmark(group="recall-read")
def test_read_a_text_message(
    benchmark: Any, summarised: Summarised, record: Callable[..., None]
) -> None:
    message_id = summarised.ids[MESSAGES // 2]
    page = benchmark(summarised.store.read, message_id, max_tokens=WINDOW)
    assert page["next_cursor"] is None
    record(benchmark, "read one text message", "<= 0.5 ms", chars=page["total_chars"])


@pytest.mark.benchmark(group="recall-read")
def test_read_baseline_get_message(
    benchmark: Any, summarised: Summarised, record: Callable[..., None]
) -> None:
    """The raw stored row with its parts, not written out: what read adds is the rest."""
    message_id = _tool_message(summarised)
    row = benchmark(summarised.store.native.get_message, message_id)
    assert row["id"] == message_id
    record(benchmark, "baseline: get_message of the same tool message")
