"""A process the crash tests kill at random moments.

Usage: ``python crash_child.py DB SESSION_ID|- CONFIG_JSON MODEL SEED STREAM``.
It opens (or creates) the session and works until killed: records user turns and
tool calls, updates calls, compacts, and (with STREAM=1) streams replies. Each write
the library acknowledged is printed as ``ack MESSAGE_ID`` once the call returned;
while a reply streams, ``chars N`` says how much of it has arrived.
"""

from __future__ import annotations

import os
import random
import sys

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import anyio

from lossless import Session, TextPart, ToolPart
from lossless.config import Config

WORDS = [
    "ledger",
    "payout",
    "refund",
    "invoice",
    "retry",
    "webhook",
    "settle",
    "batch",
    "merchant",
    "account",
]


def say(line: str) -> None:
    print(line, flush=True)


def prose(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


async def step(session: Session, rng: random.Random, index: int, stream: bool) -> None:
    choice = rng.random()
    if stream and index == 0:
        choice = 1.0  # a streaming child streams first
    if choice < 0.35:
        result = await session.record("user", f"turn {index}: {prose(rng, 5, 80)}")
        say(f"ack {result.message_id}")
    elif choice < 0.8:
        call_id = f"c{os.getpid()}_{index}"
        part = ToolPart("read_file", call_id, {"n": index}, status="running")
        result = await session.record("assistant", [part])
        say(f"ack {result.message_id}")
        await session.update_tool(call_id, status="completed", output=prose(rng, 50, 900))
        say(f"done {call_id}")
    elif choice < 0.9 or not stream:
        result = await session.compact()
        say(f"compacted {result.status}")
    else:
        streamed: list[str] = []

        def report(part: object) -> None:
            if isinstance(part, TextPart):
                streamed.append(part.text)
                say(f"chars {sum(map(len, streamed))}")

        reply = await session.send(f"question {index}", on_part=report)
        say(f"ack {reply.message_id}")


async def main() -> None:
    db, session_id, config_json, model, seed, stream = sys.argv[1:7]
    config = Config.model_validate_json(config_json)
    rng = random.Random(int(seed))
    if session_id == "-":
        session = await Session.create(model=model, db=db, config=config)
    else:
        session = await Session.load(session_id, db=db, config=config)
    say(f"session {session.id}")
    async with session:
        for index in range(1_000_000):
            await step(session, rng, index, stream == "1")


if __name__ == "__main__":
    anyio.run(main)
