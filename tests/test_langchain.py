"""LangChain's own agent (``create_agent``) with ``LosslessMiddleware``: a multi-turn,
tool-using conversation against the project's local server outgrows a small window;
every request keeps the system prompt and the pinned fact, stays bounded, and an
early fact comes back through the recall tools."""

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

pytest.importorskip("langchain")

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from lossless import count_tokens
from lossless.config import Config
from lossless.errors import InvalidInputError
from lossless.integrations.langchain import LosslessMiddleware
from lossless.parts import MediaPart
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec, screenshot, small_window
from lossless.testing.conformance import check_request

pytestmark = pytest.mark.anyio

SYSTEM = "You keep the warehouse inventory."
PIN = "Counts are whole units; never estimate."
BINS = [
    "aster",
    "bramble",
    "clover",
    "dahlia",
    "elder",
    "fennel",
    "gorse",
    "heather",
    "iris",
    "jasmine",
    "kale",
    "lupin",
    "mallow",
    "nettle",
]


@tool
def count_bin(bin_id: str) -> str:
    """Counts the units in a bin."""
    n = int(bin_id.split("-")[1])
    return f"bin {bin_id}: 48 units, sealed by {BINS[n]}; " + "scan " * 150


def _config() -> Config:
    return small_window()


def _agent(server: LocalLLMServer, middleware: LosslessMiddleware) -> tuple[Any, ChatOpenAI]:
    model = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="k", max_retries=0)
    agent = create_agent(model, tools=[count_bin], system_prompt=SYSTEM, middleware=[middleware])
    return agent, model


async def _turn(server: LocalLLMServer, agent: Any, state: dict[str, Any], n: int) -> None:
    server.enqueue(
        Reply(tool_calls=[ToolCallSpec("count_bin", json.dumps({"bin_id": f"B-{n}"}))]),
        Reply(text=f"Bin B-{n} holds 48 units."),
    )
    state["messages"].append({"role": "user", "content": f"How many units in bin B-{n}?"})
    result = await agent.ainvoke(state, config={"configurable": {"thread_id": "inv-1"}})
    state["messages"] = result["messages"]


