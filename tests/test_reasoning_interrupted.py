"""Reasoning that arrived before a reply was cut short is kept: a stream that
breaks, and a turn cancelled while it streams, store what was complete, signed
blocks whole, with the incomplete reply. Through litellm's Anthropic client
against the local server's Messages endpoint."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from lossless import ReasoningPart, TextPart
from lossless.config import Config, LLMConfig, ModelConfig
from lossless.errors import LLMError
from lossless.parts import Part
from lossless.session import Session
from lossless.testing import LocalLLMServer, Reply

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends, pytest.mark.timeout(60)]

CLAUDE = "anthropic/claude-sonnet-4-5"
REASONING = "The ledger comes first."


def config(server: LocalLLMServer) -> Config:
    return Config(
        model=ModelConfig(context_limit=32_000, max_output_tokens=2_048, profile="default"),
        llm=LLMConfig(
            api_base=server.anthropic_base_url,
            api_key="test",
            num_retries=1,
            retry_backoff_s=0.01,
            params={"thinking": {"type": "enabled", "budget_tokens": 1024}},
        ),
    )


def signed(part: Part) -> dict[str, str]:
    assert isinstance(part, ReasoningPart) and isinstance(part.payload, str)
    block: dict[str, str] = json.loads(part.payload)
    assert block["type"] == "thinking" and block["signature"]
    return block


# The thinking block streams as five events (its start, its text in two pieces, its
# signature, its stop); the text block's start and first piece follow.
@pytest.mark.parametrize(("events", "text"), [(5, ""), (7, "It balances")])
async def test_a_stream_that_breaks_keeps_the_reasoning_that_came(
    database: Path | str, events: int, text: str
) -> None:
    with LocalLLMServer() as server:
        server.enqueue(
            Reply(
                reasoning=REASONING,
                text="It balances, said the clerk.",
                disconnect_after_chunks=events,
            )
        )
        async with Session.open(model=CLAUDE, db=database, config=config(server)) as session:
            with pytest.raises(LLMError):
                await session.send("Settle the ledger.")
            reply = session.history()[-1]
        # Reasoning counts as content arrived: the call is not made again.
        assert len(server.requests_to("anthropic")) == 1
        assert (reply.role, reply.status) == ("assistant", "incomplete")
        assert signed(reply.parts[0])["thinking"] == REASONING
        assert reply.text.startswith(text)


async def test_a_cancelled_turn_keeps_the_reasoning_that_came(database: Path | str) -> None:
    with LocalLLMServer() as server:
        server.enqueue(Reply(reasoning=REASONING, text="It balances " * 40, chunk_delay_s=0.05))
        async with Session.open(model=CLAUDE, db=database, config=config(server)) as session:
            handed: list[Part] = []
            with anyio.CancelScope() as scope:

                def cancel_once_reasoned(part: Part) -> None:
                    handed.append(part)
                    if isinstance(part, TextPart):
                        scope.cancel()

                await session.send("Settle the ledger.", on_part=cancel_once_reasoned)
            assert scope.cancelled_caught
            reply = session.history()[-1]
        assert (reply.role, reply.status) == ("assistant", "incomplete")
        assert isinstance(handed[0], ReasoningPart)
        assert signed(reply.parts[0]) == signed_payload(handed[0])
        assert reply.text.startswith("It balances")


def signed_payload(part: Part) -> dict[str, str]:
    assert isinstance(part, ReasoningPart) and isinstance(part.payload, dict)
    return dict(part.payload)
