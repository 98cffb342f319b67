"""The viewer's page in a real headless Chromium, served from 127.0.0.1 over a
database written by real sessions: sessions and lineage, the timeline and its
marks, a turn's request, the summary DAG, the chart, search, live updates; nothing
loaded from elsewhere and no console error."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lossless.demo.viewer_sample import PIN, Sample, make_sample
from lossless.events import EventName
from lossless.store import Store
from lossless.testing.browser import Browser, Page
from lossless.ui import running

# The newest seq the timeline shows.
NEWEST_SHOWN = "Math.max(...[...document.querySelectorAll('.msg')].map(m => +m.dataset.seq))"
# How much of the budget bar its parts fill.
BAR_FILLED = (
    "[...document.querySelectorAll('#budget-bar .seg')]"
    ".reduce((w, s) => w + s.getBoundingClientRect().width, 0)"
    " / document.querySelector('#budget-bar').getBoundingClientRect().width"
)

# Another process records a turn and builds its request.
WRITER = """
import sys, anyio
from lossless import Session

async def write() -> None:
    async with await Session.load(sys.argv[2], db=sys.argv[1]) as session:
        await session.record("user", "A new instruction, written while you watch.")
        await session.context()

anyio.run(write)
"""


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    return make_sample(tmp_path_factory.mktemp("ui-browser") / "sample.db")


@pytest.fixture(scope="module")
def address(sample: Sample) -> Iterator[str]:
    with running(sample.db) as address:
        yield address


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser(width=1280, height=860) as browser:
        yield browser


@pytest.fixture
def page(browser: Browser, address: str) -> Iterator[Page]:
    page = browser.new_page()
    try:
        yield page
        # Every test: nothing from elsewhere, nothing broken.
        assert all(url.startswith(address) for url in page.requested_urls), page.requested_urls
        assert page.console_errors == []
    finally:
        page.close()


def test_sessions_are_listed_with_their_lineage_and_open_on_a_click(
    page: Page, address: str, sample: Sample
) -> None:
    page.goto(address, wait_for="#sessions li.session")
    shown = page.texts("#sessions li.session > a .session-name")
    assert set(shown) == {
        sample.agent,
        sample.own_loop,
        sample.synced,
        sample.fork,
        *sample.children,
    }
    # A fork under the session it forked from, sub-sessions under their parent.
    nested = page.evaluate(
        "Object.fromEntries([...document.querySelectorAll('#sessions li.session')]"
        ".map(li => [li.dataset.id, li.parentElement.closest('li.session')?.dataset.id ?? null]))"
    )
    assert nested[sample.fork] == sample.synced
    assert all(nested[child] == sample.agent for child in sample.children)
    assert nested[sample.agent] is None
    page.click(f'#sessions li[data-id="{sample.agent}"] > a')
    page.wait_for("#session-title", text=sample.agent)
    page.wait_for(".msg")
    assert page.evaluate("location.hash") == f"#/s/{sample.agent}"


def test_the_timeline_marks_messages_and_loads_older_ones(
    page: Page, address: str, sample: Sample
) -> None:
    page.goto(f"{address}#/s/{sample.agent}", wait_for=".msg")
    states = set(page.texts(".msg .msg-head .badge[class*='state-']"))
    assert "in request" in states
    newest = page.evaluate(NEWEST_SHOWN)
    assert newest == Store(sample.db, read_only=True).newest_seq(sample.agent)
    count = page.evaluate("document.querySelectorAll('.msg').length")
    page.click("#load-older")
    page.wait_until(f"document.querySelectorAll('.msg').length > {count}")
    page.type("#jump", "5")
    page.press("Enter")
    page.wait_for('.msg.highlight[data-seq="5"]')
    assert "compacted" in page.text('.msg[data-seq="5"] .msg-head')
    assert page.text('.msg[data-seq="5"] .summary-link').startswith("under sum_")
    # A pruned tool output and a screenshot, as they are stored.
    page.goto(f"{address}#/s/{sample.agent}/timeline/30", wait_for=".msg.highlight")
    page.click("#load-older")
    page.wait_until("document.querySelector('.part.tool.pruned') !== null")
    store = Store(sample.db, read_only=True)
    shot = next(
        record.seq
        for record in store.history(sample.agent)
        if any(part.get("media_id") == sample.image_id for part in record.parts)
    )
    page.goto(f"{address}#/s/{sample.agent}/timeline/{shot}", wait_for=".msg.highlight")
    page.wait_until(
        "[...document.querySelectorAll('img.thumb')]"
        ".some(image => image.complete && image.naturalWidth === 640)"
    )


def test_a_reply_opens_the_request_it_answered_with_its_parts_against_the_budget(
    page: Page, address: str, sample: Sample
) -> None:
    page.goto(f"{address}#/s/{sample.agent}", wait_for=".msg")
    seq = page.evaluate("+[...document.querySelectorAll('.msg-assistant')].at(-2).dataset.seq")
    page.click(f'.msg[data-seq="{seq}"] .open-request')
    page.wait_for("#request-title", text="Request after message")
    title = page.text("#request-title")
    assert f"#{seq - 1}" in title or "#" in title
    segments = page.evaluate(
        "[...document.querySelectorAll('#budget-bar .seg')].map(s => s.className.split('part-')[1])"
    )
    assert {"system", "arena_system", "history"} <= set(segments)
    widths = page.evaluate(BAR_FILLED)
    assert 0.05 < widths <= 1.0
    page.click(".item-system .arena-text summary")
    page.wait_for(".item-system .arena-text[open]")
    assert PIN in page.text(".item-system")
    assert page.texts(".item-summary") or page.texts(".item-marker")
    assert page.evaluate("document.querySelectorAll('.item-messages .msg').length") > 3
    assert "truth" in page.text(".zones")
    page.click("#request-previous")
    page.wait_until("location.hash.includes('/request/')")
    page.wait_for("#budget-bar")


def test_the_dag_opens_down_to_a_message_that_opens_in_the_timeline(
    page: Page, address: str, sample: Sample
) -> None:
    page.goto(f"{address}#/s/{sample.agent}/summaries", wait_for="#dag li.node")
    page.click("#dag > li.node > .node-toggle")
    page.wait_for("#dag > li.node.open .summary-text")
    for _ in range(10):
        if page.evaluate("document.querySelector('#dag li.source-message a') !== null"):
            break
        opened = page.evaluate("document.querySelectorAll('#dag li.node.open').length")
        page.click("#dag li.node.open > ul > li.node:not(.open) > .node-toggle")
        page.wait_until(f"document.querySelectorAll('#dag li.node.open').length > {opened}")
    seq = page.evaluate(
        "document.querySelector('#dag li.source-message .seq').textContent.slice(1)"
    )
    page.click("#dag li.source-message a")
    page.wait_for(f'.msg.highlight[data-seq="{seq}"]')


def test_the_chart_draws_every_request_and_each_opens(
    page: Page, address: str, sample: Sample
) -> None:
    page.goto(f"{address}#/s/{sample.agent}/chart", wait_for="#chart .point")
    store = Store(sample.db, read_only=True)
    requests = store.events_page(sample.agent, name=EventName.REQUEST_BUILT.value, limit=9_999)
    assert page.evaluate("document.querySelectorAll('#chart .point').length") == len(requests)
    assert page.evaluate("document.querySelectorAll('#chart .compaction').length") >= 1
    assert page.evaluate("document.querySelectorAll('#share-chart .share-bar').length") == len(
        requests
    )
    page.click(f'#chart .point[data-event="{requests[3].seq}"] .hit')
    page.wait_for("#request-title")
    assert page.evaluate("location.hash").endswith(f"/request/{requests[3].seq}")


def test_search_hits_open_the_message_in_the_timeline(
    page: Page, address: str, sample: Sample
) -> None:
    page.goto(address, wait_for="#sessions li.session")
    page.type("#search", "quartz heron")
    page.press("Enter")
    page.wait_for("#hits li")
    hit = f'#hits a.hit-link[href^="#/s/{sample.agent}/timeline/"]'
    page.click(hit)
    page.wait_for(".msg.highlight")
    assert sample.fact in page.text(".msg.highlight")
    assert "compacted" in page.text(".msg.highlight .msg-head")


def test_a_turn_written_by_another_process_appears_without_reloading(
    browser: Browser, sample: Sample, tmp_path: Path
) -> None:
    db = tmp_path / "live.db"
    shutil.copy(sample.db, db)
    with running(db) as address:
        page = browser.new_page()
        try:
            page.goto(f"{address}#/s/{sample.own_loop}", wait_for=".msg")

            subprocess.run([sys.executable, "-c", WRITER, str(db), sample.own_loop], check=True)
            page.wait_for(".msg", text="A new instruction, written while you watch.", timeout=15)
            newest = page.evaluate("[...document.querySelectorAll('.msg')].at(-1).className")
            assert "is-request" in newest
            assert page.console_errors == []
        finally:
            page.close()


def test_the_page_marks_its_first_paint(page: Page, address: str, sample: Sample) -> None:
    # How soon is benches/bench_ui.py's to measure; the page must paint and mark it.
    page.goto(f"{address}#/s/{sample.agent}", wait_for=".msg")
    assert page.first_paint_ms() is not None
    assert page.evaluate("performance.getEntriesByName('timeline-drawn').length") == 1
