"""The narrow ports through which capabilities see the session they serve.

The arena, recall and the file reader each need a few things of their session.
They take these protocols rather than the :class:`~lossless.session.Session`
class, so none of them imports the session module or reaches into its private
state, and no import cycle joins them to it. A session satisfies each of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol, TypeVar, runtime_checkable

from lossless import _native

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from contextlib import AbstractContextManager

    from lossless.config import Config
    from lossless.events import EventBus
    from lossless.parts import MediaPart

__all__ = ["ArenaHost", "CompactionTracing", "RecallTracing", "SessionView", "ToolLoopHost"]

_T = TypeVar("_T")


@runtime_checkable
class SessionView(Protocol):
    """A session as its readers see it: its id, its model and its store."""

    @property
    def id(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def store(self) -> _native.Store: ...


class ArenaHost(SessionView, Protocol):
    """What the arena reads of its session: the configuration and the event bus.
    What it asks of the session (to check it is open, to request a round) it is
    handed as functions."""

    @property
    def config(self) -> Config: ...

    @property
    def events(self) -> EventBus: ...


class ToolLoopHost(SessionView, Protocol):
    """A session whose tool calls a capability answers itself (the recall tools)."""

    @property
    def config(self) -> Config: ...

    async def update_tool(
        self,
        call_id: str,
        *,
        status: Literal["pending", "running", "completed", "error"],
        output: str | None = None,
        error: str | None = None,
        media: Sequence[MediaPart] = (),
    ) -> None: ...


class CompactionTracing(Protocol):
    """What the compaction engine asks of a session's telemetry: a span around one
    compaction. The figures come from the events the compaction publishes inside it."""

    def compaction(self) -> AbstractContextManager[object]: ...


class RecallTracing(Protocol):
    """What recall asks of a session's telemetry (``Session.telemetry``, when on)."""

    def recall(
        self,
        operation: str,
        run: Callable[[], _T],
        *,
        query: str | None = None,
        count: Callable[[_T], int] | None = None,
    ) -> _T:
        """``run()`` inside a span of the recall ``operation`` (``grep``, ``describe``,
        ``expand``, ``read``, ``read_media``); ``count`` tells how many results it gave."""
        ...

    def tool_call(self, name: str, call_id: str, arguments: str) -> AbstractContextManager[object]:
        """A span around the answer to one tool call a model made."""
        ...
