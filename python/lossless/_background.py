"""Work a session starts and does not wait for: background compaction rounds and
async event handlers.

A task group is bound to the task that entered it, so a session that entered one
when it opened could only close in that task, and only in reverse order of other
sessions. These tasks belong to the event loop instead (an asyncio task, or a trio
system task): a session opens and closes from any task in any order, and waits for
its own tasks when it closes.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

import anyio

__all__ = ["Background", "Spawner"]

log = logging.getLogger("lossless")


def _on_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class Spawner(Protocol):
    """Starts a task its caller does not wait for (:class:`Background`, or any
    object with the same method, such as a task group)."""

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Any: ...


class Background:
    """Starts tasks on the running event loop and knows when they have all ended."""

    def __init__(self) -> None:
        self._running = 0
        self._idle: anyio.Event | None = None
        # asyncio keeps only weak references to tasks: hold them until they end.
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def running(self) -> int:
        """Tasks started and not yet ended."""
        return self._running

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Run ``func(*args)`` as a task of the event loop. Call it from async code."""
        self._running += 1
        if _on_asyncio():
            task = asyncio.get_running_loop().create_task(self._tracked(func, args))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            trio: Any = importlib.import_module("trio")
            trio.lowlevel.spawn_system_task(self._tracked, func, args)

    async def _tracked(self, func: Callable[..., Coroutine[Any, Any, Any]], args: Any) -> None:
        try:
            await func(*args)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception:
            # Background work reports its own failures; one that escapes is a bug,
            # logged here rather than lost with its task.
            log.exception("background task %r failed", func)
        finally:
            self._running -= 1
            if self._running == 0 and self._idle is not None:
                self._idle.set()

    async def wait(self) -> None:
        """Return once every task started so far (and any they started) has ended."""
        while self._running:
            self._idle = anyio.Event()
            await self._idle.wait()
