"""The own loop in another format, end to end: ``record_messages`` of what the
provider's SDK returned, ``context(format=...)`` unpacked into that SDK's call to the
local server, which checks each request as the provider would, over a long tool run
with reasoning and through compaction."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

from pathlib import Path
from typing import Any

import openai
import pytest

from lossless import Session
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

anthropic = pytest.importorskip("anthropic")

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends, pytest.mark.timeout(300)]

THINKING = {"type": "enabled", "budget_tokens": 1024}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
STEPS = 24
# Large enough results that the run compacts several times within the window.
OUTPUT = "line of a file that the agent read, " * 60


def config() -> Config:
    return Config(
        model=ModelConfig(context_limit=16_000, max_output_tokens=2_000, profile="default"),
        compaction=CompactionConfig(output_budget=1_000),
    )


def dumped(items: list[Any]) -> list[dict[str, Any]]:
    return [item.model_dump(exclude_none=True) for item in items]


def step_reply(step: int) -> Reply:
    return Reply(
        tool_calls=[ToolCallSpec("read", {"path": f"src/{step}.py"})],
        reasoning=f"Read src/{step}.py next.",
    )


async def test_an_anthropic_loop_runs_long_through_compaction(
    server: LocalLLMServer, db: Path | str
) -> None:
    client = anthropic.AsyncAnthropic(
        base_url=server.anthropic_base_url, api_key="test", max_retries=0
    )
    async with (
        client,
        Session.open(
            model="claude-sonnet-4-5", db=db, config=config(), system_prompt="You read code."
        ) as session,
    ):
        await session.record_messages(
            [{"role": "user", "content": [{"type": "text", "text": "Read every file."}]}],
            system="You read code.",
        )
        for step in range(STEPS):
            server.enqueue(step_reply(step))
            request = await session.context(format="anthropic", tools=TOOLS)
            response = await client.messages.create(
                model="claude-local", max_tokens=2_000, thinking=THINKING, **request
            )
            await session.report_usage(response.usage)
            [use] = [block for block in response.content if block.type == "tool_use"]
            assert response.content[0].type == "thinking"
            await session.record_messages(
                [
                    {"role": "assistant", "content": dumped(response.content)},
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": use.id, "content": OUTPUT}
                        ],
                    },
                ]
            )
            if step % 8 == 7:
                await session.compact()
        server.enqueue(Reply(text="Done."))
        request = await session.context(format="anthropic", tools=TOOLS)
        response = await client.messages.create(
            model="claude-local", max_tokens=2_000, thinking=THINKING, **request
        )
    assert response.content[-1].text == "Done."
    assert request.tokens <= request.budget
    assert request.messages[0]["content"][0]["text"].startswith(("[summary", "Read every"))
    assert any("[summary" in str(m["content"]) for m in request.messages)
    # Every request was answered: the server refused none.
    assert len(server.recorded) == STEPS + 1


async def test_a_responses_loop_runs_long_through_compaction(
    server: LocalLLMServer, db: Path | str
) -> None:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    async with (
        client,
        Session.open(
            model="gpt-5", db=db, config=config(), system_prompt="You read code."
        ) as session,
    ):
        await session.record_messages(
            [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "Read."}],
                }
            ]
        )
        for step in range(STEPS):
            server.enqueue(step_reply(step))
            request = await session.context(format="responses", tools=TOOLS)
            response = await client.responses.create(
                model="gpt-5", include=["reasoning.encrypted_content"], store=False, **request
            )
            await session.report_usage(response.usage)
            output = dumped(response.output)
            assert output[0]["type"] == "reasoning"
            [call] = [item for item in output if item["type"] == "function_call"]
            result = {"type": "function_call_output", "call_id": call["call_id"], "output": OUTPUT}
            await session.record_messages([*output, result])
            if step % 8 == 7:
                await session.compact()
        server.enqueue(Reply(text="Done."))
        request = await session.context(format="responses", tools=TOOLS)
        response = await client.responses.create(
            model="gpt-5", include=["reasoning.encrypted_content"], store=False, **request
        )
    assert response.output_text == "Done."
    assert request.tokens <= request.budget
    assert any("[summary" in str(item.get("content")) for item in request.input)
    # The loop's reasoning items go back before their calls.
    kinds = [item["type"] for item in request.input]
    assert "reasoning" in kinds
    assert kinds.index("reasoning") < kinds.index("function_call")
