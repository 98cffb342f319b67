"""The OpenAI Agents SDK with lossless as its session memory.

The model is the project's local test server on 127.0.0.1 (no network, no key); use
``OpenAIResponsesModel(model="gpt-4o", openai_client=AsyncOpenAI())`` for OpenAI.

    pip install 'lossless[openai-agents]'
    python examples/openai_agents_session.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import anyio
from agents import (
    Agent,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from lossless.integrations.openai_agents import LosslessSession
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec, small_window

# A small window, so the conversation outgrows it within the example.
CONFIG = small_window()


@function_tool
def ledger_balance(account: str) -> str:
    """The balance of an account."""
    return f"account {account}: 1204 cents; " + "entry " * 400


async def main() -> None:
    set_tracing_disabled(True)
    db = Path(tempfile.mkdtemp()) / "agents.db"
    with LocalLLMServer() as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="sk-local")
        async with LosslessSession(
            "books", model="openai/gpt-4o-mini", db=db, config=CONFIG
        ) as session:
            await (await session.session()).pin("Amounts are integers in cents.")
            agent = Agent(
                name="bookkeeper",
                instructions="You keep the ledger.",
                model=OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client),
                tools=[ledger_balance, *session.recall_tools()],
            )
            for n in range(12):
                server.enqueue(
                    Reply(
                        tool_calls=[
                            ToolCallSpec("ledger_balance", json.dumps({"account": f"A-{n}"}))
                        ]
                    ),
                    Reply(text=f"A-{n} holds 1204 cents."),
                )
                result = await Runner.run(
                    agent,
                    f"What does A-{n} hold?",
                    session=session,
                    # Every model call of the run gets the bounded context.
                    run_config=RunConfig(call_model_input_filter=session.bound_model_input),
                )
            items = await session.get_items()
            stored = (await session.session()).history()
            print(f"last answer: {result.final_output}")
            print(f"{len(stored)} turns stored; the next run starts from {len(items)} items")
            # A-0's result left the context; the recall tools read it back.
            server.enqueue(
                Reply(tool_calls=[ToolCallSpec("lossless_grep", json.dumps({"query": "A-0"}))]),
                Reply(text="A-0 holds 1204 cents."),
            )
            await Runner.run(agent, "What did A-0 hold?", session=session)
            found = json.loads(server.requests_to("responses")[-1]["input"][-1]["output"])
            print(f"lossless_grep found {len(found['hits'])} places holding A-0")
            stored = (await session.session()).history()
        # The same id, in a new object (or another process), opens the same history.
        # (Its context may hold one summary more: compaction finishes as a session closes.)
        async with LosslessSession(
            "books", model="openai/gpt-4o-mini", db=db, config=CONFIG
        ) as again:
            same = (await again.session()).history() == stored
            print(f"reopened by its id: {'the same' if same else 'another'} history")


if __name__ == "__main__":
    anyio.run(main)
