"""An agent loop that calls its model itself and lets lossless keep its context.

Runs offline: the model is the project's local test server on 127.0.0.1, which asks
for a few tool calls and then answers. Point ``MODEL``, ``api_base`` and ``api_key``
at a real provider to run the same loop for real::

    .venv/bin/python examples/own_loop.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
import litellm

from lossless import Session, ToolPart
from lossless.config import Config, LLMConfig, ModelConfig
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

MODEL = "openai/example-model"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the repository.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]


def run_tool(name: str, arguments: str) -> str:
    """The agent's own tools: here, a file that reads as a few numbered lines."""
    path = json.loads(arguments)["path"]
    return "\n".join(f"{n:3d}  def handler_{n}(request): ...  # {path}" for n in range(40))


async def agent(api_base: str, db: Path) -> dict[str, Any]:
    config = Config(
        model=ModelConfig(context_limit=16_000, max_output_tokens=1_000),
        llm=LLMConfig(api_base=api_base, api_key="example"),
    )
    async with Session.open(
        model=MODEL, db=db, config=config, system_prompt="You migrate code to the new API."
    ) as session:
        await session.pin("Never deploy on Fridays.")
        await session.record(
            "user", "Migrate every module to the new API. Never touch legacy_billing/."
        )
        requests = 0
        while True:
            request = await session.context(tools=TOOLS)
            requests += 1
            response = await litellm.acompletion(
                model=MODEL,
                messages=request.messages,
                tools=TOOLS,
                api_base=api_base,
                api_key="example",
            )
            await session.report_usage(response.usage)
            message = response.choices[0].message
            calls = message.tool_calls or []
            parts: list[Any] = [message.content] if message.content else []
            parts += [
                ToolPart(c.function.name, c.id, c.function.arguments, status="pending")
                for c in calls
            ]
            await session.record("assistant", parts)
            if not calls:
                return {
                    "requests": requests,
                    "answer": message.content,
                    "last_request_tokens": request.tokens,
                    "repeated_tokens": request.stable_prefix_tokens,
                }
            for call in calls:
                output = run_tool(call.function.name, call.function.arguments)
                await session.update_tool(call.id, status="completed", output=output)


def main() -> None:
    with LocalLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        for step in range(3):
            call = ToolCallSpec("read_file", {"path": f"payhub/module_{step}.py"})
            server.enqueue(Reply(text="", tool_calls=[call]))
        server.enqueue(Reply(text="Three modules migrated; legacy_billing/ untouched."))
        outcome = anyio.run(agent, server.base_url, Path(tmp) / "agent.db")
    print(outcome)


if __name__ == "__main__":
    main()
