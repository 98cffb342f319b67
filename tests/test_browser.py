"""The headless Chromium the web viewer's tests drive: real browser, real pages served
from 127.0.0.1, nothing reached outside."""

from __future__ import annotations

import math
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lossless.testing import screenshot
from lossless.testing.browser import (
    Browser,
    BrowserError,
    BrowserTimeoutError,
    BrowserUnavailableError,
    JavaScriptError,
    Page,
    find_chromium,
)

_HEAD = '<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">'

_INDEX = f"""{_HEAD}<title>Harness</title>
<style>body {{ margin: 0; font: 16px sans-serif; }} #tall {{ height: 3000px; }}</style>
</head><body>
<h1 id="title">Harness</h1>
<button id="greet">Greet</button>
<p id="greeting">not yet</p>
<button id="off" disabled>Off</button>
<div style="position: relative; width: 100px; height: 40px">
  <button id="covered" style="width: 100px; height: 40px">Under</button>
  <div id="overlay" style="position: absolute; inset: 0; background: #eee"></div>
</div>
<form id="form"><input id="name" autocomplete="off"><button type="submit">Send</button></form>
<ul id="sent"></ul>
<img id="logo" src="/logo.png" width="64" height="64" alt="logo">
<div id="tall"></div>
<script src="/app.js"></script>
</body></html>"""

_APP = """
document.getElementById('greet').addEventListener('click', (event) => {
  document.getElementById('greeting').textContent =
    event.isTrusted ? 'Hello, trusted click' : 'Hello, synthetic click';
});
document.getElementById('form').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = document.getElementById('name');
  const item = document.createElement('li');
  item.textContent = input.value;
  document.getElementById('sent').append(item);
  input.value = '';
});
setTimeout(() => {
  const late = document.createElement('p');
  late.id = 'late';
  late.textContent = 'arrived late';
  document.body.append(late);
}, 300);
"""

_OUTSIDE = f"""{_HEAD}<title>Outside</title></head><body>
<p id="result">pending</p>
<img src="https://example.org/pixel.png" alt="">
<script>
fetch('http://example.com/data.json').then(
  () => {{ document.getElementById('result').textContent = 'fetched'; }},
  (error) => {{ document.getElementById('result').textContent = 'failed: ' + error.message; }},
);
try {{ new WebSocket('ws://example.net/socket'); }} catch (error) {{}}
const worker = new Worker('/worker.js');
worker.onmessage = (event) => {{ document.getElementById('worker').textContent = event.data; }};
</script><p id="worker">pending</p></body></html>"""

_WORKER = """
fetch('http://example.com/from-worker').then(
  () => postMessage('fetched'),
  (error) => postMessage('failed: ' + error.message),
);
"""

_ERRORS = f"""{_HEAD}<title>Errors</title></head><body>
<script>console.error('logged', 'error');</script>
<script>Promise.reject(new Error('rejected later'));</script>
<script>throw new Error('boom from the page');</script>
<script>window.done = true;</script>
</body></html>"""

_FILES: dict[str, tuple[str, bytes]] = {
    "/": ("text/html; charset=utf-8", _INDEX.encode()),
    "/app.js": ("text/javascript", _APP.encode()),
    "/outside.html": ("text/html; charset=utf-8", _OUTSIDE.encode()),
    "/errors.html": ("text/html; charset=utf-8", _ERRORS.encode()),
    "/logo.png": ("image/png", screenshot(64, 64)),
    "/worker.js": ("text/javascript", _WORKER.encode()),
}
_REDIRECTS = {"/moved": "/", "/away": "http://example.com/away"}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if (location := _REDIRECTS.get(self.path)) is not None:
            self.send_response(302)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        # Chromium shows a page for an error status only when it has a body.
        missing = b"" if self.path == "/empty-404" else b"not found"
        content_type, body = _FILES.get(self.path, ("text/plain", missing))
        self.send_response(200 if self.path in _FILES else 404)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One browser for the module (it starts in about a second); a tab per test."""
    with Browser() as started:
        yield started


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    opened = browser.new_page()
    yield opened
    opened.close()


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _live_processes_in_group(group: int) -> list[int]:
    """Processes of a process group that are not zombies (those are for whoever
    adopted them to reap)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, _parent, process_group = stat.rsplit(")", 1)[1].split()[:3]
        if int(process_group) == group and state != "Z":
            found.append(int(entry.name))
    return found


