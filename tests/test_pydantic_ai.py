"""PydanticAI's ``Agent`` with ``LosslessHistory`` among its capabilities: a
multi-turn, tool-using conversation against the project's local server outgrows a
small window; every request keeps the system prompt and the pinned fact, stays
bounded, and an early fact comes back through the recall tools."""

from __future__ import annotations

import base64
import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, BinaryContent, ModelRetry
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from lossless import count_tokens
from lossless.config import Config
from lossless.errors import InvalidInputError
from lossless.integrations.pydantic_ai import LosslessHistory
from lossless.parts import MediaPart
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec, screenshot, small_window
from lossless.testing.conformance import check_request

pytestmark = pytest.mark.anyio

SYSTEM = "You schedule the ferry crossings."
PIN = "Times are in UTC; never round them."
SKIPPERS = [
    "arden",
    "bellamy",
    "corwin",
    "darrow",
    "ellery",
    "finlay",
    "gideon",
    "harlow",
    "ingram",
    "jessop",
    "kendrick",
    "lowell",
    "merritt",
    "norwood",
]


def _config() -> Config:
    return small_window()


def _agent(
    server: LocalLLMServer, history: LosslessHistory
) -> tuple[Agent[None, str], OpenAIProvider]:
    provider = OpenAIProvider(base_url=server.base_url, api_key="k")
    model = OpenAIChatModel("gpt-4o-mini", provider=provider)
    agent: Agent[None, str] = Agent(
        model,
        system_prompt=SYSTEM,
        capabilities=[history],
    )

    @agent.tool_plain
    def crossing(ferry: str) -> str:
        """The next crossing of a ferry."""
        n = int(ferry.split("-")[1])
        return f"ferry {ferry}: departs 14:05 UTC, skipper {SKIPPERS[n]}; " + "manifest " * 150

    return agent, provider


