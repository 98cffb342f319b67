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

from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.integrations.pydantic_ai import LosslessHistory
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

CONFIG = Config(
    model=ModelConfig(context_limit=4_000, max_output_tokens=300),
    compaction=CompactionConfig(output_budget=0),
)


async def main() -> None:
    db = Path(tempfile.mkdtemp()) / "pydantic_ai.db"
    history = LosslessHistory(model="openai/gpt-4o-mini", db=db, config=CONFIG, key="ferries")
    with LocalLLMServer() as server:
        model = OpenAIChatModel(
            "gpt-4o-mini", provider=OpenAIProvider(base_url=server.base_url, api_key="sk-local")
        )
        agent: Agent[None, str] = Agent(
            model, system_prompt="You schedule the ferries.", capabilities=[history]
        )

        @agent.tool_plain
        def crossing(ferry: str) -> str:
            """The next crossing of a ferry."""
            return f"ferry {ferry}: departs 14:05 UTC; " + "manifest " * 400

        messages: list[Any] = []
        for n in range(12):
            server.enqueue(
                Reply(tool_calls=[ToolCallSpec("crossing", json.dumps({"ferry": f"F-{n}"}))]),
                Reply(text=f"F-{n} departs at 14:05 UTC."),
            )
            result = await agent.run(f"When does F-{n} leave?", message_history=messages)
            messages = result.all_messages()
        sent = server.requests[-1]["messages"]
        print(f"the run's history holds {len(messages)} messages; the model got {len(sent)}")
    await history.aclose()


if __name__ == "__main__":
    anyio.run(main)
