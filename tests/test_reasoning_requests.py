"""Reasoning recorded from OpenAI-format messages goes back where the provider
requires it: the last assistant turn of a tool loop starts with its thinking
blocks, unchanged, once litellm's Anthropic transformation made the request;
older turns and other providers get none."""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lossless import Part, ReasoningPart, Store, TextPart, ToolPart
from lossless.config import Config, ModelConfig
from lossless.errors import InvalidInputError
from lossless.session import Session

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

CLAUDE = "anthropic/claude-sonnet-4-5"
FIRST = {"type": "thinking", "thinking": "Read the README first.", "signature": "U0lHMQ=="}
SECOND = {"type": "thinking", "thinking": "It is a ledger.", "signature": "U0lHMg=="}
THIRD = {"type": "thinking", "thinking": "Now setup.py, said the wombat.", "signature": "U0lHMw=="}
REDACTED = {"type": "redacted_thinking", "data": "UkVEQUNURUQ0"}


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "What does README.md say?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("toolu_1", "read", '{"path": "README.md"}')],
        "thinking_blocks": [FIRST],
        "reasoning_content": FIRST["thinking"],
    },
    {"role": "tool", "tool_call_id": "toolu_1", "content": "# Ledger"},
    {"role": "assistant", "content": "A ledger.", "thinking_blocks": [SECOND]},
    {"role": "user", "content": "And setup.py?"},
    {
        "role": "assistant",
        "content": "Reading it.",
        "tool_calls": [call("toolu_2", "read", '{"path": "setup.py"}')],
        "thinking_blocks": [THIRD, REDACTED],
        "reasoning_content": THIRD["thinking"],
    },
    {"role": "tool", "tool_call_id": "toolu_2", "content": "setup()"},
]


@pytest.fixture
def config() -> Config:
    return Config(
        model=ModelConfig(context_limit=32_000, max_output_tokens=1_000, profile="default")
    )


@pytest.fixture
async def claude(config: Config, db: Path) -> AsyncIterator[Session]:
    async with Session.open(model=CLAUDE, db=db, config=config) as opened:
        yield opened


def anthropic_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages of the request litellm's Anthropic transformation makes, offline."""
    import litellm

    request = litellm.AnthropicConfig().transform_request(
        model="claude-sonnet-4-5",
        messages=messages,
        optional_params={"max_tokens": 1_000},
        litellm_params={},
        headers={},
    )
    return list(request["messages"])


def blocks_of(turn: dict[str, Any]) -> list[dict[str, Any]]:
    return [block for block in turn["content"] if "thinking" in block["type"]]


async def test_the_last_tool_turn_starts_with_its_blocks_unchanged(claude: Session) -> None:
    await claude.record_messages(HISTORY)
    messages = claude.build_context().messages
    turns = [turn for turn in anthropic_messages(messages) if turn["role"] == "assistant"]
    assert len(turns) == 3
    last = turns[-1]
    assert last["content"][:2] == [THIRD, REDACTED]
    assert [block["type"] for block in last["content"][2:]] == ["text", "tool_use"]
    # The turns before the newest user message go without theirs.
    assert blocks_of(turns[0]) == [] and blocks_of(turns[1]) == []
    sent = [message for message in messages if message.get("thinking_blocks")]
    assert len(sent) == 1
    assert sent[0]["reasoning_content"] == THIRD["thinking"]


async def test_the_blocks_are_stored_in_order_before_the_turn_s_text(claude: Session) -> None:
    await claude.record_messages(HISTORY)
    turn = claude.history()[-1]
    kinds = [type(part).__name__ for part in turn.parts]
    assert kinds == ["ReasoningPart", "ReasoningPart", "TextPart", "ToolPart"]
    third, redacted = turn.parts[0], turn.parts[1]
    assert isinstance(third, ReasoningPart) and isinstance(redacted, ReasoningPart)
    assert (third.provider, third.text) == ("anthropic", THIRD["thinking"])
    assert redacted.text is None
    assert isinstance(third.payload, str) and json.loads(third.payload) == THIRD
    assert list(json.loads(third.payload)) == ["type", "thinking", "signature"]


