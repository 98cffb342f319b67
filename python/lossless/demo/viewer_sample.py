"""A database holding a session of every kind the viewer shows, made by running
them for real against the project's local server on 127.0.0.1: what the viewer's
tests, its screenshot and its benchmark read.

- an agent that lets lossless call the model (``send`` and ``respond``) through the
  demo's trajectory, in a small window so that it prunes and compacts several
  times, with a pinned fact, a task, reasoning and a screenshot;
- an own loop (``context()``, its own model call, ``report_usage``);
- a drop-in loop (``sync`` of the whole history) whose edited history forks;
- two sub-sessions an operator ran under the agent's session.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import anyio

from lossless.config import CompactionConfig, Config, LLMConfig, ModelConfig
from lossless.demo.trajectory import RECALL_FACT, RECALL_MESSAGE, generate_trajectory

__all__ = ["PIN", "Sample", "make_sample", "write_sample"]

PIN = "Never touch payhub/legacy_billing/; amounts are integers in cents."
SYSTEM_PROMPT = "You are a careful coding agent working on the payhub service."
TASK = "Refactor the payhub payout client; keep the tests green."
# A small window: the trajectory's opening prunes and compacts several times in it.
_WINDOW = 12_000


@dataclass
class Sample:
    """The sessions of a sample database, by what they are."""

    db: str
    agent: str = ""
    own_loop: str = ""
    synced: str = ""
    fork: str = ""
    children: list[str] = field(default_factory=list)
    #: A word of the user message the agent's session compacted away early.
    fact: str = RECALL_FACT
    #: The screenshot a tool of the agent took.
    image_id: str = ""
    compactions: int = 0


def make_sample(db: str | os.PathLike[str], *, turns: int = 140) -> Sample:
    """Writes the sample into ``db`` (a new file); returns its sessions."""
    return anyio.run(write_sample, os.fspath(db), turns)


async def write_sample(db: str, turns: int = 140) -> Sample:
    """:func:`make_sample` in a running event loop."""
    from lossless.testing import LocalLLMServer

    sample = Sample(db)
    with LocalLLMServer(report_cached_tokens=True) as server:
        config = _config(server.base_url)
        await _agent(sample, server, config, turns)
        await _own_loop(sample, server, config)
        await _synced(sample, config)
        _children(sample)
    return sample


def _config(api_base: str) -> Config:
    return Config(
        model=ModelConfig(context_limit=_WINDOW, max_output_tokens=1_000),
        llm=LLMConfig(api_base=api_base, api_key="unused"),
        compaction=CompactionConfig(
            output_budget=1_000,
            summary_max_tokens=600,
            prune_protect_tokens=2_000,
            prune_minimum_tokens=500,
        ),
    )


async def _agent(sample: Sample, server: Any, config: Config, turns: int) -> None:
    """The trajectory sent as an agent that lets lossless call the model."""
    from lossless.events import Event, EventName
    from lossless.parts import MediaPart
    from lossless.session import Session
    from lossless.testing import Reply, ToolCallSpec, screenshot

    async with Session.open(
        model="openai/sample-agent", db=sample.db, config=config, system_prompt=SYSTEM_PROMPT
    ) as session:
        sample.agent = session.id

        def counted(event: Event) -> None:
            sample.compactions += bool(event.payload.get("summary_ids"))

        session.events.subscribe(counted, EventName.COMPACTION_COMPLETED)
        await session.pin(PIN)
        await session.set_task(TASK)
        question: str | None = None
        shots = 0
        for index, turn in enumerate(generate_trajectory(turns=turns)):
            text = turn.text
            if turn.role == "user":
                question = text or None
                continue
            tools = turn.answered_tools
            calls = [ToolCallSpec(tool.name, tool.input) for tool in tools]
            reasoning = f"Step {index}: {len(calls)} calls to make." if index % 7 == 1 else ""
            server.enqueue(Reply(text=text, tool_calls=calls, reasoning=reasoning))
            result = await (session.send(question) if question else session.respond())
            question = None
            for call, tool in zip(result.tool_calls, tools, strict=True):
                failed = tool.status == "error"
                media = []
                if not failed and shots < 2 and index > 10:
                    shot = MediaPart.image(
                        screenshot(640, 400, seed=index), caption=f"{tool.name} result"
                    )
                    media.append(shot)
                    shots += 1
                await session.update_tool(
                    call.call_id,
                    status="error" if failed else "completed",
                    output=tool.output,
                    error=tool.error if failed else None,
                    media=media,
                )
        await session.compaction.wait_for_pending()
        sample.image_id = _first_image(session)


def _first_image(session: Any) -> str:
    for record in session.store.history(session.id):
        for part in record.parts:
            if part.get("kind") == "media" and part.get("media_id"):
                return str(part["media_id"])
    return ""


async def _own_loop(sample: Sample, server: Any, config: Config) -> None:
    """An agent that calls its model itself and asks lossless for each request."""
    import litellm

    from lossless.parts import ToolPart
    from lossless.session import Session
    from lossless.testing import Reply, ToolCallSpec

    async with Session.open(
        model="openai/sample-loop", db=sample.db, config=config, system_prompt=SYSTEM_PROMPT
    ) as session:
        sample.own_loop = session.id
        await session.pin(PIN)
        await session.record("user", RECALL_MESSAGE)
        for step in range(12):
            server.enqueue(
                Reply(
                    text=f"Checking module {step}.",
                    tool_calls=[ToolCallSpec("read_file", {"path": f"payhub/m{step}.py"})],
                )
            )
            request = await session.context()
            response = await litellm.acompletion(
                model="openai/sample-loop",
                messages=request.messages,
                api_base=server.base_url,
                api_key="unused",
            )
            await session.report_usage(response.usage)
            message = response.choices[0].message
            call = (message.tool_calls or [])[0]
            await session.record(
                "assistant",
                [
                    message.content or "",
                    ToolPart(
                        call.function.name,
                        call.id,
                        call.function.arguments,
                        output=f"def payout_{step}(cents: int) -> int:\n    return cents\n" * 20,
                    ),
                ],
            )
            if step % 4 == 3:
                await session.record("user", f"Good. Now module {step + 1}, same rules.")


async def _synced(sample: Sample, config: Config) -> None:
    """A loop that hands its whole history over every turn; an edit forks it."""
    from lossless.session import Session

    history: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    async with Session.open(
        model="openai/sample-sync", db=sample.db, config=config, system_prompt=SYSTEM_PROMPT
    ) as session:
        sample.synced = session.id
        for step in range(6):
            history.append({"role": "user", "content": f"Migrate module {step} to the v2 API."})
            await session.sync(history)
            history.append({"role": "assistant", "content": f"Module {step} migrated."})
        await session.sync(history)
        history[3] = {"role": "user", "content": "Migrate module 1 to the v3 API instead."}
        await session.sync(history[:4])
        sample.fork = session.id


def _children(sample: Sample) -> None:
    """Two sub-sessions of an operator's run under the agent's session, as
    ``AgenticMap`` links them (``session_parents``)."""
    from lossless import _native
    from lossless.store import Store

    store = Store(sample.db)
    try:
        run = _native.create_map(store.native, "agentic", sample.agent, "{}", ['"a"', '"b"'])
        for idx in range(2):
            child = _native.create_child_session(
                store.native, "openai/sample-agent", "{}", None, sample.agent, run, idx
            )
            store.append(child, "user", f"Look up ticket {idx + 1}.")
            store.append(child, "assistant", f"Ticket {idx + 1} is about a refund.")
            sample.children.append(child)
    finally:
        store.native.close()
