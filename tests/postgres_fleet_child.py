"""One worker of a fleet sharing sessions on a PostgreSQL server.

Usage: ``python postgres_fleet_child.py URL CONFIG_JSON MODEL SEED ROUNDS SESSION_ID...``.
In each round the worker picks up every session in a seeded order, as any worker of
a fleet may: it loads the session, records a user turn and a tool call with its
result, sometimes compacts it by hand (a small context limit has background rounds
run as well), and closes it. Each write the library acknowledged is printed as
``ack MESSAGE_ID`` or ``done CALL_ID`` once the call returned; a failed compaction as
``failed REASON``; any error as ``error TYPE: MESSAGE`` before exiting with status 3;
``finished`` at the end.
"""

from __future__ import annotations

import os
import random
import sys

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import anyio

from lossless import Session, ToolPart
from lossless.config import Config

WORDS = ["ledger", "payout", "refund", "invoice", "retry", "webhook", "settle", "batch"]


def say(line: str) -> None:
    print(line, flush=True)


def prose(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


async def work_on(session_id: str, url: str, config: Config, rng: random.Random, turn: str) -> None:
    async with await Session.load(session_id, db=url, config=config) as session:
        result = await session.record("user", f"{turn}: {prose(rng, 20, 120)}")
        say(f"ack {result.message_id}")
        call_id = f"call_{turn}"
        part = ToolPart("read_file", call_id, {"turn": turn}, status="running")
        result = await session.record("assistant", [part])
        say(f"ack {result.message_id}")
        await session.update_tool(call_id, status="completed", output=prose(rng, 100, 400))
        say(f"done {call_id}")
        if rng.random() < 0.3:
            compacted = await session.compact()
            if compacted.status == "failed":
                say(f"failed {compacted.error}")


async def main() -> None:
    url, config_json, _model, seed, rounds, *session_ids = sys.argv[1:]
    config = Config.model_validate_json(config_json)
    rng = random.Random(int(seed))
    say("started")
    try:
        for round_index in range(int(rounds)):
            order = list(session_ids)
            rng.shuffle(order)
            for session_id in order:
                turn = f"w{seed}_r{round_index}_{session_id[-6:]}"
                await work_on(session_id, url, config, rng, turn)
    except Exception as err:
        say(f"error {type(err).__name__}: {err}")
        sys.exit(3)
    say("finished")


if __name__ == "__main__":
    anyio.run(main)
