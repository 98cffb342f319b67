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

from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.integrations.langchain import LosslessMiddleware
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

CONFIG = Config(
    model=ModelConfig(context_limit=4_000, max_output_tokens=300),
    compaction=CompactionConfig(output_budget=0),
)


@tool
def count_bin(bin_id: str) -> str:
    """Counts the units in a bin."""
    return f"bin {bin_id}: 48 units; " + "scan " * 400


async def main() -> None:
    db = Path(tempfile.mkdtemp()) / "langchain.db"
    middleware = LosslessMiddleware(model="openai/gpt-4o-mini", db=db, config=CONFIG)
    with LocalLLMServer() as server:
        model = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="sk-local")
        agent = create_agent(
            model,
            tools=[count_bin],
            system_prompt="You keep the inventory.",
            middleware=[middleware],
        )
        state: dict[str, Any] = {"messages": []}
        for n in range(12):
            server.enqueue(
                Reply(tool_calls=[ToolCallSpec("count_bin", json.dumps({"bin_id": f"B-{n}"}))]),
                Reply(text=f"Bin B-{n} holds 48 units."),
            )
            state["messages"].append({"role": "user", "content": f"How many units in B-{n}?"})
            state = await agent.ainvoke(state, config={"configurable": {"thread_id": "inv"}})
        sent = server.requests[-1]["messages"]
        print(
            f"the agent's state holds {len(state['messages'])} messages; the model got {len(sent)}"
        )
    await middleware.aclose()


if __name__ == "__main__":
    anyio.run(main)
