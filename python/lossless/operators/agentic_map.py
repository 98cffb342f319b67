"""AgenticMap: an agent per item, each in a sub-session of its own, durable and
resumable like LLMMap."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from typing import Any

import anyio

from lossless import _native
from lossless.config import Config
from lossless.errors import InvalidInputError
from lossless.events import EventBus
from lossless.files import native_store
from lossless.operators._agent import AgentTool, Conversation
from lossless.operators._run import (
    MapResult,
    MapStream,
    Outcome,
    Unencodable,
    encode_item,
    pending_items,
    stored_results,
)
from lossless.operators._template import compile_template, render
from lossless.session import SharedSessionParts, flush_search_index, shared_session_parts
from lossless.store import database_path

__all__ = ["AgenticMap"]


class AgenticMap:
    """Runs an agent per item: a multi-turn loop in a sub-session of ``db``.

    Each item's prompt (``template``, Jinja2, using ``item``) opens a session linked
    to ``parent`` (a session id or a ``Session``; without one, the map id), listed
    by ``lossless sessions --parent ID``. The agent may call ``tools``
    (:class:`AgentTool`; ``read_only=True`` gives it none) for up to ``max_turns``
    model calls. Only its final answer returns: the item succeeds when the agent
    ends a turn with text and no tool call. An error, a reply cut at the token
    limit, an empty answer (unless ``continuation_message`` asks it to go on) and
    exhausted turns are failures with their reason.

    Outcomes are stored as items complete; :meth:`resume` runs what is left, each
    unfinished item going on in its own sub-session from where it stopped.
    """

    def __init__(
        self,
        *,
        model: str,
        template: str,
        system_prompt: str | None = None,
        tools: Sequence[AgentTool] = (),
        read_only: bool = False,
        max_turns: int = 10,
        continuation_message: str | None = None,
        concurrency: int | None = None,
        timeout_s: float | None = None,
        db: str | os.PathLike[str] = "lossless.db",
        config: Config | None = None,
        parent: object = None,
        events: EventBus | None = None,
        progress: bool = False,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise InvalidInputError("model: expected a model name")
        self.model = model
        self.template_source = template
        self._template = compile_template(template)
        tools = tuple(tools)
        if not all(isinstance(tool, AgentTool) for tool in tools):
            raise InvalidInputError("tools: expected AgentTool objects")
        if read_only and tools:
            raise InvalidInputError("tools: a read_only map gives its agents no tools")
        if len({tool.name for tool in tools}) != len(tools):
            raise InvalidInputError("tools: two tools share a name")
        self.tools = tools
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise InvalidInputError("max_turns: expected an integer of at least 1")
        if timeout_s is not None and not timeout_s > 0:
            raise InvalidInputError("timeout_s: must be more than 0")
        self.system_prompt = system_prompt
        self.max_turns = max_turns
        self.continuation_message = continuation_message
        self.config = config or Config()
        self.concurrency = concurrency or self.config.operators.agentic_map_concurrency
        if isinstance(self.concurrency, bool) or self.concurrency < 1:
            raise InvalidInputError("concurrency: expected an integer of at least 1")
        self.timeout_s = timeout_s
        self._db = database_path(db)
        self.parent_id = _parent_id(parent)
        self.events = events or EventBus()
        self.progress = progress

    def run(self, items: Iterable[Any]) -> MapStream:
        """Run an agent per item; iterate the stream for results as they complete."""
        if isinstance(items, str | bytes) or not isinstance(items, Iterable):
            raise InvalidInputError("items: expected an iterable of items")
        materialised = list(items)

        async def prepare() -> tuple[str, _native.Store, list[tuple[int, Any]], Any, Any]:
            store = await anyio.to_thread.run_sync(native_store, self._db)
            encoded = [encode_item(item) for item in materialised]
            map_id = await anyio.to_thread.run_sync(
                _native.create_map,
                store,
                "agentic",
                self.parent_id,
                json.dumps(self._spec()),
                [text for text, _ in encoded],
            )
            self._map_id, self._store, self._new_run = map_id, store, True
            await self._share_session_parts()
            return map_id, store, list(enumerate(item for _, item in encoded)), self._item, _same

        return self._stream(prepare)

    async def run_all(self, items: Iterable[Any]) -> list[MapResult]:
        """:meth:`run` to the end; the results in input order."""
        return await self.run(items).collect()

    def resume(self, map_id: str, *, retry_failed: bool = False) -> MapStream:
        """Run the items of stored run ``map_id`` that have no outcome yet (with
        ``retry_failed``, also failed ones) with this map's tools and settings; an
        item whose sub-session started goes on in it."""

        async def prepare() -> tuple[str, _native.Store, list[tuple[int, Any]], Any, Any]:
            store = await anyio.to_thread.run_sync(native_store, self._db)
            run = await anyio.to_thread.run_sync(_native.map_run, store, map_id)
            if run.kind != "agentic":
                raise InvalidInputError(f"map_id: {map_id} is an {run.kind} map run")
            self._map_id, self._store, self._new_run = map_id, store, False
            self.parent_id = run.parent_id
            pending = await anyio.to_thread.run_sync(
                lambda: pending_items(store, map_id, retry_failed=retry_failed)
            )
            await self._share_session_parts()
            return map_id, store, pending, self._item, _same

        return self._stream(prepare)

    @staticmethod
    async def results(
        map_id: str, *, db: str | os.PathLike[str] = "lossless.db"
    ) -> list[MapResult]:
        """The stored outcome of every item of run ``map_id`` that has one, in input order."""
        store = await anyio.to_thread.run_sync(native_store, db)
        return await anyio.to_thread.run_sync(stored_results, store, map_id, _same)

    # -- internals ---------------------------------------------------------------

    _map_id: str = ""
    _store: _native.Store
    _shared: SharedSessionParts | None = None
    # A run just stored has no sub-session yet: its items need not look one up.
    _new_run: bool = False

    def _stream(self, prepare: Any) -> MapStream:
        return MapStream(
            prepare=prepare,
            concurrency=self.concurrency,
            events=self.events,
            parent_id=self.parent_id,
            progress=self.progress,
            finish=self._flush_search_index,
        )

    async def _share_session_parts(self) -> None:
        """The connections, counter and limits every new sub-session of this run
        shares, made once (decision 102). The run's own connection is the one its
        sub-sessions write turns through: its outcomes and their turns share one
        checkpoint mark, the one of a turn connection (decision 121)."""
        self._shared = await shared_session_parts(self.model, self._store, self.config)

    async def _flush_search_index(self) -> None:
        """Indexes what the sub-sessions queued for search, once the run ends: the
        work each session does when it closes, done once for the run."""
        if self._shared is not None:
            await anyio.to_thread.run_sync(flush_search_index, self._shared.store)

    def _spec(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "template": self.template_source,
            "system_prompt": self.system_prompt,
            "tools": [tool.name for tool in self.tools],
            "max_turns": self.max_turns,
            "continuation_message": self.continuation_message,
        }

    async def _item(self, index: int, item: Any) -> Outcome:
        if isinstance(item, Unencodable):
            return Outcome.failed("bad_input", item.reason)
        try:
            prompt = render(self._template, item)
        except Exception as err:
            return Outcome.failed("template_error", f"{type(err).__name__}: {err}")
        outcome = Outcome()
        with anyio.move_on_after(self.timeout_s) as scope:
            await self._converse(index, prompt, outcome)
        if scope.cancelled_caught:
            outcome.error_kind = "timeout"
            outcome.error = f"the agent had not finished after {self.timeout_s} s"
        return outcome

    async def _converse(self, index: int, prompt: str, outcome: Outcome) -> None:
        from lossless.session import Session

        started = (
            None
            if self._new_run
            else await anyio.to_thread.run_sync(
                _native.item_session, self._store, self._map_id, index
            )
        )
        if started is None:
            link = (self.parent_id or self._map_id, self._map_id, index)
            session = await Session._new(
                model=self.model,
                db=self._db,
                config=self.config,
                system_prompt=self.system_prompt,
                link=link,
                shared=self._shared,
            )
        else:
            session = await Session.load(started, db=self._db, config=self.config)
        outcome.session_id = session.id
        async with session:
            conversation = Conversation(
                session,
                self.tools,
                max_turns=self.max_turns,
                continuation=self.continuation_message,
                outcome=outcome,
            )
            history = session.history()
            if history:
                await conversation.resume(history)
            else:
                await conversation.start(prompt)


def _same(value: Any) -> Any:
    return value


def _parent_id(parent: object) -> str | None:
    if parent is None:
        return None
    if isinstance(parent, str) and parent:
        return parent
    found = getattr(parent, "id", None)
    if isinstance(found, str):
        return found
    raise InvalidInputError("parent: expected a session id or a Session")
