"""A request in each format from a 1,000-message view: ``build_context(format=...)``.

The Chat Completions output reuses its Python dicts across assemblies (the render
cache); the Anthropic and Responses outputs are converted in the core and built
afresh on every call. Target: under 5 ms each; the ratio to the Chat Completions
output is reported beside it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import median
from lossless import Session
from lossless.config import Config, ModelConfig

MESSAGES = 1_000


def history() -> list[dict[str, Any]]:
    """A tool run of 1,000 chat messages: user turns, assistant turns with a call
    each, and their results."""
    messages: list[dict[str, Any]] = []
    step = 0
    while len(messages) < MESSAGES:
        messages.append({"role": "user", "content": f"Look at module {step} and fix its tests."})
        arguments = json.dumps({"path": f"src/module_{step}.py"})
        call = {
            "id": f"call_{step}",
            "type": "function",
            "function": {"name": "read_file", "arguments": arguments},
        }
        messages.append(
            {"role": "assistant", "content": f"Reading module {step}.", "tool_calls": [call]}
        )
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"call_{step}",
                "content": "def f():\n    return 1\n" * 8,
            }
        )
        messages.append({"role": "assistant", "content": f"Module {step} is fine."})
        step += 1
    return messages[:MESSAGES]


@pytest.mark.benchmark(group="formats")
@pytest.mark.parametrize("name", ["openai", "anthropic", "responses"])
def test_a_request_in_each_format(benchmark: Any, record: Any, tmp_path: Path, name: str) -> None:
    config = Config(model=ModelConfig(context_limit=1_000_000, max_output_tokens=16_000))

    async def run() -> None:
        async with Session.open(
            model="claude-sonnet-4-5", db=tmp_path / "f.db", config=config
        ) as session:
            await session.record_messages(history())
            context = session.build_context(format=name)  # type: ignore[call-overload]
            assert len(context.item_ids) == MESSAGES * 3 // 4  # results fold into their calls
            result = benchmark(session.build_context, format=name)
            assert result.item_ids == context.item_ids

    anyio.run(run)
    extra: dict[str, Any] = {"view_messages": MESSAGES}
    baseline = median("format openai n=1,000")
    if name != "openai" and baseline and benchmark.enabled and benchmark.stats is not None:
        extra["ratio_to_openai"] = round(benchmark.stats.stats.median / baseline, 2)
    record(benchmark, f"format {name} n=1,000", target="<= 5 ms", **extra)
