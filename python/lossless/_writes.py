"""Short writes made on the event loop when they can be made at once.

A turn's write takes a few tens of microseconds; handing it to a worker thread costs
more than that, and the thread then waits for the interpreter while the loop (or
litellm's logging thread) holds it. So a write is first tried on the loop with
``wait=False``: the native call keeps the interpreter and gives up, having written
nothing, wherever it would wait (another writer holds the lock, in this process or
another, or a checkpoint, the search index or a large part is due). Only then does
it go to a worker thread, where waiting is allowed (decision 120).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

import anyio

__all__ = ["write_now_or_in_thread"]

_T = TypeVar("_T")


async def write_now_or_in_thread(write: Callable[..., _T | None]) -> _T:
    """``write(wait=False)`` on the loop, else ``write(wait=True)`` in a worker thread."""
    done = write(wait=False)
    if done is not None:
        return done
    waited = await anyio.to_thread.run_sync(partial(write, wait=True))
    assert waited is not None  # a write that may wait always writes or raises
    return waited
