"""A session of the OpenAI Agents SDK kept by lossless (``pip install
'lossless[openai-agents]'``).

``LosslessSession`` implements the SDK's session protocol, so ``Runner.run(agent,
..., session=LosslessSession("thread-1", model=...))`` runs on it as on the SDK's
own ``SQLiteSession``: ``add_items`` stores what the run produced, ``get_items``
gives the run the bounded context as Responses input items (the instruction and
pinned facts in it, what was compacted as summaries); ``bound_model_input``, as the
run's ``call_model_input_filter``, bounds every model call of a run the same way.
Nothing stored is removed:
``pop_item`` goes on in a fork without the newest item, ``clear_session`` starts a
new session under the same name; the earlier ones stay stored and searchable.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from typing import Any

import anyio
from agents import FunctionTool
from agents.memory import SessionABC, SessionSettings
from agents.run_config import CallModelData, ModelInputData

from lossless.config import Config
from lossless.errors import InvalidInputError
from lossless.openai_format import mapping_of
from lossless.parts import MediaPart, ProviderCompactionPart, ReasoningPart, TextPart, ToolPart
from lossless.recall.tools import RECALL_TOOLS, run_recall_tool
from lossless.responses_format import ITEM_TYPES
from lossless.results import Message
from lossless.session import Session

__all__ = ["LosslessSession"]

_log = logging.getLogger(__name__)


class LosslessSession(SessionABC):
    """The SDK's session protocol on a lossless session named ``session_id``.

    ``session_id`` is the lossless session's key: the same id opens the same
    history in another process (see ``Session.open(key=...)``). ``model`` is the
    litellm name of the model the agent calls (its window bounds ``get_items``);
    ``config`` and ``system_prompt`` are those of a new session. ``session_settings``
    (its ``limit``) caps the items ``get_items`` returns, as for the SDK's sessions.
    The lossless session opens on first use; ``close()`` (or ``async with``) ends it.
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        *,
        model: str,
        db: str | os.PathLike[str] = "lossless.db",
        config: Config | None = None,
        system_prompt: str | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        # Checked here rather than at first use, where the error would come out of
        # the SDK's run.
        if not isinstance(session_id, str) or not session_id:
            raise InvalidInputError(f"session_id: expected a non-empty string, got {session_id!r}")
        self.session_id = session_id
        self.session_settings = session_settings or SessionSettings()
        self._model = model
        self._db = db
        self._config = config
        self._system_prompt = system_prompt
        self._session: Session | None = None
        # Two runs may share the object: one of them opens the session.
        self._opening = anyio.Lock()

    async def session(self) -> Session:
        """The lossless session this one works on (opened on first use): pin facts,
        set the task, or search it with the recall tools through it."""
        async with self._opening:
            if self._session is None:
                self._session = await Session.open_keyed(
                    self.session_id,
                    model=self._model,
                    db=self._db,
                    config=self._config,
                    system_prompt=self._system_prompt,
                )
            return self._session

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The bounded context as Responses input items. With a limit (here or in
        ``session_settings``), the newest ``limit`` items of the conversation after
        the system items lossless puts first (the session's prompt, the pinned facts
        and the task), which are always returned: the model never loses them."""
        session = await self.session()
        context = await session.context(format="responses")
        items = [dict(item) for item in context.input]
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is None:
            return items
        if limit < 0:
            raise InvalidInputError(f"limit: expected a count of items, got {limit}")
        lead = _leading_system(items)
        return items[:lead] + (items[max(lead, len(items) - limit) :] if limit else [])

    async def add_items(self, items: list[Any]) -> None:
        """Stores the run's items in order: messages, function calls and their
        outputs, reasoning and compaction items. The items of tools that run outside
        the agent's function tools (hosted tools, computer, shell, custom and MCP
        calls) and ``item_reference`` items are left out, calls and results alike;
        an item that is not a Responses input item raises
        :class:`~lossless.errors.InvalidInputError` and stores nothing."""
        kept = _kept(items)
        if kept:
            session = await self.session()
            await session.record_messages(kept, format="responses")

    async def bound_model_input(self, data: CallModelData[Any]) -> ModelInputData:
        """A ``RunConfig(call_model_input_filter=...)`` that bounds every model call
        of a run, not only its start: the SDK stores each step's items in the session
        before the next call, so the call is sent the bounded context instead of the
        run's growing list. When the session does not hold the list's newest item (an
        item lossless skips, a ``session_input_callback`` that adds one), the list is
        sent as the SDK made it."""
        sent = data.model_data.input
        bounded = await self.get_items()
        if not sent or not bounded or _tail_key(bounded[-1]) != _tail_key(sent[-1]):
            return data.model_data
        return ModelInputData(input=bounded, instructions=data.model_data.instructions)

    async def pop_item(self) -> Any | None:
        """The newest item, taken out of the history: the session goes on as a fork
        that shares everything before the newest turn, and holds that turn again
        without the item. The item stays stored in the session left."""
        session = await self.session()
        history = session.history()
        if not history:
            return None
        newest = history[-1]
        items = _items_of(newest)
        if not items:
            return None
        if len(history) > 1:
            branch = await session.fork(at=history[-2].id, key=self.session_id)
        else:
            branch = await self._fresh(session)
        await session.close()
        self._session = branch
        if items[:-1]:
            await branch.record_messages(items[:-1], format="responses")
        return items[-1]

    async def clear_session(self) -> None:
        """Starts a new, empty session under this id; the old one stays stored."""
        session = await self.session()
        fresh = await self._fresh(session)
        await session.close()
        self._session = fresh

    async def _fresh(self, session: Session) -> Session:
        """A new session like ``session``, which this id names from now on."""
        return await Session.create(
            model=session.model,
            db=self._db,
            config=session.config,
            system_prompt=session.system_prompt,
            key=self.session_id,
        )

    def recall_tools(self) -> list[FunctionTool]:
        """The recall tools (``lossless_grep``, ``lossless_describe``,
        ``lossless_expand``, ``lossless_read``) as the SDK's function tools, for an
        ``Agent(tools=...)``: the agent reads back what compaction took out of its
        context, in whichever session this one works on when it calls them."""
        return [self._recall_tool(tool["function"]) for tool in RECALL_TOOLS]

    def _recall_tool(self, spec: dict[str, Any]) -> FunctionTool:
        name = spec["name"]

        async def invoke(context: Any, arguments: str) -> str:
            session = await self.session()
            return await anyio.to_thread.run_sync(run_recall_tool, session, name, arguments)

        return FunctionTool(
            name=name,
            description=spec["description"],
            params_json_schema=spec["parameters"],
            on_invoke_tool=invoke,
            strict_json_schema=False,
        )

    async def close(self) -> None:
        """Closes the lossless session (it opens again on next use)."""
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def __aenter__(self) -> LosslessSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _items_of(message: Message) -> list[dict[str, Any]]:
    """A stored turn as the Responses input items it was recorded from."""
    if message.role != "assistant":
        # Images by URL come back as they came; stored bytes stay in the store
        # (``Session.read_media``), not in the popped item.
        content = [
            {"type": "input_text", "text": part.text}
            if isinstance(part, TextPart)
            else {"type": "input_image", "image_url": part.url, "detail": part.detail or "auto"}
            for part in message.parts
            if isinstance(part, TextPart) or (isinstance(part, MediaPart) and part.url)
        ]
        return [{"role": message.role, "content": content}] if content else []
    items: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, (ReasoningPart, ProviderCompactionPart)) and part.payload is not None:
            payload = part.payload
            items.append(json.loads(payload) if isinstance(payload, str) else dict(payload))
        elif isinstance(part, TextPart) and part.text:
            # An empty text is how a turn of reasoning or compaction alone is stored.
            text = {"type": "output_text", "text": part.text, "annotations": []}
            items.append({"type": "message", "role": "assistant", "content": [text]})
        elif isinstance(part, ToolPart):
            arguments = part.input if isinstance(part.input, str) else json.dumps(part.input)
            items.append(
                {
                    "type": "function_call",
                    "call_id": part.call_id,
                    "name": part.name,
                    "arguments": arguments,
                }
            )
            if part.output is not None:
                output = part.output
                results.append(
                    {"type": "function_call_output", "call_id": part.call_id, "output": output}
                )
    return items + results


def _leading_system(items: Sequence[dict[str, Any]]) -> int:
    """How many of ``items`` are the system messages a context starts with."""
    count = 0
    while count < len(items) and items[count].get("role") in ("system", "developer"):
        count += 1
    return count


def _kept(items: Sequence[Any]) -> list[Any]:
    """The items lossless stores. A typed item of another kind is skipped: its
    tool ran outside this process (or names what only OpenAI holds), and the
    model's answer after it, which is kept, carries what it found. An item without
    a type is left for ``record_messages`` to refuse."""
    kept = []
    for item in items:
        fields = mapping_of(item)
        kind = fields.get("type") if fields is not None else None
        if isinstance(kind, str) and kind not in ITEM_TYPES:
            _log.debug("not stored: a %s item", kind)
            continue
        kept.append(item)
    return kept


def _tail_key(item: Any) -> tuple[Any, ...]:
    """What identifies an item across its stored and sent forms (ids, statuses and
    the content's form left aside)."""
    fields = mapping_of(item) or {}
    content = fields.get("content")
    if isinstance(content, list):
        content = "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return (fields.get("type", "message"), fields.get("role"), fields.get("call_id"), content)
