"""A headless Chromium for tests, driven over the Chrome DevTools Protocol.

:class:`Browser` starts Chromium on a throwaway profile and :meth:`Browser.new_page`
opens a tab; a :class:`Page` navigates, waits, clicks with real mouse events, types,
evaluates JavaScript, reads text and takes PNG screenshots, all synchronously::

    with Browser() as browser:
        page = browser.new_page()
        page.goto("http://127.0.0.1:8000/", wait_for="#sessions li")
        page.click("#sessions li:first-child a")
        page.wait_for("h1", text="Session")
        assert page.console_errors == []
        assert all(url.startswith("http://127.0.0.1") for url in page.requested_urls)

A page may reach 127.0.0.1, ``localhost`` and ``[::1]`` alone (and ``data:``,
``blob:``, ``about:`` URLs): any other request fails at once with
``net::ERR_BLOCKED_BY_CLIENT`` and is still recorded in :attr:`Page.requested_urls`
(and :attr:`Page.blocked_urls`), so a page that reaches outside fails its test
instead of hanging on the network or passing only while online.

Chromium is found through ``LOSSLESS_CHROMIUM`` (a path or a command name), then
``chromium``, ``chromium-browser`` and ``google-chrome`` on ``PATH``;
``scripts/setup`` installs Debian's ``chromium`` as root. The only dependency beyond
the standard library is ``websockets`` (the ``test`` extra). Should this process die
without closing the browser, a watchdog shell kills it and removes its profile.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

__all__ = [
    "Browser",
    "BrowserError",
    "BrowserTimeoutError",
    "BrowserUnavailableError",
    "JavaScriptError",
    "Page",
    "find_chromium",
]

_ENV = "LOSSLESS_CHROMIUM"
_NAMES = ("chromium", "chromium-browser", "google-chrome")
_INSTALL_HINT = (
    "Chromium was not found; scripts/setup installs it as root (apt-get install "
    "--no-install-recommends chromium fonts-dejavu-core), otherwise install it yourself "
    f"or point {_ENV} at a Chromium or Chrome binary"
)
_DEVTOOLS_LINE = re.compile(r"DevTools listening on (ws://\S+)")
# Waits poll the page: a round trip costs about a millisecond on the loopback, and
# 25 ms keeps a wait's latency well under a frame at 30 frames a second.
_POLL_S = 0.025
# How long a browser asked to close may take before its processes are killed.
_CLOSE_GRACE_S = 3.0
_DISABLED_FEATURES = (
    # Services that would reach Google's servers.
    "Translate",
    "OptimizationHints",
    "MediaRouter",
    "InterestFeedContentSuggestions",
    # Records hold the URLs the page named: no https:// try of an http:// one first.
    "HttpsUpgrades",
)
_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_LOCAL_SCHEMES = frozenset({"data", "blob", "about"})


class BrowserError(RuntimeError):
    """The browser refused a command, a page failed to load, or an element a command
    needs is not there; the message says which."""


class BrowserUnavailableError(BrowserError):
    """Chromium is missing, or did not start; the message says how to install it or
    what it printed."""


class BrowserTimeoutError(BrowserError, TimeoutError):
    """A wait ran out of time; the message names what was awaited and what was seen."""


class JavaScriptError(BrowserError):
    """JavaScript evaluated in the page threw; the message is the exception's
    description (its class, message and stack)."""


def find_chromium() -> str | None:
    """The Chromium binary to start: ``LOSSLESS_CHROMIUM`` when it names an
    executable (a path or a command name), else the first of ``chromium``,
    ``chromium-browser`` and ``google-chrome`` on ``PATH``; None when there is none.
    A setting that names nothing is passed over, as ``LOSSLESS_PG_BINDIR`` is."""
    configured = os.environ.get(_ENV)
    for name in (configured, *_NAMES) if configured else _NAMES:
        if found := shutil.which(name):
            return found
    return None


def _is_local(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in _LOCAL_SCHEMES:
        return True
    return parts.scheme in ("http", "https", "ws", "wss") and parts.hostname in _LOCAL_HOSTS


@dataclass(slots=True)
class _Pending:
    done: threading.Event = field(default_factory=threading.Event)
    result: dict[str, Any] | None = None
    error: str | None = None


_Listener = Callable[[str, dict[str, Any]], None]


class _Connection:
    """One DevTools websocket to the browser, pages reached through flat sessions.

    A reader thread takes every message: answers wake the command that waits for
    them, events go to the listener of their session. Listeners run on that thread
    and must not wait for answers (it is the thread that would read them); they
    :meth:`post` commands instead.
    """

    def __init__(self, url: str, timeout: float) -> None:
        # No proxy (the endpoint is the loopback), no compression (screenshots are
        # already compressed), no size limit (a full-page screenshot runs to
        # megabytes), no pings (the browser is local; a busy machine must not make
        # a late pong look like a dead connection).
        self._ws: ClientConnection = connect(
            url,
            proxy=None,
            compression=None,
            max_size=None,
            ping_interval=None,
            open_timeout=timeout,
        )
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._pending: dict[int, _Pending] = {}
        self._listeners: dict[str, _Listener] = {}
        self._closed: str | None = None
        self._reader = threading.Thread(target=self._read, name="lossless-cdp", daemon=True)
        self._reader.start()

    def listen(self, session_id: str, listener: _Listener) -> None:
        self._listeners[session_id] = listener

    def forget(self, session_id: str) -> None:
        self._listeners.pop(session_id, None)

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session_id: str | None = None,
        timeout: float,
    ) -> dict[str, Any]:
        """Sends a command and waits for its answer."""
        pending = _Pending()
        with self._lock:
            if self._closed is not None:
                raise BrowserError(f"{method}: {self._closed}")
            message_id = next(self._ids)
            self._pending[message_id] = pending
        try:
            self._write(message_id, method, params, session_id)
            if not pending.done.wait(timeout):
                raise BrowserTimeoutError(
                    f"timed out after {timeout:.1f} s waiting for the browser to answer {method}"
                )
        finally:
            with self._lock:
                self._pending.pop(message_id, None)
        if pending.error is not None:
            raise BrowserError(f"{method}: {pending.error}")
        return pending.result or {}

    def post(
        self, method: str, params: dict[str, Any] | None = None, *, session_id: str | None = None
    ) -> None:
        """Sends a command without waiting for its answer (which is dropped)."""
        with self._lock:
            if self._closed is not None:
                return
            message_id = next(self._ids)
        with contextlib.suppress(ConnectionClosed):
            self._write(message_id, method, params, session_id)

    def close(self) -> None:
        self._ws.close()
        self._reader.join(timeout=_CLOSE_GRACE_S)

    def _write(
        self, message_id: int, method: str, params: dict[str, Any] | None, session_id: str | None
    ) -> None:
        message: dict[str, Any] = {"id": message_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        try:
            self._ws.send(json.dumps(message))
        except ConnectionClosed as exc:
            raise BrowserError(f"{method}: the DevTools connection is closed") from exc

    def _read(self) -> None:
        reason = "the browser closed the DevTools connection"
        try:
            for raw in self._ws:
                message = json.loads(raw)
                if "id" in message:
                    self._answer(message)
                    continue
                listener = self._listeners.get(message.get("sessionId", ""))
                if listener is None:
                    continue
                try:
                    listener(message["method"], message.get("params", {}))
                except Exception as exc:
                    # A listener that failed may have left a request paused: say
                    # why at once rather than let the page's commands time out.
                    reason = f"handling {message['method']} failed: {exc!r}"
                    break
        except ConnectionClosed:
            pass
        except Exception as exc:
            reason = f"reading from the DevTools connection failed: {exc!r}"
        with self._lock:
            self._closed = reason
            pending = list(self._pending.values())
        for waiting in pending:
            waiting.error = reason
            waiting.done.set()
        self._ws.close()

    def _answer(self, message: dict[str, Any]) -> None:
        with self._lock:
            pending = self._pending.get(message["id"])
        if pending is None:
            return
        if "error" in message:
            error = message["error"]
            pending.error = f"{error.get('message', error)} {error.get('data', '')}".strip()
        else:
            pending.result = message.get("result", {})
        pending.done.set()


class Browser:
    """Headless Chromium on a throwaway profile, for the length of a ``with`` block.

    ``width`` × ``height`` is each page's viewport in CSS pixels, at a device scale
    factor of 1 (a screenshot has that many pixels). ``timeout`` bounds each command
    and is the default of every wait. :attr:`start_seconds` is how long the last
    start took, from launch to a connected DevTools session.
    """

    def __init__(
        self,
        *,
        executable: str | None = None,
        width: int = 1280,
        height: int = 800,
        timeout: float = 30.0,
    ) -> None:
        found = executable if executable is not None else find_chromium()
        if found is None:
            configured = os.environ.get(_ENV)
            if configured:
                raise BrowserUnavailableError(
                    f"{_INSTALL_HINT} ({_ENV}={configured!r} names no executable)"
                )
            raise BrowserUnavailableError(_INSTALL_HINT)
        self.executable = found
        self.width = width
        self.height = height
        self.timeout = timeout
        self.start_seconds: float | None = None
        self._root: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._connection: _Connection | None = None
        self._pages: list[Page] = []

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Launches Chromium and connects to it; on any failure nothing is left running."""
        if self._process is not None:
            raise BrowserError("the browser is already running")
        began = time.monotonic()
        root = Path(tempfile.mkdtemp(prefix="lossless-chromium-"))
        self._root = root
        try:
            log = root / "chromium.log"
            with log.open("wb") as output:
                # Its own process group, so that closing kills its helper processes
                # (zygote, renderers, GPU and network services) with it.
                self._process = subprocess.Popen(
                    [self.executable, *self._arguments(root / "profile")],
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=output,
                    start_new_session=True,
                )
            self._watch()
            url = self._devtools_url(log, began)
            self._connection = _Connection(url, self.timeout)
            self.start_seconds = time.monotonic() - began
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Closes the browser, kills whatever of it remains and removes its profile.
        Safe to call twice."""
        connection, self._connection = self._connection, None
        process, self._process = self._process, None
        self._pages.clear()
        if connection is not None:
            # Asked first, Chromium ends its helpers and reaps them itself; killing
            # it outright would leave them to whichever process adopts orphans.
            with contextlib.suppress(BrowserError):
                connection.send("Browser.close", timeout=_CLOSE_GRACE_S)
            connection.close()
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=_CLOSE_GRACE_S)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if self._watchdog is not None:
            self._watchdog.kill()
            self._watchdog.wait()
            self._watchdog = None
        root, self._root = self._root, None
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The browser's process id (also its process group's), while it runs."""
        return self._process.pid if self._process is not None else None

    @property
    def profile_dir(self) -> Path | None:
        """The temporary directory of the profile and the browser's log, while it runs."""
        return self._root

    # -- pages -------------------------------------------------------------------------

    def new_page(self) -> Page:
        """Opens a blank tab with its own event records; it blocks outside requests
        from the start."""
        connection = self._require_connection()
        target = connection.send(
            "Target.createTarget", {"url": "about:blank"}, timeout=self.timeout
        )["targetId"]
        session = connection.send(
            "Target.attachToTarget", {"targetId": target, "flatten": True}, timeout=self.timeout
        )["sessionId"]
        page = Page(self, connection, target, session)
        page._prepare(self.width, self.height)
        self._pages.append(page)
        return page

    @property
    def pages(self) -> list[Page]:
        """The pages opened and not closed, oldest first."""
        return [page for page in self._pages if not page.closed]

    def _require_connection(self) -> _Connection:
        if self._connection is None:
            raise BrowserError(
                "the browser is not running: use `with Browser() as browser:` or call start()"
            )
        return self._connection

    # -- start-up steps ----------------------------------------------------------------

    def _arguments(self, profile: Path) -> list[str]:
        arguments = [
            "--headless=new",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            f"--window-size={self.width},{self.height}",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            # Containers often give /dev/shm 64 MB, where renderers crash.
            "--disable-dev-shm-usage",
            # No traffic of the browser's own: updates, sync, field trials, metrics.
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--disable-breakpad",
            "--metrics-recording-only",
            "--no-pings",
            "--disable-features=" + ",".join(_DISABLED_FEATURES),
            # No keyring over D-Bus: there is none to ask on a test machine.
            "--password-store=basic",
            "--use-mock-keychain",
            # A second wall behind the page's request blocking, for the browser's own
            # requests and anything the page's session does not see (a service
            # worker): no name but the loopback resolves, and no proxy is asked.
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
            "--no-proxy-server",
            # Screenshots that do not depend on the machine's colour profile or on
            # overlay scrollbars coming and going.
            "--force-color-profile=srgb",
            "--hide-scrollbars",
            "--mute-audio",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            # Chromium's sandbox refuses to run as root.
            arguments.append("--no-sandbox")
        arguments.append("about:blank")
        return arguments

    def _devtools_url(self, log: Path, began: float) -> str:
        """Waits for the ``DevTools listening on ws://...`` line Chromium prints."""
        assert self._process is not None
        deadline = began + self.timeout
        while True:
            text = log.read_text(encoding="utf-8", errors="replace")
            if found := _DEVTOOLS_LINE.search(text):
                return found.group(1)
            code = self._process.poll()
            if code is not None:
                raise BrowserUnavailableError(
                    f"{self.executable} exited with code {code} before it listened for "
                    f"DevTools; it printed:\n{text[-3000:]}"
                )
            if time.monotonic() > deadline:
                raise BrowserUnavailableError(
                    f"timed out after {self.timeout:.1f} s waiting for {self.executable} to "
                    f"listen for DevTools; it printed:\n{text[-3000:]}"
                )
            time.sleep(0.02)

    def _watch(self) -> None:
        """Kills the browser's process group and removes its directory if this
        process dies without closing it (killed, or a test run cut short): a shell
        that outlives it."""
        assert self._process is not None and self._root is not None
        root = shlex.quote(str(self._root))
        script = (
            f"while kill -0 {os.getpid()} 2>/dev/null; do sleep 0.5; done; "
            f"kill -KILL -{self._process.pid} 2>/dev/null; rm -rf {root}"
        )
        self._watchdog = subprocess.Popen(
            ["sh", "-c", script],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )


# Keys :meth:`Page.press` knows by name: (code, Windows virtual key code, text typed).
_KEYS: dict[str, tuple[str, int, str]] = {
    "Enter": ("Enter", 13, "\r"),
    "Tab": ("Tab", 9, ""),
    "Escape": ("Escape", 27, ""),
    "Backspace": ("Backspace", 8, ""),
    "Delete": ("Delete", 46, ""),
    "ArrowLeft": ("ArrowLeft", 37, ""),
    "ArrowUp": ("ArrowUp", 38, ""),
    "ArrowRight": ("ArrowRight", 39, ""),
    "ArrowDown": ("ArrowDown", 40, ""),
    "Home": ("Home", 36, ""),
    "End": ("End", 35, ""),
    "PageUp": ("PageUp", 33, ""),
    "PageDown": ("PageDown", 34, ""),
    " ": ("Space", 32, " "),
    "Space": ("Space", 32, " "),
}
# CDP's modifier bits.
_MODIFIERS = {"Alt": 1, "Control": 2, "Ctrl": 2, "Meta": 4, "Shift": 8}

# Looks for the element of a click and says why it cannot be clicked yet, or where.
_CLICK_TARGET = """
((selector) => {
  const el = document.querySelector(selector);
  if (!el) return {why: 'no element matches'};
  if (el.disabled) return {why: 'the element is disabled'};
  el.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
  const box = el.getBoundingClientRect();
  if (box.width === 0 || box.height === 0) return {why: 'the element has no size (hidden?)'};
  const x = box.left + box.width / 2, y = box.top + box.height / 2;
  const hit = document.elementFromPoint(x, y);
  if (hit !== el && !el.contains(hit)) {
    const name = hit ? hit.tagName.toLowerCase() + (hit.id ? '#' + hit.id : '') : 'nothing';
    return {why: 'its centre is covered by ' + name};
  }
  return {x, y};
})
"""
_FOCUS_TARGET = """
((selector) => {
  const el = document.querySelector(selector);
  if (!el) return {why: 'no element matches'};
  if (el.disabled) return {why: 'the element is disabled'};
  el.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
  el.focus();
  if (document.activeElement !== el && !el.contains(document.activeElement))
    return {why: 'the element does not take focus'};
  // Text goes after what the field holds, as after a click at its end; input types
  // without a selection (number, email) throw, and take text at their end anyway.
  try { el.setSelectionRange(el.value.length, el.value.length); } catch (e) {}
  return {};
})
"""
_MATCH_TEXT = """
((selector, text) => {
  const els = Array.from(document.querySelectorAll(selector));
  const texts = els.map((el) => el.innerText ?? el.textContent ?? '');
  const ok = els.length > 0 && (text === null || texts.some((t) => t.includes(text)));
  return {ok, count: els.length, texts: texts.slice(0, 3).map((t) => t.slice(0, 200))};
})
"""


class Page:
    """A tab of a :class:`Browser`, made by :meth:`Browser.new_page`.

    Its records grow from the moment it opens; clear them (``page.console_errors.clear()``)
    to look at what one step does.
    """

    requested_urls: list[str]
    """Every URL the page requested (documents, scripts, images, fetches, redirects'
    hops, websockets), blocked or not, in order; ``data:`` URLs, which reach no
    server, are not listed."""
    blocked_urls: list[str]
    """The requested URLs that were refused because they are not local."""
    console_errors: list[str]
    """Uncaught exceptions, ``console.error`` calls and the browser's own error log
    entries (a resource that failed to load, with its URL), in order."""
    dialogs: list[str]
    """Messages of ``alert``, ``confirm`` and ``prompt`` dialogs, which are accepted
    (they would otherwise stop the page)."""

    def __init__(
        self, browser: Browser, connection: _Connection, target_id: str, session_id: str
    ) -> None:
        self._browser = browser
        self._connection = connection
        self.target_id = target_id
        self._session = session_id
        self.timeout = browser.timeout
        self.requested_urls = []
        self.blocked_urls = []
        self.console_errors = []
        self.dialogs = []
        # The main frame's URL as of its last navigation event, for messages.
        self._url = "about:blank"
        self.status: int | None = None
        """The HTTP status of the main frame's last document."""
        self._frame_id = target_id
        self._statuses: dict[str, int] = {}
        self._request_ids: set[str] = set()
        self._crashed = False
        self.closed = False
        connection.listen(session_id, self._on_event)

    def _prepare(self, width: int, height: int) -> None:
        self._call("Page.enable")
        self._call("Runtime.enable")
        self._call("Network.enable")
        self._call("Log.enable")
        # Every request stops here until the listener lets it go or fails it.
        self._call("Fetch.enable", {"patterns": [{"urlPattern": "*"}]})
        self._call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        # A headless tab is never the focused window: without this, focus and blur
        # events and :focus styles do not happen as they do for a user.
        self._call("Emulation.setFocusEmulationEnabled", {"enabled": True})
        self._frame_id = self._call("Page.getFrameTree")["frameTree"]["frame"]["id"]

    # -- navigation and waits ----------------------------------------------------------

    @property
    def url(self) -> str:
        """The page's URL now (``location.href``)."""
        return str(self.evaluate("location.href"))

    def goto(
        self, url: str, *, wait_for: str | None = None, allow_error_status: bool = False
    ) -> None:
        """Navigates to ``url`` and waits for its load event, then for an element
        matching the CSS selector ``wait_for`` if given. A navigation that fails (a
        refused connection, a blocked address) raises, and so does an HTTP status of
        400 or above unless ``allow_error_status``."""
        answer = self._call("Page.navigate", {"url": url})
        if error := answer.get("errorText"):
            # An error status with an empty body fails as a navigation, not a page.
            status = self._statuses.get(answer.get("loaderId", ""))
            answered = f"HTTP {status}, " if status is not None else ""
            raise BrowserError(f"navigating to {url} failed: {answered}{error}")
        loader = answer.get("loaderId")
        if loader is not None:
            self._poll(
                "document.readyState === 'complete'",
                what=f"the load of {url}",
                timeout=self.timeout,
            )
            self.status = self._statuses.get(loader)
            if self.status is not None and self.status >= 400 and not allow_error_status:
                raise BrowserError(f"{url} answered HTTP {self.status}")
        if wait_for is not None:
            self.wait_for(wait_for)

    def wait_for(
        self, selector: str, *, text: str | None = None, timeout: float | None = None
    ) -> None:
        """Waits until an element matches the CSS selector ``selector`` and, with
        ``text``, until one of the matches has it in its ``innerText``."""
        expression = f"{_MATCH_TEXT}({json.dumps(selector)}, {json.dumps(text)})"
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        seen: Any = None
        while True:
            seen = self._evaluate_while_waiting(expression)
            if isinstance(seen, dict) and seen.get("ok"):
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(_POLL_S)
        what = f"{selector!r}" + (f" containing {text!r}" if text is not None else "")
        if isinstance(seen, dict) and seen.get("count"):
            found = f"{seen['count']} element(s) match, with text {seen['texts']!r}"
        else:
            found = "no element matches"
        raise BrowserTimeoutError(
            f"timed out after {limit:.1f} s waiting for {what} on {_short(self._url)}: {found}"
        )

    def wait_until(self, js_expression: str, *, timeout: float | None = None) -> Any:
        """Evaluates ``js_expression`` (awaiting a promise) until it is truthy, by
        JavaScript's rules, and returns its value. An evaluation that throws counts
        as not yet (the page may still be building what it reads), except a syntax
        error, which never gets better; the timeout's message gives the last error."""
        return self._poll(
            js_expression,
            what=f"{js_expression!r} to be truthy",
            timeout=self.timeout if timeout is None else timeout,
        )

    def _poll(self, js_expression: str, *, what: str, timeout: float) -> Any:
        # Truthiness is JavaScript's ([] and {} are truthy); the expression on its
        # own lines, so that a trailing // comment ends there, and a trailing
        # semicolon dropped, so that it stays an expression.
        wrapped = (
            "(async () => { const value = await (\n"
            f"{js_expression.strip().removesuffix(';')}\n"
            "); return [!!value, value]; })()"
        )
        deadline = time.monotonic() + timeout
        last: Any = None
        error: BrowserError | None = None
        while True:
            try:
                truthy, last = self.evaluate(wrapped)
                error = None
                if truthy:
                    return last
            except JavaScriptError as exc:
                if _is_syntax_error(exc):
                    raise
                error = exc
            except BrowserError as exc:
                # A navigation replaces the context mid-evaluation: ask again.
                if self._crashed or self.closed:
                    raise
                error = exc
            if time.monotonic() >= deadline:
                break
            time.sleep(_POLL_S)
        seen = f"the last evaluation threw {error}" if error is not None else f"it was {last!r}"
        raise BrowserTimeoutError(
            f"timed out after {timeout:.1f} s waiting for {what} on {_short(self._url)}: {seen}"
        )

    def _evaluate_while_waiting(self, expression: str) -> Any:
        """Evaluates for a wait: a syntax error (a bad selector) raises, any other
        failure (a navigation under way) reads as nothing found yet."""
        try:
            return self.evaluate(expression)
        except JavaScriptError as exc:
            if _is_syntax_error(exc):
                raise
            return None
        except BrowserError:
            if self._crashed or self.closed:
                raise
            return None

    # -- JavaScript --------------------------------------------------------------------

    def evaluate(self, js_expression: str) -> Any:
        """Evaluates ``js_expression`` in the page (statements too: the value is the
        last one's), awaits a promise it gives (``await`` itself belongs inside an
        ``async`` function), and returns the value as JSON would carry it
        (``undefined`` is None, a DOM node ``{}``; NaN, ±Infinity and BigInts come
        back as Python's). A JavaScript exception raises :class:`JavaScriptError`
        with its description."""
        answer = self._call(
            "Runtime.evaluate",
            {
                "expression": js_expression,
                "awaitPromise": True,
                "returnByValue": True,
                "userGesture": True,
            },
        )
        if (details := answer.get("exceptionDetails")) is not None:
            raise JavaScriptError(_describe_exception(details))
        return _value(answer.get("result", {}))

    # -- input -------------------------------------------------------------------------

    def click(self, selector: str, *, timeout: float | None = None) -> None:
        """Clicks the first element matching ``selector`` with real mouse events
        (move, press, release of the left button) at its centre, after scrolling it
        into view. Waits until the element exists, is enabled, has a size and is not
        covered at its centre; the timeout's message says which of these failed."""
        where = self._wait_for_target(_CLICK_TARGET, selector, "click", timeout)
        x, y = where["x"], where["y"]
        self._call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for kind, buttons in (("mousePressed", 1), ("mouseReleased", 0)):
            self._call(
                "Input.dispatchMouseEvent",
                {
                    "type": kind,
                    "x": x,
                    "y": y,
                    "button": "left",
                    "buttons": buttons,
                    "clickCount": 1,
                },
            )

    def type(self, selector: str, text: str, *, timeout: float | None = None) -> None:
        """Focuses the first element matching ``selector`` and inserts ``text`` after
        what it holds, as an input method would (``beforeinput`` and ``input``
        events, no key events); :meth:`press` sends keys such as Enter."""
        self._wait_for_target(_FOCUS_TARGET, selector, "focus", timeout)
        self._call("Input.insertText", {"text": text})

    def press(self, key: str) -> None:
        """Presses and releases ``key`` in the focused element: a name (``Enter``,
        ``Tab``, ``Escape``, ``Backspace``, ``Delete``, ``ArrowUp`` and the other
        arrows, ``Home``, ``End``, ``PageUp``, ``PageDown``, ``Space``) or one
        character, with modifiers before it (``Control+k``, ``Shift+Tab``)."""
        names, _, main = key.rpartition("+")
        if not main and key.endswith("+"):
            # The key is "+" itself, alone or after modifiers ("Shift++").
            names, main = key[:-1].removesuffix("+"), "+"
        modifiers = 0
        for name in names.split("+") if names else []:
            if name not in _MODIFIERS:
                raise BrowserError(f"unknown modifier {name!r} in {key!r}")
            modifiers |= _MODIFIERS[name]
        if main in _KEYS:
            code, key_code, text = _KEYS[main]
            main = " " if main == "Space" else main
        elif len(main) == 1:
            if modifiers & _MODIFIERS["Shift"]:
                main = main.upper()
            text = main
            if main.isalpha():
                code, key_code = f"Key{main.upper()}", ord(main.upper())
            elif main.isdigit():
                code, key_code = f"Digit{main}", ord(main)
            else:
                code, key_code = "", 0
        else:
            raise BrowserError(f"unknown key {main!r}: name one of {sorted(_KEYS)} or a character")
        # With Control, Alt or Meta held a key types nothing: it is a shortcut.
        if modifiers & (1 | 2 | 4):
            text = ""
        event: dict[str, Any] = {
            "key": main,
            "code": code,
            "windowsVirtualKeyCode": key_code,
            "nativeVirtualKeyCode": key_code,
            "modifiers": modifiers,
        }
        down = {**event, "type": "keyDown", "text": text, "unmodifiedText": text}
        if not text:
            down = {**event, "type": "rawKeyDown"}
        self._call("Input.dispatchKeyEvent", down)
        self._call("Input.dispatchKeyEvent", {**event, "type": "keyUp"})

    def _wait_for_target(
        self, script: str, selector: str, action: str, timeout: float | None
    ) -> dict[str, Any]:
        expression = f"{script}({json.dumps(selector)})"
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            found = self._evaluate_while_waiting(expression)
            if isinstance(found, dict) and "why" not in found:
                return found
            if time.monotonic() >= deadline:
                break
            time.sleep(_POLL_S)
        why = found["why"] if isinstance(found, dict) else "the page did not answer"
        raise BrowserTimeoutError(
            f"timed out after {limit:.1f} s waiting to {action} {selector!r} "
            f"on {_short(self._url)}: {why}"
        )

    # -- reading -----------------------------------------------------------------------

    def text(self, selector: str) -> str:
        """The ``innerText`` of the first element matching ``selector``, now (it does
        not wait: :meth:`wait_for` does); raises when none matches."""
        found = self.evaluate(
            f"(() => {{ const el = document.querySelector({json.dumps(selector)});"
            " return el ? (el.innerText ?? el.textContent) : null; })()"
        )
        if found is None:
            raise BrowserError(f"no element matches {selector!r} on {_short(self._url)}")
        return str(found)

    def texts(self, selector: str) -> list[str]:
        """The ``innerText`` of every element matching ``selector``, in document order."""
        found = self.evaluate(
            f"Array.from(document.querySelectorAll({json.dumps(selector)}),"
            " (el) => el.innerText ?? el.textContent)"
        )
        return [str(text) for text in found]

    def title(self) -> str:
        return str(self.evaluate("document.title"))

    def screenshot(self, path: str | os.PathLike[str], *, full_page: bool = False) -> None:
        """Writes a PNG of the viewport, or of the whole page with ``full_page``, at
        one pixel per CSS pixel."""
        params: dict[str, Any] = {"format": "png", "fromSurface": True}
        if full_page:
            size = self._call("Page.getLayoutMetrics")["cssContentSize"]
            params["captureBeyondViewport"] = True
            params["clip"] = {
                "x": 0,
                "y": 0,
                "width": math.ceil(size["width"]),
                "height": math.ceil(size["height"]),
                "scale": 1,
            }
        data = self._call("Page.captureScreenshot", params)["data"]
        Path(path).write_bytes(base64.b64decode(data))

    def first_paint_ms(self) -> float | None:
        """Milliseconds from the start of the navigation to the first paint of the
        current document (the first contentful paint where the browser records no
        plain first paint), or None before anything was painted."""
        found = self.evaluate(
            "(() => { const entry = performance.getEntriesByName('first-paint')[0]"
            " ?? performance.getEntriesByName('first-contentful-paint')[0];"
            " return entry ? entry.startTime : null; })()"
        )
        return float(found) if found is not None else None

    def close(self) -> None:
        """Closes the tab. Safe to call twice."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(BrowserError):
            self._connection.send(
                "Target.closeTarget", {"targetId": self.target_id}, timeout=self.timeout
            )
        self._connection.forget(self._session)

    # -- protocol ----------------------------------------------------------------------

    def _call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if self.closed:
            raise BrowserError(f"{method}: the page is closed")
        if self._crashed:
            raise BrowserError(f"{method}: the page crashed (at {_short(self._url)})")
        return self._connection.send(method, params, session_id=self._session, timeout=self.timeout)

    def _on_event(self, method: str, params: dict[str, Any]) -> None:
        """Runs on the connection's reader thread: records, and lets requests go."""
        if method == "Fetch.requestPaused":
            url = params["request"]["url"]
            # A dedicated worker's requests reach the Fetch domain but not the
            # page's Network domain: recorded here unless the Network domain has.
            self._record_request(params.get("networkId") or params["requestId"], url)
            if _is_local(url):
                self._post("Fetch.continueRequest", {"requestId": params["requestId"]})
            else:
                self.blocked_urls.append(url)
                self._post(
                    "Fetch.failRequest",
                    {"requestId": params["requestId"], "errorReason": "BlockedByClient"},
                )
        elif method == "Network.requestWillBeSent":
            # A redirect's next hop comes under the same id, and is a request of its own.
            self._record_request(
                params["requestId"], params["request"]["url"], hop="redirectResponse" in params
            )
        elif method == "Network.webSocketCreated":
            self.requested_urls.append(params["url"])
            if not _is_local(params["url"]):
                self.blocked_urls.append(params["url"])
        elif method == "Network.responseReceived":
            if params.get("type") == "Document" and params.get("frameId") == self._frame_id:
                self._statuses[params["loaderId"]] = int(params["response"]["status"])
        elif method == "Page.frameNavigated":
            frame = params["frame"]
            if "parentId" not in frame:
                self._url = frame["url"]
        elif method == "Page.navigatedWithinDocument":
            if params.get("frameId") == self._frame_id:
                self._url = params["url"]
        elif method == "Runtime.exceptionThrown":
            self.console_errors.append(_describe_exception(params["exceptionDetails"]))
        elif method == "Runtime.consoleAPICalled":
            if params.get("type") in ("error", "assert"):
                args = params.get("args", [])
                self.console_errors.append(" ".join(_describe_remote(arg) for arg in args))
        elif method == "Log.entryAdded":
            entry = params["entry"]
            if entry.get("level") == "error":
                text = entry.get("text", "")
                url = entry.get("url")
                self.console_errors.append(f"{text} ({url})" if url else text)
        elif method == "Page.javascriptDialogOpening":
            self.dialogs.append(params.get("message", ""))
            self._post("Page.handleJavaScriptDialog", {"accept": True})
        elif method == "Inspector.targetCrashed":
            self._crashed = True
        elif method == "Inspector.detached":
            self.closed = True

    def _record_request(self, request_id: str, url: str, *, hop: bool = False) -> None:
        # A data: URL is read from its own text and reaches no server (Chromium's
        # error page draws its icons from some, when it shows in time).
        if url.startswith("data:"):
            return
        if hop or request_id not in self._request_ids:
            self._request_ids.add(request_id)
            self.requested_urls.append(url)

    def _post(self, method: str, params: dict[str, Any]) -> None:
        self._connection.post(method, params, session_id=self._session)


def _short(url: str) -> str:
    """A URL short enough for an error message (a data: URL holds a whole page)."""
    return url if len(url) <= 120 else url[:117] + "..."


def _is_syntax_error(error: JavaScriptError) -> bool:
    """A syntax error in an expression or a selector (a DOMException named
    SyntaxError): evaluating it again cannot succeed."""
    return str(error).startswith("SyntaxError")


def _value(result: dict[str, Any]) -> Any:
    """A Runtime.RemoteObject's value as Python's."""
    if "unserializableValue" in result:
        raw = str(result["unserializableValue"])
        if raw.endswith("n"):
            return int(raw[:-1])
        return float(raw)  # NaN, Infinity, -Infinity, -0
    return result.get("value")


def _describe_remote(arg: dict[str, Any]) -> str:
    if "value" in arg:
        value = arg["value"]
        return value if isinstance(value, str) else json.dumps(value)
    return str(arg.get("description") or arg.get("unserializableValue") or arg.get("type", ""))


def _describe_exception(details: dict[str, Any]) -> str:
    exception = details.get("exception") or {}
    description = exception.get("description")
    if description is None and "value" in exception:
        # A thrown non-Error (`throw "text"`) carries its value alone.
        description = f"{details.get('text', 'Uncaught')} {_describe_remote(exception)}"
    return str(description or details.get("text") or "a JavaScript exception")