async def test_readable_reasoning_alone_is_kept_and_never_sent(claude: Session) -> None:
    await claude.record_messages(
        [
            {"role": "user", "content": "Sum 2 and 2."},
            {"role": "assistant", "content": "4", "reasoning_content": "Two and two."},
        ]
    )
    (reasoning, text) = claude.history()[-1].parts
    assert reasoning == ReasoningPart("anthropic", "Two and two.")
    assert text == TextPart("4")
    assert not any("thinking_blocks" in m for m in claude.build_context().messages)


async def test_an_unsigned_thinking_block_is_refused_and_nothing_is_stored(
    claude: Session,
) -> None:
    unsigned = {"type": "thinking", "thinking": "Read the README first."}
    bad = [HISTORY[0], {**HISTORY[1], "thinking_blocks": [unsigned]}, HISTORY[2]]
    with pytest.raises(InvalidInputError, match=r"messages\[1\]\.thinking_blocks\[0\]\.signature"):
        await claude.record_messages(bad)
    assert claude.history() == []


async def test_a_session_of_another_provider_never_gets_anthropic_blocks(
    config: Config, db: Path
) -> None:
    async with Session.open(model="openai/gpt-4o", db=db, config=config) as session:
        await session.record("user", "What does README.md say?")
        signed = ReasoningPart("anthropic", FIRST["thinking"], FIRST)
        read = ToolPart("read", "call_1", '{"path": "README.md"}', status="pending")
        await session.record("assistant", [signed, TextPart("Reading."), read])
        # Its own reasoning, readable only: kept, and no input any provider takes.
        await session.record_messages(
            [{"role": "assistant", "content": "Done.", "reasoning_content": "All read."}]
        )
        assert session.history()[-1].parts[0] == ReasoningPart("openai", "All read.")
        messages = session.build_context().messages
        assert not any("thinking_blocks" in message for message in messages)
        assert not any("reasoning_content" in message for message in messages)


async def test_search_finds_the_reasoning_and_never_the_signature(claude: Session) -> None:
    from lossless.recall import grep

    await claude.record_messages(HISTORY)
    assert len(grep("wombat", session=claude)) == 1
    for secret in ["U0lHMw", "UkVEQUNURUQ0", "signature"]:
        assert grep(secret, session=claude) == []
        assert grep(secret, session=claude, mode="regex") == []


# One turn of a random session: a user turn (its words), or an assistant turn with
# a block of each provider listed before its call.
_TURNS = st.lists(
    st.one_of(
        st.integers(1, 40),
        st.lists(st.sampled_from(["anthropic", "bedrock"]), max_size=3),
    ),
    min_size=1,
    max_size=16,
)


@settings(max_examples=40, deadline=None)
@given(turns=_TURNS, budget=st.integers(60, 3_000))
def test_every_request_sends_the_loop_s_blocks_in_order_within_its_budget(
    turns: list[int | list[str]], budget: int
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        store = Store(Path(directory) / "reasoning.db")
        session = store.create_session(CLAUDE)
        expected: dict[str, list[dict[str, Any]]] = {}
        for n, turn in enumerate(turns):
            if isinstance(turn, int):
                store.append(session, "user", " ".join(["ledger"] * turn))
                expected.clear()
                continue
            blocks = [
                {"type": "thinking", "thinking": f"step {n}.{k}", "signature": f"c2ln{n}{k}"}
                for k in range(len(turn))
            ]
            parts: list[Part] = [
                ReasoningPart(provider, block["thinking"], block)
                for provider, block in zip(turn, blocks, strict=True)
            ]
            parts.append(ToolPart("read", f"call_{n}", "{}", output=f"line {n}"))
            store.append(session, "assistant", parts)
            expected[f"call_{n}"] = [
                block
                for provider, block in zip(turn, blocks, strict=True)
                if provider == "anthropic"
            ]
        messages, tokens, _, _ = store.assemble(session, budget)
        if store.view_stats(session).instruction_tokens + 32 <= budget:
            assert tokens <= budget
        for message in messages:
            if message["role"] != "assistant":
                assert "thinking_blocks" not in message
                continue
            call_id = message["tool_calls"][0]["id"]
            assert message.get("thinking_blocks", []) == expected.get(call_id, [])
