"""The viewer (`lossless ui`) on a long session, measured in a headless Chromium, and
what describing each request on the tape costs a turn.

1. Time to first render, in the browser, from the navigation's start to the tab
   drawn (``performance.mark`` in the page): the timeline's newest page, and the
   request a reply in the middle of the session answered. The session is built
   through the store's bulk path (``record_messages``, 400 messages a call, a
   request after each call, compacting as it goes with the built-in summariser):
   1,000 stored messages by default, and 1,000 and 100,000 with
   ``LOSSLESS_BENCH_FULL=1`` (the larger takes a few minutes to build). Target: the
   100,000-message session draws within 2x of the 1,000-message one (pages and
   requests read their own rows, never the whole session).
2. ``await session.context()`` on an unchanged 1,000-message session, with its
   ``request_built`` event and without (the event's write replaced by nothing):
   the event's per-turn cost, and the size of its payload.
"""

from __future__ import annotations

import json
import random
import sqlite3
import statistics
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import FULL
from lossless import Session
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.events import EventName
from lossless.session._request_log import RequestLog
from lossless.store import Store
from lossless.testing.browser import Browser
from lossless.ui import running

# Stored messages: an instruction, a call with its output, an answer (three stored
# of every four handed over: a tool message fills its call).
SIZES = [1_000, 100_000] if FULL else [1_000]
ROUNDS = 9 if FULL else 1
CHUNK = 400
_WORDS_TEXT = (
    "payout ledger refund invoice currency settle batch retry webhook merchant account "
    "balance charge capture dispute schedule config service handler request response "
    "timeout error module function fixture decimal rounding passed failed"
)
WORDS = _WORDS_TEXT.split()


def _chunk(rng: random.Random, start: int, count: int) -> list[dict[str, Any]]:
    """Chat Completions messages ``start..start+count`` of an agent's history."""
    said = lambda words: " ".join(rng.choice(WORDS) for _ in range(words))  # noqa: E731
    messages: list[dict[str, Any]] = []
    for index in range(start, start + count):
        step = index % 4
        if step == 0:
            messages.append({"role": "user", "content": f"Step {index}: {said(30)}"})
        elif step == 1:
            call = {"name": "read_file", "arguments": json.dumps({"path": f"m{index}.py"})}
            messages.append(
                {
                    "role": "assistant",
                    "content": "Reading.",
                    "tool_calls": [{"id": f"c{index}", "type": "function", "function": call}],
                }
            )
        elif step == 2:
            output = "\n".join(said(12) for _ in range(12))
            messages.append({"role": "tool", "tool_call_id": f"c{index - 1}", "content": output})
        else:
            messages.append({"role": "assistant", "content": said(40)})
    return messages


def _config() -> Config:
    return Config(
        model=ModelConfig(context_limit=32_000, max_output_tokens=2_000),
        compaction=CompactionConfig(output_budget=2_000),
    )


async def _build(db: Path, stored: int) -> str:
    rng = random.Random(1729)
    handed = stored * 4 // 3
    async with Session.open(
        model="gpt-4o", db=db, config=_config(), system_prompt="You are a careful coding agent."
    ) as session:
        for start in range(0, handed, CHUNK):
            await session.record_messages(_chunk(rng, start, min(CHUNK, handed - start)))
            await session.context()
        await session.compaction.wait_for_pending()
        await session.context()
        return session.id


@pytest.fixture(scope="module")
def ui_db(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], tuple[Path, str]]:
    built: dict[int, tuple[Path, str]] = {}
    root = tmp_path_factory.mktemp("bench-ui")

    def get(n: int) -> tuple[Path, str]:
        if n not in built:
            db = root / f"ui-{n}.db"
            built[n] = (db, anyio.run(_build, db, n))
        return built[n]

    return get


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser(width=1280, height=860) as browser:
        yield browser


