"""PydanticAI's ``Agent`` with ``LosslessHistory`` among its capabilities: a
multi-turn, tool-using conversation against the project's local server outgrows a
small window; every request keeps the system prompt and the pinned fact, stays
bounded, and an early fact comes back through the recall tools."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from lossless import count_tokens
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.integrations.pydantic_ai import LosslessHistory
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec
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
    return Config(
        model=ModelConfig(context_limit=4_000, max_output_tokens=300),
        compaction=CompactionConfig(output_budget=0),
    )


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


def test_the_example_runs_offline() -> None:
    """``examples/pydantic_ai_agent.py`` runs against the local server, outgrowing its window."""
    example = Path(__file__).parent.parent / "examples" / "pydantic_ai_agent.py"
    done = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=120, check=True
    )
    assert "the run's history holds 48 messages" in done.stdout
