"""A client that sends its whole history every time, through ``lossless proxy``.

The upstream is the project's local test server on 127.0.0.1 (no network, no key);
point ``upstream`` at a real provider's base URL to use one. The client is the
official ``openai`` SDK, unchanged but for its ``base_url``.

    python examples/proxy_client.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
import openai

from lossless import Session
from lossless.proxy import LosslessProxy
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec, small_window

SYSTEM = "You are the build agent. Never push to main."
# A small window, so that the history outgrows it within the example.
CONFIG = small_window()


async def main() -> None:
    db = Path(tempfile.mkdtemp()) / "proxy.db"
    with LocalLLMServer() as upstream:
        async with (
            LosslessProxy(upstream=upstream.base_url, db=db, config=CONFIG, port=0) as proxy,
            openai.AsyncOpenAI(
                base_url=proxy.url,
                api_key="sk-local",
                default_headers={"X-Lossless-Session": "build"},
            ) as client,
        ):
            messages: list[Any] = [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": "Make every billing test pass."},
            ]
            for step in range(20):
                upstream.enqueue(
                    Reply(tool_calls=[ToolCallSpec("run_tests", json.dumps({"n": step}))])
                )
                reply = await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
                message = reply.choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                output = f"run {step}: 41 passed, 1 failed " + "log " * 200
                messages.append(
                    {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": output}
                )
            sent = upstream.requests[-1]["messages"]
            print(f"the client holds {len(messages)} messages; the upstream got {len(sent)}")
    async with Session.open(
        model="openai/gpt-4o-mini", db=db, config=CONFIG, system_prompt=SYSTEM, key="build"
    ) as session:
        print(f"session {session.id} stores {len(session.history())} turns, each once")


if __name__ == "__main__":
    anyio.run(main)
