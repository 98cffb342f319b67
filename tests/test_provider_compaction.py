"""A provider's own compaction beside lossless's: Anthropic's compaction block is
stored verbatim as a part of the reply that carries it, goes back to Anthropic as
it requires (litellm's ``compaction_blocks``, first in its turn), stands in for the
messages before it, which stay stored and searchable, and goes to another provider
only as its readable summary. Through litellm against the local server, which
signs the blocks it returns and refuses one sent back changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lossless import ProviderCompactionPart, ReasoningPart, TextPart, ToolPart
from lossless.config import CompactionConfig, Config, LLMConfig, ModelConfig
from lossless.errors import InvalidInputError
from lossless.recall import grep
from lossless.session import Session
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends, pytest.mark.timeout(120)]

CLAUDE = "anthropic/claude-sonnet-4-5"
PROVIDER_COMPACTION = {
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "context_management": {"edits": [{"type": "compact_20260112"}]},
}
SUMMARY = "Earlier: the ledger modules were read; module 3 is unbalanced."
READ = {
    "type": "function",
    "function": {
        "name": "read",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}


def config(api_base: str, params: dict[str, Any], **sections: Any) -> Config:
    return Config(
        model=ModelConfig(context_limit=32_000, max_output_tokens=2_048, profile="default"),
        llm=LLMConfig(api_base=api_base, api_key="test", num_retries=0, params=params),
        **sections,
    )


def read(path: str) -> ToolCallSpec:
    return ToolCallSpec("read", {"path": path})


def refusals(server: LocalLLMServer) -> list[str]:
    return [request.refusal for request in server.recorded if request.refusal is not None]


async def test_anthropic_s_block_is_kept_sent_back_and_stands_in(database: Path | str) -> None:
    with LocalLLMServer() as server:
        server.enqueue(
            Reply(reasoning="Start with module 1.", tool_calls=[read("ledger/module_1.py")]),
            Reply(
                compaction=SUMMARY,
                reasoning="Now module 4.",
                tool_calls=[read("ledger/module_4.py")],
            ),
            Reply(reasoning="Done.", text="Module 3 is the one."),
        )
        # lossless's own compaction off: the provider's block stands in.
        cfg = config(
            server.anthropic_base_url,
            PROVIDER_COMPACTION,
            compaction=CompactionConfig(enabled=False),
        )
        async with Session.open(model=CLAUDE, db=database, config=cfg) as session:
            first = await session.send("Audit the ledger modules.", tools=[READ])
            await session.update_tool(first.tool_calls[0].call_id, status="completed", output="a")
            second = await session.respond(tools=[READ])
            turn = session.history()[-1]
            block = turn.parts[0]
            assert isinstance(block, ProviderCompactionPart)
            assert (block.provider, block.text) == ("anthropic", SUMMARY)
            assert isinstance(block.payload, str)
            assert json.loads(block.payload)["content"] == SUMMARY
            assert isinstance(turn.parts[1], ReasoningPart)
            await session.update_tool(second.tool_calls[0].call_id, status="completed", output="b")
            assert (await session.respond(tools=[READ])).text == "Module 3 is the one."
            # What the block stands for is still stored, and found.
            assert len(session.history()) == 4
            assert len(grep("module_1", session=session)) >= 1
        assert refusals(server) == []
        last = server.requests_to("anthropic")[-1]["messages"]
        assistants = [m for m in last if m["role"] == "assistant"]
        # The first step's turn is left out: the block stands in for it.
        assert len(assistants) == 1
        content = assistants[0]["content"]
        assert [b["type"] for b in content] == ["compaction", "thinking", "tool_use"]
        assert content[0]["content"] == SUMMARY
        assert last[0]["role"] == "user"


async def test_record_messages_keeps_the_block_and_refuses_a_bad_one(
    database: Path | str,
) -> None:
    block = {"type": "compaction", "content": SUMMARY, "signature": "c2ln"}
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Audit the ledger."},
        {
            "role": "assistant",
            "content": "Reading module 4.",
            "provider_specific_fields": {"compaction_blocks": [block]},
        },
    ]
    cfg = config("http://127.0.0.1:9", {})
    async with Session.open(model=CLAUDE, db=database, config=cfg) as session:
        bad = {
            **history[1],
            "provider_specific_fields": {"compaction_blocks": [{"type": "compaction"}]},
        }
        with pytest.raises(InvalidInputError, match=r"messages\[1\]\.provider_specific_fields"):
            await session.record_messages([history[0], bad])
        assert session.history() == []
        await session.record_messages(history)
        parts = session.history()[-1].parts
        assert isinstance(parts[0], ProviderCompactionPart) and parts[1] == TextPart(
            "Reading module 4."
        )
        messages = session.build_context().messages
    import litellm

    request = litellm.AnthropicConfig().transform_request(
        model="claude-sonnet-4-5",
        messages=messages,
        optional_params={"max_tokens": 1_000},
        litellm_params={},
        headers={},
    )
    (assistant,) = [m for m in request["messages"] if m["role"] == "assistant"]
    assert assistant["content"][0] == block


async def test_another_provider_gets_the_summary_as_text_or_nothing(
    database: Path | str,
) -> None:
    signed = {"type": "compaction", "content": SUMMARY, "signature": "c2ln"}
    encrypted = {"id": "cmp_1", "type": "compaction", "encrypted_content": "gAAAAB"}
    cfg = config("http://127.0.0.1:9", {})
    async with Session.open(model="openai/gpt-4o", db=database, config=cfg) as session:
        await session.record("user", "Audit the ledger.")
        await session.record(
            "assistant",
            [
                ProviderCompactionPart("anthropic", signed, SUMMARY),
                ProviderCompactionPart("openai-responses", encrypted),
                TextPart("Reading module 4."),
                ToolPart("read", "c1", '{"path": "m4.py"}', "ok"),
            ],
        )
        messages = session.build_context().messages
    (assistant,) = [m for m in messages if m["role"] == "assistant"]
    assert SUMMARY in assistant["content"] and "c2ln" not in json.dumps(messages)
    assert "gAAAAB" not in json.dumps(messages)
    assert "provider_specific_fields" not in assistant


async def test_the_server_refuses_a_block_sent_back_changed(database: Path | str) -> None:
    """The server's check the other tests rely on: a compaction block must come back
    as the provider issued it, and only with compaction on."""
    import litellm

    with LocalLLMServer() as server:
        server.enqueue(Reply(compaction=SUMMARY, reasoning="Go on.", tool_calls=[read("a.py")]))
        cfg = config(server.anthropic_base_url, PROVIDER_COMPACTION)
        async with Session.open(model=CLAUDE, db=database, config=cfg) as session:
            first = await session.send("Audit the ledger.", tools=[READ])
            await session.update_tool(first.tool_calls[0].call_id, status="completed", output="a")
            messages = session.build_context(tools=[READ]).messages
        (turn,) = [m for m in messages if m.get("provider_specific_fields")]
        turn["provider_specific_fields"]["compaction_blocks"][0]["content"] = "Something else."
        call: dict[str, Any] = {
            "model": CLAUDE,
            "messages": messages,
            "tools": [READ],
            "api_base": server.anthropic_base_url,
            "api_key": "test",
            "max_tokens": 2_048,
            "num_retries": 0,
        }
        with pytest.raises(litellm.BadRequestError, match="Invalid `signature` in `compaction`"):
            await litellm.acompletion(**call, **PROVIDER_COMPACTION)
        turn["provider_specific_fields"]["compaction_blocks"][0]["content"] = SUMMARY
        only_thinking = {"thinking": PROVIDER_COMPACTION["thinking"]}
        with pytest.raises(litellm.BadRequestError, match="require `context_management`"):
            await litellm.acompletion(**call, **only_thinking)