# -- finding and starting Chromium ------------------------------------------------------


def test_the_binary_named_by_the_environment_comes_first(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "my-chromium"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("LOSSLESS_CHROMIUM", str(fake))
    assert find_chromium() == str(fake)
    # A setting that names nothing is passed over for the machine's own.
    monkeypatch.setenv("LOSSLESS_CHROMIUM", str(tmp_path / "nothing"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_chromium() is None


def test_without_chromium_the_error_says_to_run_setup(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LOSSLESS_CHROMIUM", str(tmp_path / "nothing"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BrowserUnavailableError, match=r"scripts/setup.*LOSSLESS_CHROMIUM"):
        Browser()


def test_a_browser_that_exits_at_start_says_what_it_printed(tmp_path: Path) -> None:
    fake = tmp_path / "broken-chromium"
    fake.write_text("#!/bin/sh\necho 'no display for you' >&2\nexit 3\n")
    fake.chmod(0o755)
    browser = Browser(executable=str(fake), timeout=10)
    with pytest.raises(BrowserUnavailableError, match=r"(?s)code 3.*no display for you"):
        browser.start()
    assert browser.pid is None
    assert browser.profile_dir is None


def test_closing_ends_every_process_and_removes_the_profile() -> None:
    browser = Browser()
    with browser:
        assert browser.start_seconds is not None
        assert browser.start_seconds < browser.timeout
        group, profile = browser.pid, browser.profile_dir
        assert group is not None and profile is not None
        assert (profile / "profile").is_dir()
        assert len(_live_processes_in_group(group)) > 1
        browser.new_page().goto("data:text/html,<p>hi</p>", wait_for="p")
    assert not profile.exists()
    assert _live_processes_in_group(group) == []
    browser.close()
    with pytest.raises(BrowserError, match="not running"):
        browser.new_page()


def test_a_browser_whose_process_is_killed_is_killed_and_removed(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\n"
            "from lossless.testing.browser import Browser\n"
            "browser = Browser()\n"
            "browser.start()\n"
            "print(browser.pid, browser.profile_dir, flush=True)\n"
            "time.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    assert child.stdout is not None
    group, profile = child.stdout.readline().split()
    assert _live_processes_in_group(int(group))
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    deadline = time.monotonic() + 30
    while (
        Path(profile).exists() or _live_processes_in_group(int(group))
    ) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(profile).exists()
    assert _live_processes_in_group(int(group)) == []


# -- navigation, input and reading ------------------------------------------------------


def test_goto_waits_for_the_load_then_for_the_selector(page: Page, site: str) -> None:
    page.goto(f"{site}/", wait_for="#title")
    assert page.status == 200
    assert page.url == f"{site}/"
    page.goto(f"{site}/#sent")
    assert page.url == f"{site}/#sent"
    assert page.title() == "Harness"
    assert page.text("#title") == "Harness"
    # The load event waits for images.
    assert page.evaluate("document.getElementById('logo').naturalWidth") == 64


def test_an_error_status_fails_the_navigation_unless_allowed(page: Page, site: str) -> None:
    with pytest.raises(BrowserError, match="HTTP 404"):
        page.goto(f"{site}/missing")
    page.goto(f"{site}/missing", allow_error_status=True)
    assert page.status == 404
    assert page.text("body") == "not found"
    with pytest.raises(BrowserError, match="HTTP 404, net::ERR_HTTP_RESPONSE_CODE_FAILURE"):
        page.goto(f"{site}/empty-404", allow_error_status=True)


def test_a_click_is_real_mouse_events(page: Page, site: str) -> None:
    page.goto(f"{site}/", wait_for="#greet")
    page.click("#greet")
    page.wait_for("#greeting", text="Hello")
    assert page.text("#greeting") == "Hello, trusted click"


def test_a_click_waits_for_an_element_it_can_click(page: Page, site: str) -> None:
    page.goto(f"{site}/")
    with pytest.raises(BrowserTimeoutError, match=r"'#off'.*disabled"):
        page.click("#off", timeout=0.2)
    with pytest.raises(BrowserTimeoutError, match="covered by div#overlay"):
        page.click("#covered", timeout=0.2)
    with pytest.raises(BrowserTimeoutError, match="no element matches"):
        page.click("#absent", timeout=0.2)


def test_typing_and_enter_submit_the_form(page: Page, site: str) -> None:
    page.goto(f"{site}/")
    page.type("#name", "first entry")
    page.press("Enter")
    page.wait_for("#sent li", text="first entry")
    page.type("#name", "second")
    page.type("#name", " entry")
    page.press("Enter")
    page.wait_for("#sent li", text="second entry")
    assert page.texts("#sent li") == ["first entry", "second entry"]
    assert page.evaluate("document.getElementById('name').value") == ""


def test_keys_with_modifiers_reach_the_page(page: Page) -> None:
    page.goto(
        "data:text/html,<input id=a><input id=b><script>"
        "addEventListener('keydown', (e) => { if (e.ctrlKey && e.key === 'k')"
        " document.body.dataset.shortcut = 'yes'; });</script>"
    )
    page.type("#a", "x")
    page.press("Tab")
    assert page.evaluate("document.activeElement.id") == "b"
    page.press("Control+k")
    assert page.evaluate("document.body.dataset.shortcut") == "yes"
    page.press("Shift+y")
    page.press("+")
    assert page.evaluate("document.activeElement.value") == "Y+"
    page.press("Backspace")
    assert page.evaluate("document.activeElement.value") == "Y"
    with pytest.raises(BrowserError, match="unknown key"):
        page.press("Hyper")


def test_wait_for_text_that_arrives_later(page: Page, site: str) -> None:
    page.goto(f"{site}/")
    page.wait_for("#late", text="arrived late", timeout=10)
    assert page.wait_until("document.querySelectorAll('p').length;", timeout=10) == 2


def test_evaluate_returns_json_values_and_awaits_promises(page: Page) -> None:
    assert page.evaluate("({a: [1, 'two', null, true]})") == {"a": [1, "two", None, True]}
    assert page.evaluate("undefined") is None
    assert page.evaluate("const x = 20; x + 1") == 21
    assert math.isnan(page.evaluate("NaN"))
    assert page.evaluate("-Infinity") == -math.inf
    assert page.evaluate("2n ** 70n") == 2**70
    assert page.evaluate("new Promise((done) => setTimeout(() => done('later'), 20))") == "later"


def test_a_javascript_exception_raises_with_its_message(page: Page) -> None:
    with pytest.raises(JavaScriptError, match="Error: nope from the test"):
        page.evaluate("throw new Error('nope from the test')")
    with pytest.raises(JavaScriptError, match="rejected"):
        page.evaluate("Promise.reject(new Error('rejected'))")
    # The caller's exception is the caller's: the page logged no error.
    assert page.console_errors == []


def test_reading_text(page: Page, site: str) -> None:
    page.goto(f"{site}/")
    assert page.texts("h1, #greeting") == ["Harness", "not yet"]
    assert page.texts("#absent") == []
    with pytest.raises(BrowserError, match="no element matches '#absent'"):
        page.text("#absent")


def test_screenshots_are_pngs_of_the_viewport_or_the_whole_page(
    page: Page, site: str, tmp_path: Path
) -> None:
    page.goto(f"{site}/", wait_for="#title")
    page.screenshot(tmp_path / "viewport.png")
    assert _png_size(tmp_path / "viewport.png") == (1280, 800)
    page.screenshot(str(tmp_path / "page.png"), full_page=True)
    width, height = _png_size(tmp_path / "page.png")
    assert width == 1280
    assert height > 3000


def test_first_paint_is_measured(page: Page, site: str) -> None:
    assert page.first_paint_ms() is None
    page.goto(f"{site}/", wait_for="#title")
    page.wait_until("performance.getEntriesByType('paint').length")
    first_paint = page.first_paint_ms()
    assert first_paint is not None
    assert 0 < first_paint < 30_000


def test_dialogs_are_accepted_and_recorded(page: Page) -> None:
    assert page.evaluate("confirm('sure?')") is True
    assert page.dialogs == ["sure?"]


# -- what a page reaches and what it logs ------------------------------------------------


def test_requests_outside_the_loopback_fail_at_once_and_are_recorded(page: Page, site: str) -> None:
    began = time.monotonic()
    page.goto(f"{site}/outside.html")
    page.wait_for("#result", text="failed", timeout=10)
    page.wait_for("#worker", text="failed", timeout=10)
    assert time.monotonic() - began < 10
    outside = {
        "http://example.com/data.json",
        "https://example.org/pixel.png",
        "ws://example.net/socket",
        "http://example.com/from-worker",
    }
    assert outside <= set(page.requested_urls)
    assert outside == set(page.blocked_urls)
    assert f"{site}/outside.html" in page.requested_urls
    assert any("ERR_BLOCKED_BY_CLIENT" in error for error in page.console_errors)


def test_navigating_outside_fails(page: Page) -> None:
    with pytest.raises(BrowserError, match="ERR_BLOCKED_BY_CLIENT"):
        page.goto("https://example.com/")
    assert page.requested_urls == ["https://example.com/"]


def test_data_urls_reach_no_server_and_are_not_listed(page: Page) -> None:
    pixel = "data:image/gif;base64,R0lGODlhAQABAAAAACw="
    page.goto(f"data:text/html,<img id=dot src='{pixel}'>", wait_for="#dot")
    page.wait_until("document.querySelector('#dot').complete")
    assert page.requested_urls == []


def test_each_hop_of_a_redirect_is_recorded_and_one_outside_fails(page: Page, site: str) -> None:
    page.goto(f"{site}/moved", wait_for="#title")
    assert page.url == f"{site}/"
    assert page.requested_urls[:2] == [f"{site}/moved", f"{site}/"]
    page.requested_urls.clear()
    with pytest.raises(BrowserError, match="ERR_BLOCKED_BY_CLIENT"):
        page.goto(f"{site}/away")
    assert page.requested_urls == [f"{site}/away", "http://example.com/away"]
    assert page.blocked_urls == ["http://example.com/away"]


def test_console_errors_hold_thrown_errors_rejections_and_console_error(
    page: Page, site: str
) -> None:
    page.goto(f"{site}/errors.html")
    page.wait_until("window.done")
    page.wait_until("true")
    errors = "\n".join(page.console_errors)
    assert "logged error" in errors
    assert "Error: boom from the page" in errors
    assert "rejected later" in errors
    assert len(page.console_errors) == 3


def test_waits_time_out_naming_what_they_awaited(page: Page, site: str) -> None:
    page.goto(f"{site}/")
    began = time.monotonic()
    with pytest.raises(BrowserTimeoutError, match=r"0\.2 s waiting for '#never'.*no element"):
        page.wait_for("#never", timeout=0.2)
    with pytest.raises(BrowserTimeoutError, match=r"containing 'Other'.*\['Harness'\]"):
        page.wait_for("#title", text="Other", timeout=0.2)
    with pytest.raises(BrowserTimeoutError, match=r"'window\.neverSet' to be truthy.*None"):
        page.wait_until("window.neverSet", timeout=0.2)
    with pytest.raises(BrowserTimeoutError, match="threw TypeError"):
        page.wait_until("window.neverSet.field", timeout=0.2)
    assert time.monotonic() - began < 5
    # What cannot parse never will: no wait.
    with pytest.raises(JavaScriptError, match="not a valid selector"):
        page.wait_for("#[", timeout=30)
    with pytest.raises(JavaScriptError, match="SyntaxError"):
        page.wait_until("1 +", timeout=30)
    assert time.monotonic() - began < 5


def test_pages_keep_their_own_records(browser: Browser, site: str) -> None:
    first, second = browser.new_page(), browser.new_page()
    try:
        first.goto(f"{site}/")
        second.goto(f"{site}/errors.html")
        second.wait_until("window.done")
        assert not any("errors.html" in url for url in first.requested_urls)
        assert first.console_errors == []
        assert second.console_errors
        assert first in browser.pages and second in browser.pages
    finally:
        first.close()
        second.close()
    assert first not in browser.pages
    with pytest.raises(BrowserError, match="closed"):
        first.evaluate("1")


def test_the_environment_names_the_binary_the_suite_uses() -> None:
    # The suite's own Chromium is the one find_chromium gives (scripts/setup's).
    found = find_chromium()
    assert found is not None
    assert os.access(found, os.X_OK)