async def test_an_agent_outgrows_the_window_and_keeps_its_promises(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    history = LosslessHistory(model="openai/gpt-4o-mini", db=tmp_path / "p.db", config=_config())
    agent, provider = _agent(server, history)
    messages: list[Any] = []
    for n in range(12):
        server.enqueue(
            Reply(tool_calls=[ToolCallSpec("crossing", json.dumps({"ferry": f"F-{n}"}))]),
            Reply(text=f"Ferry F-{n} departs at 14:05 UTC."),
        )
        result = await agent.run(f"When does ferry F-{n} leave?", message_history=messages)
        messages = result.all_messages()
        if n == 0:
            session = await history.sessions.session("pydantic-ai", SYSTEM)
            await session.pin(PIN)
    requests = server.requests
    assert len(requests) == 24
    for request in requests[2:]:
        check_request(request["messages"])
        system = request["messages"][0]
        assert system["role"] == "system" and SYSTEM in system["content"]
        assert PIN in system["content"]
        assert count_tokens(json.dumps(request["messages"])) < _config().model.context_limit
    last = json.dumps(requests[-1]["messages"])
    assert "When does ferry F-11 leave?" in last
    assert "skipper arden" not in last, "the oldest results left the request"
    assert len(session.history()) == 12 * 3 - 1
    assert len(messages) == 12 * 4, "the run's own history keeps every message"
    server.enqueue(
        Reply(tool_calls=[ToolCallSpec("lossless_grep", json.dumps({"query": "arden"}))]),
        Reply(text="Skipper arden."),
    )
    await agent.run("Who skippered ferry F-0?", message_history=messages)
    answer = server.requests[-1]["messages"][-1]
    assert answer["role"] == "tool" and "arden" in answer["content"]
    await history.aclose()
    await provider.client.close()


async def test_an_image_reaches_the_model_and_is_stored_once(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    """A user prompt's image goes to the session as an image and to the model as
    ``image_url``, across turns, stored once."""
    history = LosslessHistory(model="openai/gpt-4o-mini", db=tmp_path / "p.db", config=_config())
    agent, provider = _agent(server, history)
    shot = screenshot(64, 64, seed=3)
    server.enqueue(Reply(text="A harbour chart."), Reply(text="Yes, the same chart."))
    prompt = ["What does this chart show?", BinaryContent(shot, media_type="image/png")]
    first = await agent.run(prompt)
    await agent.run("Is it the same chart?", message_history=first.all_messages())
    for request in server.requests:
        user = request["messages"][1]
        kinds = [block["type"] for block in user["content"]]
        assert kinds == ["text", "image_url"]
        assert user["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    session = await history.sessions.session("pydantic-ai", SYSTEM)
    media = [p for m in session.history() for p in m.parts if isinstance(p, MediaPart)]
    assert [(part.media_kind, part.width, part.height) for part in media] == [("image", 64, 64)]
    await history.aclose()
    await provider.client.close()


async def test_a_tools_image_is_kept_with_its_result(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    """A tool that returns an image: lossless stores it as part of that call's result,
    and the bounded request gives it back, so the next request still shows it."""
    history = LosslessHistory(model="openai/gpt-4o-mini", db=tmp_path / "p.db", config=_config())
    agent, provider = _agent(server, history)
    shot = screenshot(64, 64, seed=9)

    @agent.tool_plain
    def chart(ferry: str) -> BinaryContent:
        """The route chart of a ferry."""
        return BinaryContent(shot, media_type="image/png")

    server.enqueue(
        Reply(tool_calls=[ToolCallSpec("chart", json.dumps({"ferry": "F-1"}))]),
        Reply(text="It crosses the bay."),
    )
    await agent.run("Show me the route of F-1.")
    sent = server.requests[-1]["messages"]
    tool = next(message for message in sent if message["role"] == "tool")
    assert "See file" in tool["content"]
    images = [
        block["image_url"]["url"]
        for message in sent
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "image_url"
    ]
    assert images == ["data:image/png;base64," + base64.b64encode(shot).decode()]
    session = await history.sessions.session("pydantic-ai", SYSTEM)
    media = [p for m in session.history() for p in m.parts if isinstance(p, MediaPart)]
    assert [(part.media_kind, part.call_id) for part in media] == [("image", tool["tool_call_id"])]
    await history.aclose()
    await provider.client.close()


async def test_instructions_follow_the_lossless_system_message_unstored(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    """``instructions=`` are the agent's per-request text: PydanticAI sends them after
    the leading system message (lossless's: the system prompt and the pinned facts),
    and lossless does not store them, so changing them forks nothing."""
    history = LosslessHistory(model="openai/gpt-4o-mini", db=tmp_path / "p.db", config=_config())
    provider = OpenAIProvider(base_url=server.base_url, api_key="k")
    model = OpenAIChatModel("gpt-4o-mini", provider=provider)
    server.enqueue(Reply(text="Noted."), Reply(text="Noted."))
    messages: list[Any] = []
    for n in range(2):
        agent: Agent[None, str] = Agent(
            model,
            system_prompt=SYSTEM,
            instructions=f"Answer briefly ({n}).",
            capabilities=[history],
        )
        messages = (await agent.run(f"Note {n}.", message_history=messages)).all_messages()
        if n == 0:
            session = await history.sessions.session("pydantic-ai", SYSTEM)
            await session.pin(PIN)
    first, second = server.requests[1]["messages"][:2]
    assert first["role"] == "system" and SYSTEM in first["content"] and PIN in first["content"]
    assert second == {"role": "system", "content": "Answer briefly (1)."}
    stored = json.dumps([message.text for message in session.history()])
    assert "Answer briefly" not in stored and session.parent_id is None
    await history.aclose()
    await provider.client.close()


async def test_parallel_calls_and_a_retry_are_stored_once_without_a_fork(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    """Two calls in one response, one answered by ``ModelRetry``: the results go back
    in one request, and the next turn's history extends what is stored (no fork)."""
    history = LosslessHistory(model="openai/gpt-4o-mini", db=tmp_path / "p.db", config=_config())
    agent, provider = _agent(server, history)

    @agent.tool_plain
    def berth(ferry: str) -> str:
        """The berth of a ferry."""
        if ferry != "F-2":
            raise ModelRetry("berths are known for F-2 only")
        return "berth 4"

    both = [
        ToolCallSpec("crossing", json.dumps({"ferry": "F-1"})),
        ToolCallSpec("berth", json.dumps({"ferry": "F-1"})),
    ]
    server.enqueue(Reply(tool_calls=both), Reply(text="F-1 leaves at 14:05."))
    first = await agent.run("Tell me about F-1.")
    server.enqueue(Reply(text="Noted."))
    second = await agent.run("Thanks.", message_history=first.all_messages())
    results = server.requests[1]["messages"][-2:]
    assert [message["role"] for message in results] == ["tool", "tool"]
    assert "F-2 only" in results[1]["content"]
    session = await history.sessions.session("pydantic-ai", SYSTEM)
    assert session.parent_id is None
    # User, the calls with their results, the answer, the user again: each once (the
    # last answer is stored when the next model call hands it over).
    roles = [message.role for message in session.history()]
    assert roles == ["user", "assistant", "assistant", "user"]
    assert len(second.all_messages()) == 6
    await history.aclose()
    await provider.client.close()


async def test_audio_is_refused_before_anything_is_sent(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    """Content lossless cannot store raises a typed error; nothing reaches the model."""
    history = LosslessHistory(model="openai/gpt-4o-mini", db=tmp_path / "p.db", config=_config())
    agent, provider = _agent(server, history)
    with pytest.raises(InvalidInputError, match="audio/wav"):
        await agent.run(
            ["Transcribe this.", BinaryContent(b"RIFF0000WAVE", media_type="audio/wav")]
        )
    assert server.requests == []
    await history.aclose()
    await provider.client.close()


async def test_recall_reads_the_calling_runs_conversation(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    """One capability serves two conversations (key from the run's deps): each run's
    recall tools search its own, whichever conversation called the model last."""
    history = LosslessHistory(
        model="openai/gpt-4o-mini",
        db=tmp_path / "p.db",
        config=_config(),
        key=lambda ctx: str(ctx.deps),
    )
    provider = OpenAIProvider(base_url=server.base_url, api_key="k")
    model = OpenAIChatModel("gpt-4o-mini", provider=provider)
    agent: Agent[str, str] = Agent(model, deps_type=str, capabilities=[history])
    server.enqueue(Reply(text="Noted."), Reply(text="Noted."))
    north = await agent.run("The north pier code is heron.", deps="north")
    south = await agent.run("The south pier code is puffin.", deps="south")
    grep = Reply(tool_calls=[ToolCallSpec("lossless_grep", json.dumps({"query": "pier code"}))])
    server.enqueue(grep, grep, Reply(text="Done."), Reply(text="Done."))
    async with anyio.create_task_group() as runs:  # both model calls before either tool
        for deps, run in (("north", north), ("south", south)):
            ask = functools.partial(agent.run, message_history=run.all_messages(), deps=deps)
            runs.start_soon(ask, "What is the pier code?")
    answers = [r["messages"] for r in server.requests if r["messages"][-1]["role"] == "tool"]
    assert len(answers) == 2
    for messages in answers:
        told = json.dumps(messages[:-1])
        own, other = ("heron", "puffin") if "code is heron" in told else ("puffin", "heron")
        assert own in messages[-1]["content"] and other not in messages[-1]["content"]
    await history.aclose()
    await provider.client.close()


def test_the_example_runs_offline() -> None:
    """``examples/pydantic_ai_agent.py`` runs against the local server: it outgrows its
    window, keeps the pinned fact and recalls an early one."""
    example = Path(__file__).parent.parent / "examples" / "pydantic_ai_agent.py"
    done = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=120, check=True
    )
    assert "the run's history holds 48 messages" in done.stdout
    assert "the pinned fact in every request: True" in done.stdout
    assert "recalled through lossless_grep: True" in done.stdout
