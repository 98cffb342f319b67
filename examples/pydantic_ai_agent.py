"""A PydanticAI agent whose model requests get lossless's bounded request.

The model is the project's local test server on 127.0.0.1 (no network, no key); use
``Agent("openai:gpt-4o", ...)`` for OpenAI.

    pip install 'lossless[pydantic-ai]' 'pydantic-ai-slim[openai]'
    python examples/pydantic_ai_agent.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from lossless.integrations.pydantic_ai import LosslessHistory
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec, small_window

CONFIG = small_window()


SYSTEM = "You schedule the ferries."
PIN = "Times are in UTC; never round them."
# The skipper of each ferry: the early ones leave the request, and the agent recalls them.
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
]


async def main() -> None:
    db = Path(tempfile.mkdtemp()) / "pydantic_ai.db"
    history = LosslessHistory(model="openai/gpt-4o-mini", db=db, config=CONFIG, key="ferries")
    with LocalLLMServer() as server:
        model = OpenAIChatModel(
            "gpt-4o-mini", provider=OpenAIProvider(base_url=server.base_url, api_key="sk-local")
        )
        agent: Agent[None, str] = Agent(model, system_prompt=SYSTEM, capabilities=[history])

        @agent.tool_plain
        def crossing(ferry: str) -> str:
            """The next crossing of a ferry."""
            skipper = SKIPPERS[int(ferry.split("-")[1])]
            return f"ferry {ferry}: departs 14:05 UTC, skipper {skipper}; " + "manifest " * 400

        messages: list[Any] = []
        for n in range(12):
            server.enqueue(
                Reply(tool_calls=[ToolCallSpec("crossing", json.dumps({"ferry": f"F-{n}"}))]),
                Reply(text=f"F-{n} departs at 14:05 UTC."),
            )
            result = await agent.run(f"When does F-{n} leave?", message_history=messages)
            messages = result.all_messages()
            if n == 0:  # the conversation's lossless session: pin a fact every request keeps
                session = await history.sessions.session("ferries", SYSTEM)
                await session.pin(PIN)
        sent = server.requests[-1]["messages"]
        print(f"the run's history holds {len(messages)} messages; the model got {len(sent)}")
        print(
            "the pinned fact in every request:",
            all(PIN in r["messages"][0]["content"] for r in server.requests[2:]),
        )
        # The model asks lossless's recall tools for what left its window.
        server.enqueue(
            Reply(tool_calls=[ToolCallSpec("lossless_grep", json.dumps({"query": "arden"}))]),
            Reply(text="Ferry F-0's skipper was arden."),
        )
        await agent.run("Who skippered F-0?", message_history=messages)
        recalled = server.requests[-1]["messages"][-1]["content"]
        print("recalled through lossless_grep:", "arden" in recalled)
    await history.aclose()


if __name__ == "__main__":
    anyio.run(main)