def _drawn(browser: Browser, url: str, wait_for: str, mark: str) -> list[float]:
    """Milliseconds from navigation to ``mark``, over ``ROUNDS`` fresh loads (after one
    that warms the server's connection and the browser's cache)."""
    page = browser.new_page()
    times: list[float] = []
    try:
        for _ in range(ROUNDS + 1):
            page.goto("about:blank")
            page.goto(url, wait_for=wait_for)
            page.wait_until(f"performance.getEntriesByName('{mark}').length > 0")
            times.append(page.evaluate(f"performance.getEntriesByName('{mark}')[0].startTime"))
        assert page.console_errors == []
    finally:
        page.close()
    return times[1:]


@pytest.mark.benchmark(group="ui-first-render")
@pytest.mark.timeout(3600)  # the first test at a size builds its database
@pytest.mark.parametrize("tab", ["timeline", "request"])
@pytest.mark.parametrize("size", SIZES, ids=[f"n={n:,}" for n in SIZES])
def test_first_render_in_the_browser(
    benchmark: Any,
    record: Callable[..., None],
    ui_db: Callable[[int], tuple[Path, str]],
    browser: Browser,
    size: int,
    tab: str,
) -> None:
    n = size
    db, session_id = ui_db(n)
    store = Store(db, read_only=True)
    newest = store.newest_seq(session_id)
    assert newest >= n * 0.99
    with running(db) as address:
        if tab == "timeline":
            url, wait_for = f"{address}#/s/{session_id}", ".msg"
        else:
            # A reply in the middle: the request is found by bisecting the tape.
            middle = next(
                message.seq
                for message in store.history_range(session_id, newest // 2, newest)
                if message.role == "assistant"
            )
            url, wait_for = f"{address}#/s/{session_id}/request/at/{middle}", "#budget-bar"
        times = benchmark.pedantic(
            _drawn, args=(browser, url, wait_for, f"{tab}-drawn"), rounds=1, iterations=1
        )
    drawn = statistics.median(times)
    summaries = len(store.native.live_summaries(session_id))
    record(
        benchmark,
        f"ui {tab} first render n={n:,}",
        "100,000 within 2x of 1,000",
        drawn_ms=round(drawn, 1),
        drawn_ms_all=[round(t, 1) for t in times],
        live_summaries=summaries,
    )
    benchmark.extra_info["drawn_ms_median"] = round(drawn, 1)
    print(f"\nui {tab} first render n={n:,}: median {drawn:.1f} ms over {len(times)} loads")


@pytest.mark.benchmark(group="ui-request-event")
@pytest.mark.parametrize("logged", [True, False], ids=["with the event", "without"])
def test_the_request_event_per_turn(
    benchmark: Any,
    record: Callable[..., None],
    ui_db: Callable[[int], tuple[Path, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    logged: bool,
) -> None:
    """``context()`` on an unchanged 1,000-message session, with or without its event:
    the same session (a copy of one file), so both build the same request."""
    built, session_id = ui_db(1_000)
    db = tmp_path / "event.db"
    with sqlite3.connect(built) as source, sqlite3.connect(db) as copy:
        source.backup(copy)
    if not logged:

        async def nothing(*args: Any) -> None:
            return None

        monkeypatch.setattr(RequestLog, "_log_request", nothing)

    async def measure() -> int:
        async with await Session.load(session_id, db=db, config=_config()) as session:
            await session.context()

            def once() -> int:
                return anyio.from_thread.run(session.context).tokens

            return await anyio.to_thread.run_sync(lambda: benchmark(once))

    tokens = anyio.run(measure)
    rows = Store(db, read_only=True).events_page(
        session_id, name=EventName.REQUEST_BUILT.value, limit=50, newest_first=True
    )
    size = statistics.median(len(row.payload_json) for row in rows)
    name = "with" if logged else "without"
    record(
        benchmark,
        f"context() {name} its request event, 1,000 messages",
        "the event <= 0.25 ms a request",
        tokens=tokens,
        payload_bytes=size,
    )
