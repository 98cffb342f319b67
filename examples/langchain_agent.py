"""A LangChain agent whose model calls get lossless's bounded request.

The model is the project's local test server on 127.0.0.1 (no network, no key); use
``ChatOpenAI(model="gpt-4o")`` for OpenAI.

    pip install 'lossless[langchain]' langchain-openai
    python examples/langchain_agent.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from lossless.integrations.langchain import LosslessMiddleware
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec, small_window

CONFIG = small_window()


SYSTEM = "You keep the inventory."
PIN = "Counts are whole units; never estimate."
# Who sealed each bin: the early ones leave the request, and the agent recalls them.
SEALERS = [
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
]


@tool
def count_bin(bin_id: str) -> str:
    """Counts the units in a bin."""
    n = int(bin_id.split("-")[1])
    return f"bin {bin_id}: 48 units, sealed by {SEALERS[n]}; " + "scan " * 400


THREAD: Any = {"configurable": {"thread_id": "inv"}}


async def main() -> None:
    db = Path(tempfile.mkdtemp()) / "langchain.db"
    middleware = LosslessMiddleware(model="openai/gpt-4o-mini", db=db, config=CONFIG)
    with LocalLLMServer() as server:
        model = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="sk-local")
        agent = create_agent(
            model,
            tools=[count_bin],
            system_prompt=SYSTEM,
            middleware=[middleware],
        )
        state: dict[str, Any] = {"messages": []}
        for n in range(12):
            server.enqueue(
                Reply(tool_calls=[ToolCallSpec("count_bin", json.dumps({"bin_id": f"B-{n}"}))]),
                Reply(text=f"Bin B-{n} holds 48 units."),
            )
            state["messages"].append({"role": "user", "content": f"How many units in B-{n}?"})
            state = await agent.ainvoke(state, config=THREAD)
            if n == 0:  # the thread's lossless session: pin a fact every request keeps
                session = await middleware.sessions.session("inv", SYSTEM)
                await session.pin(PIN)
        sent = server.requests[-1]["messages"]
        print(
            f"the agent's state holds {len(state['messages'])} messages; the model got {len(sent)}"
        )
        print(
            "the pinned fact in every request:",
            all(PIN in r["messages"][0]["content"] for r in server.requests[2:]),
        )
        # The model asks lossless's recall tools for what left its window.
        server.enqueue(
            Reply(tool_calls=[ToolCallSpec("lossless_grep", json.dumps({"query": "aster"}))]),
            Reply(text="Bin B-0 was sealed by aster."),
        )
        state["messages"].append({"role": "user", "content": "Who sealed bin B-0?"})
        state = await agent.ainvoke(state, config=THREAD)
        recalled = server.requests[-1]["messages"][-1]["content"]
        print("recalled through lossless_grep:", "aster" in recalled)
    await middleware.aclose()


if __name__ == "__main__":
    anyio.run(main)