async def test_an_agent_outgrows_the_window_and_keeps_its_promises(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    middleware = LosslessMiddleware(
        model="openai/gpt-4o-mini", db=tmp_path / "l.db", config=_config()
    )
    agent, model = _agent(server, middleware)
    state: dict[str, Any] = {"messages": []}
    await _turn(server, agent, state, 0)
    session = await middleware.sessions.session("inv-1", SYSTEM)
    await session.pin(PIN)
    for n in range(1, 12):
        await _turn(server, agent, state, n)
    requests = server.requests
    assert len(requests) == 24
    for request in requests[2:]:
        check_request(request["messages"])
        system = request["messages"][0]
        assert system["role"] == "system" and SYSTEM in system["content"]
        assert PIN in system["content"]
        assert count_tokens(json.dumps(request["messages"])) < _config().model.context_limit
    last = json.dumps(requests[-1]["messages"])
    assert "How many units in bin B-11?" in last
    assert "sealed by aster" not in last, "the oldest results left the request"
    # The agent's state keeps everything; the session stored each message once (all
    # but the last answer, which the next model call hands over).
    assert len(state["messages"]) == 12 * 4
    assert len(session.history()) == 12 * 3 - 1
    # The recall tools: the model asks for an early fact and gets it.
    server.enqueue(
        Reply(tool_calls=[ToolCallSpec("lossless_grep", json.dumps({"query": "aster"}))]),
        Reply(text="Sealed by aster."),
    )
    state["messages"].append({"role": "user", "content": "Who sealed bin B-0?"})
    await agent.ainvoke(state, config={"configurable": {"thread_id": "inv-1"}})
    answer = server.requests[-1]["messages"][-1]
    assert answer["role"] == "tool" and "aster" in answer["content"]
    await middleware.aclose()
    await model.root_async_client.close()


async def test_an_image_reaches_the_model_and_is_stored_once(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    """A human message's image goes to the session as an image and to the model as
    ``image_url``, on every call of the thread (``ainvoke``, then ``astream``),
    stored once."""
    middleware = LosslessMiddleware(
        model="openai/gpt-4o-mini", db=tmp_path / "l.db", config=_config()
    )
    agent, model = _agent(server, middleware)
    url = "data:image/png;base64," + base64.b64encode(screenshot(64, 64, seed=5)).decode()
    image = {"type": "image_url", "image_url": {"url": url}}
    ask = {"role": "user", "content": [{"type": "text", "text": "Which bin is this?"}, image]}
    server.enqueue(Reply(text="Bin B-3."), Reply(text="Yes."))
    thread = {"configurable": {"thread_id": "photo"}}
    state = await agent.ainvoke({"messages": [ask]}, config=thread)
    state["messages"].append({"role": "user", "content": "Sure?"})
    async for _ in agent.astream(state, config=thread):  # the streaming runner too
        pass
    assert len(server.requests) == 2
    for request in server.requests:
        user = request["messages"][1]
        assert [block["type"] for block in user["content"]] == ["text", "image_url"]
        assert user["content"][1]["image_url"]["url"] == url
    session = await middleware.sessions.session("photo", SYSTEM)
    media = [p for m in session.history() for p in m.parts if isinstance(p, MediaPart)]
    assert [(part.media_kind, part.width) for part in media] == [("image", 64)]
    await middleware.aclose()
    await model.root_async_client.close()


async def test_audio_is_refused_before_anything_is_sent(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    """Content lossless cannot store raises a typed error; nothing reaches the model."""
    middleware = LosslessMiddleware(
        model="openai/gpt-4o-mini", db=tmp_path / "l.db", config=_config()
    )
    agent, model = _agent(server, middleware)
    audio = {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
    ask = {"role": "user", "content": [{"type": "text", "text": "Transcribe this."}, audio]}
    with pytest.raises(InvalidInputError, match="input_audio"):
        await agent.ainvoke({"messages": [ask]}, config={"configurable": {"thread_id": "a"}})
    assert server.requests == []
    await middleware.aclose()
    await model.root_async_client.close()


async def test_a_tools_image_is_kept_with_its_result(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    """A tool whose result holds an image: lossless stores it as part of that call's
    result and the next model call of the run still carries it."""
    middleware = LosslessMiddleware(
        model="openai/gpt-4o-mini", db=tmp_path / "l.db", config=_config()
    )
    url = "data:image/png;base64," + base64.b64encode(screenshot(64, 64, seed=7)).decode()

    @tool
    def photo_bin(bin_id: str) -> list[dict[str, Any]]:
        """A photo of a bin."""
        return [
            {"type": "text", "text": f"bin {bin_id}"},
            {"type": "image_url", "image_url": {"url": url}},
        ]

    model = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="k", max_retries=0)
    agent = create_agent(model, tools=[photo_bin], system_prompt=SYSTEM, middleware=[middleware])
    server.enqueue(
        Reply(tool_calls=[ToolCallSpec("photo_bin", json.dumps({"bin_id": "B-2"}))]),
        Reply(text="Bin B-2 is full."),
    )
    ask = {"messages": [{"role": "user", "content": "Show me bin B-2."}]}
    await agent.ainvoke(ask, config={"configurable": {"thread_id": "photos"}})
    # Chat Completions takes no image in a tool message: lossless's request names it
    # in the result and sends it in the user message that follows (decision 211).
    *_, result, follow = server.requests[-1]["messages"]
    assert result["role"] == "tool" and "[image image_" in result["content"]
    assert follow["role"] == "user" and follow["content"][1]["image_url"]["url"] == url
    session = await middleware.sessions.session("photos", SYSTEM)
    media = [p for m in session.history() for p in m.parts if isinstance(p, MediaPart)]
    assert [(part.media_kind, part.call_id) for part in media] == [
        ("image", result["tool_call_id"])
    ]
    await middleware.aclose()
    await model.root_async_client.close()


async def test_recall_reads_the_calling_threads_conversation(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    """One middleware serves two threads: each thread's recall tools search its own
    conversation, whichever thread called the model last."""
    middleware = LosslessMiddleware(
        model="openai/gpt-4o-mini", db=tmp_path / "l.db", config=_config()
    )
    agent, model = _agent(server, middleware)
    states: dict[str, Any] = {}
    server.enqueue(Reply(text="Noted."), Reply(text="Noted."))
    for thread, code in (("north", "heron"), ("south", "puffin")):
        told = {"messages": [{"role": "user", "content": f"The {thread} dock code is {code}."}]}
        states[thread] = await agent.ainvoke(told, config={"configurable": {"thread_id": thread}})
    grep = Reply(tool_calls=[ToolCallSpec("lossless_grep", json.dumps({"query": "dock code"}))])
    server.enqueue(grep, grep, Reply(text="Done."), Reply(text="Done."))
    async with anyio.create_task_group() as runs:  # both model calls before either tool
        for thread, state in states.items():
            state["messages"].append({"role": "user", "content": "What is the dock code?"})
            thread_config = {"configurable": {"thread_id": thread}}
            runs.start_soon(functools.partial(agent.ainvoke, state, config=thread_config))
    answers = [r["messages"] for r in server.requests if r["messages"][-1]["role"] == "tool"]
    assert len(answers) == 2
    for messages in answers:
        told = json.dumps(messages[:-1])
        own, other = ("heron", "puffin") if "code is heron" in told else ("puffin", "heron")
        assert own in messages[-1]["content"] and other not in messages[-1]["content"]
    await middleware.aclose()
    await model.root_async_client.close()


def test_the_example_runs_offline() -> None:
    """``examples/langchain_agent.py`` runs against the local server: it outgrows its
    window, keeps the pinned fact and recalls an early one."""
    example = Path(__file__).parent.parent / "examples" / "langchain_agent.py"
    done = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=120, check=True
    )
    assert "the agent's state holds 48 messages" in done.stdout
    assert "the pinned fact in every request: True" in done.stdout
    assert "recalled through lossless_grep: True" in done.stdout
