"""Streamed replies that survive cancellation and kills.

While a reply streams, its text is written to the store every
``checkpoint_interval_s`` or ``checkpoint_chars`` (whichever comes first), under an
owner token that names this process. A process that loads the session closes only
the replies whose owner is gone: a process on this host is asked whether it still
runs; one on another host is judged by how long ago it last wrote.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio

from lossless import _native
from lossless._background import Spawner
from lossless.config import StoreConfig
from lossless.errors import LosslessError

__all__ = ["StreamCheckpoint", "gone_streams", "owner_token"]

log = logging.getLogger("lossless.streams")

_HOST = socket.gethostname()
# One token per process (a forked child gets its own): host and pid say whether it
# still runs, the nonce keeps a reused pid from passing for its predecessor.
_OWNERS: dict[int, str] = {}


def owner_token() -> str:
    """The owner token of this process's streams."""
    pid = os.getpid()
    token = _OWNERS.get(pid)
    if token is None:
        token = _OWNERS[pid] = f"{_HOST}:{pid}:{uuid.uuid4().hex[:8]}"
    return token


def _process_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it runs, as another user
    return True


def _owner_gone(owner: str | None, beat_at: int | None, stale_s: float, now_ms: int) -> bool:
    """Whether the owner of a stream is gone (see the module's docstring)."""
    if owner is None or beat_at is None:
        return True  # begun before streams had owners: nobody can finish it
    if owner == owner_token():
        return False
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host == _HOST and pid.isdigit():
        return not _process_runs(int(pid))
    return now_ms - beat_at > stale_s * 1000


def gone_streams(store: _native.Store, session_id: str, stale_s: float) -> list[str]:
    """Ids of the session's streaming replies whose owners are gone. Blocks: call it
    from a worker thread."""
    now_ms = int(time.time() * 1000)
    return [
        row.message_id
        for row in store.streams(session_id)
        if _owner_gone(row.owner, row.beat_at, stale_s, now_ms)
    ]


@dataclass
class StreamCheckpoint:
    """Writes a streaming reply's text to the store as it grows (bounded by time and
    size), and remembers the newest text so a failure can store it whole.

    A write runs beside the stream (one at a time, started with ``spawner``), so the
    stream never waits for the database; :meth:`settle` waits for the one in flight
    before the reply is finished.
    """

    store: _native.Store
    message_id: str
    owner: str
    config: StoreConfig
    spawner: Spawner
    text: str = ""
    _written_chars: int = 0
    _written_at: float = 0.0
    _in_flight: anyio.Event | None = None

    def __post_init__(self) -> None:
        self._written_at = time.monotonic()

    async def update(self, text: str) -> None:
        """Takes the reply's whole text so far; starts a write when a checkpoint is due
        and none is in flight (the next one takes everything since)."""
        self.text = text
        if self._in_flight is not None:
            return
        grown = len(text) - self._written_chars
        due = time.monotonic() - self._written_at >= self.config.checkpoint_interval_s
        if grown > 0 and (due or grown >= self.config.checkpoint_chars):
            done = self._in_flight = anyio.Event()
            self.spawner.start_soon(self._write, text[self._written_chars :], len(text), done)

    async def settle(self) -> None:
        """Returns once no checkpoint write is in flight."""
        if self._in_flight is not None:
            await self._in_flight.wait()

    async def _write(self, appended: str, chars: int, done: anyio.Event) -> None:
        """Writes the text that arrived since the last checkpoint (``appended``), which
        brings the checkpoint to ``chars`` characters."""
        call: Any = partial(self.store.checkpoint_message, self.message_id, self.owner, appended)
        try:
            await anyio.to_thread.run_sync(call)
        except LosslessError as err:
            # A checkpoint is insurance: a busy database must not break the reply,
            # which is stored whole when it ends.
            log.warning("checkpoint of %s failed: %s", self.message_id, err)
        else:
            self._written_chars = chars
        finally:
            self._written_at = time.monotonic()
            self._in_flight = None
            done.set()
