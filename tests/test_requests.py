"""Every assembled request is one every provider accepts, in the shapes agents really
produce: long tool runs after one instruction, calls left running, empty replies,
calls cut off by the output limit, repeated call ids. Judged by the conformance
checker, which runs the `openai` types and litellm's own provider transformations."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import TEST_MODEL
from lossless import Session, TextPart, ToolPart
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec
from lossless.testing.conformance import check_request

pytestmark = pytest.mark.anyio

INSTRUCTION = "Refactor the payout client; never touch legacy_billing/."
WORDS = [
    "payout",
    "ledger",
    "refund",
    "invoice",
    "src/payout/client.py",
    "retry",
    "webhook",
    "error",
    "passed",
]


def output(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def small_window(config_for: Callable[..., Config], limit: int = 9_000) -> Config:
    return config_for(
        model=ModelConfig(context_limit=limit, max_output_tokens=1_000),
        compaction=CompactionConfig(output_budget=1_000),
    )


async def check_turn(session: Session) -> list[dict[str, Any]]:
    """Waits for background compaction, then checks what the next request would send."""
    await session.compaction.wait_for_pending()
    result = session.compaction.last_result
    assert result is None or result.status != "stalled", result.reason
    assert session.view_tokens() <= session.budget.usable
    context = session.build_context()
    assert context.tokens <= context.budget
    check_request(context.messages)
    return context.messages


def visible(messages: list[dict[str, Any]], text: str) -> bool:
    return any(m["role"] == "user" and m.get("content") == text for m in messages)


async def test_a_long_tool_run_after_one_instruction_stays_sendable(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    rng = random.Random(7)
    async with await Session.create(
        model=TEST_MODEL, db=db, config=small_window(config_for), system_prompt="Be careful."
    ) as session:
        await session.record("user", INSTRUCTION)
        for call in range(60):
            part = ToolPart(
                "read_file",
                f"call_{call}",
                {"path": f"src/f{call}.py"},
                output=output(rng, rng.randint(200, 900)),
            )
            await session.record("assistant", [part])
            messages = await check_turn(session)
            assert visible(messages, INSTRUCTION), "the instruction stays verbatim"
        assert session.compaction.last_result is not None
        assert session.build_context().omitted == 0


async def test_a_call_left_running_does_not_freeze_compaction(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    rng = random.Random(3)
    async with await Session.create(
        model=TEST_MODEL, db=db, config=small_window(config_for)
    ) as session:
        await session.record("user", INSTRUCTION)
        server_call = ToolPart("dev_server", "call_srv", {"port": 8000}, status="running")
        await session.record("assistant", [server_call])
        for call in range(40):
            part = ToolPart("grep", f"call_{call}", {"q": "payout"}, output=output(rng, 600))
            await session.record("assistant", [part])
            messages = await check_turn(session)
        calls = [c["id"] for m in messages for c in m.get("tool_calls", [])]
        assert "call_srv" in calls, "the running call stays in the view"
        assert session.compaction.last_result is not None
        assert session.compaction.last_result.summary_ids


async def test_an_empty_model_reply_is_stored_and_sent_as_text(
    server: LocalLLMServer, session: Session
) -> None:
    server.enqueue(Reply(text=""))
    reply = await session.send("say nothing")
    assert reply.text == ""
    assert session.history()[-1].text == ""
    messages = await check_turn(session)
    assert messages[-1]["role"] == "assistant" and messages[-1]["content"].strip()


async def test_a_call_cut_off_by_the_output_limit_is_kept_whole_and_sent_valid(
    server: LocalLLMServer, session: Session
) -> None:
    cut = '{"path": "src/payout/cli'
    server.enqueue(Reply(tool_calls=[ToolCallSpec("read_file", cut)], finish_reason="length"))
    reply = await session.send("read the client")
    assert reply.finish_reason == "length"
    (call,) = reply.tool_calls
    assert call.input == cut
    stored = session.history()[-1].parts[0]
    assert isinstance(stored, ToolPart) and stored.input == cut
    messages = await check_turn(session)
    sent = messages[-2]["tool_calls"][0]
    assert json.loads(sent["function"]["arguments"]) == {}
    assert cut in messages[-1]["content"] and "not a JSON object" in messages[-1]["content"]
    await session.update_tool(call.call_id, status="error", error="arguments were cut off")
    await check_turn(session)


@pytest.mark.parametrize("arguments", ["[1, 2]", '"text"', "not json", '{"a": 1} trailing'])
async def test_recorded_arguments_that_are_not_an_object_are_sent_valid(
    session: Session, arguments: str
) -> None:
    await session.record("user", "go")
    await session.record("assistant", [ToolPart("run", "call_a", arguments, output="done")])
    messages = await check_turn(session)
    assert messages[-2]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert session.history()[-1].parts[0].input == arguments  # type: ignore[union-attr]


async def test_calls_the_server_sent_without_ids_get_unique_ids(
    server: LocalLLMServer, session: Session
) -> None:
    for turn in range(3):
        spec = ToolCallSpec("read_file", {"path": f"f{turn}.py"}, id="")
        server.enqueue(Reply(tool_calls=[spec, ToolCallSpec("grep", {"q": "x"}, id="")]))
        reply = await session.send(f"turn {turn}")
        for call in reply.tool_calls:
            await session.update_tool(call.call_id, status="completed", output="ok")
    ids = [p.call_id for m in session.history() for p in m.parts if isinstance(p, ToolPart)]
    assert len(ids) == len(set(ids)) == 6
    await check_turn(session)


async def test_repeated_call_ids_are_renamed_in_the_request_and_kept_in_the_store(
    session: Session,
) -> None:
    await session.record("user", "read both")
    for turn in range(3):
        parts = [ToolPart("read", "call_0", {"n": turn}, output=f"file {turn}")]
        if turn == 2:
            parts.append(ToolPart("read", "call_0", {"n": 9}, output="again"))
        await session.record("assistant", parts)
    messages = await check_turn(session)
    sent = [c["id"] for m in messages for c in m.get("tool_calls", [])]
    assert len(sent) == len(set(sent)) == 4
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert answered == sent
    results = [m["content"] for m in messages if m["role"] == "tool"]
    assert results == ["file 0", "file 1", "file 2", "again"]
    stored = [p.call_id for m in session.history() for p in m.parts if isinstance(p, ToolPart)]
    assert stored == ["call_0"] * 4


async def test_results_share_nothing_with_the_next_one(session: Session) -> None:
    await session.record("user", "go")
    await session.record(
        "assistant", [TextPart("reading"), ToolPart("read", "call_1", {"p": 1}, output="x")]
    )
    first = session.build_context().messages
    first[1]["tool_calls"][0]["function"]["arguments"] = "changed"
    first[1]["tool_calls"][0]["id"] = "changed"
    first[1]["tool_calls"].append({"id": "extra"})
    first[1]["content"] = "changed"
    second = session.build_context().messages
    assert second[1]["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"p": 1}'}}
    ]
    assert second[1]["content"] == "reading"


async def test_a_conversation_opened_by_the_assistant_opens_with_a_user_marker(
    session: Session,
) -> None:
    await session.record("assistant", "Hello! What shall we build today?")
    messages = await check_turn(session)
    assert messages[0]["role"] == "user"
    assert messages[1] == {"role": "assistant", "content": "Hello! What shall we build today?"}
    assert session.build_context().item_ids == [session.history()[0].id]


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
async def test_recorded_blank_texts_are_sent_as_placeholders(session: Session, text: str) -> None:
    await session.record("user", text)
    await session.record("assistant", text)
    await session.record("assistant", [TextPart(text), ToolPart("ls", "call_1", {}, output=text)])
    messages = await check_turn(session)
    assert all((m.get("content") or "x").strip() for m in messages)
    assert [m.text for m in session.history()] == [text, text, text]


async def test_five_hundred_tool_calls_with_default_windows(db: Path) -> None:
    """One instruction, then 500 tool calls with outputs of 1-20 KB, on the default
    configuration of a model from litellm's map: the view stays within budget at
    every step, the instruction stays visible, and every request is valid."""
    rng = random.Random(500)
    worst = 0.0
    async with await Session.create(model="gpt-4o", db=db, config=Config()) as session:
        await session.record("user", INSTRUCTION)
        for call in range(500):
            size = rng.randint(1_000, 20_000)
            text = output(rng, size // 8)[:size]
            part = ToolPart("read_file", f"call_{call}", {"path": f"src/m{call}.py"}, output=text)
            await session.record("assistant", [part])
            messages = await check_turn(session)
            assert visible(messages, INSTRUCTION)
            worst = max(worst, session.view_tokens() / session.budget.usable)
        assert worst <= 1.0


async def test_identical_parallel_calls_go_out_in_messages_of_their_own(session: Session) -> None:
    # Gemini's format has no call ids: litellm merges identical parallel calls into
    # one, leaving two results for it, and Gemini refuses that.
    await session.record("user", "check twice")
    same = {"path": "src/a.py"}
    await session.record(
        "assistant",
        [
            TextPart("reading"),
            ToolPart("read", "call_1", same, output="one"),
            ToolPart("read", "call_2", same, output="two"),
            ToolPart("grep", "call_3", {"q": "x"}, output="three"),
        ],
    )
    messages = await check_turn(session)
    shape = [(m["role"], [c["id"] for c in m.get("tool_calls", [])]) for m in messages[1:]]
    assert shape == [
        ("assistant", ["call_1"]),
        ("tool", []),
        ("assistant", ["call_2", "call_3"]),
        ("tool", []),
        ("tool", []),
    ]
    assert messages[1]["content"] == "reading" and messages[3]["content"] is None


async def test_a_large_output_beside_a_running_call_is_pruned_not_stalled(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    # The running call keeps its whole message out of every summary; the finished
    # output beside it is tombstoned, however little that saves.
    rng = random.Random(1)
    config = config_for(
        model=ModelConfig(context_limit=3_000, max_output_tokens=1_000),
        compaction=CompactionConfig(output_budget=1_000),
    )
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        await session.record("user", "build and test")
        await session.record(
            "assistant",
            [
                ToolPart("read_file", "call_1", {"path": "a.py"}, output=output(rng, 900)),
                ToolPart("bash", "call_2", {"cmd": "make serve"}, status="running"),
            ],
        )
        for _ in range(3):
            await session.record("user", output(rng, 40))
            await session.record("assistant", output(rng, 40))
            messages = await check_turn(session)
        assert session.build_context().omitted == 0
        assert "pruned from context" in messages[2]["content"]


async def test_the_same_view_gives_the_same_ids_in_every_process(
    config_for: Callable[..., Config], db: Path
) -> None:
    from lossless import Store

    config = config_for(
        model=ModelConfig(context_limit=3_000, max_output_tokens=500),
        compaction=CompactionConfig(output_budget=0, enabled=False),
    )
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        await session.record("user", "go")
        await session.record("assistant", [ToolPart("read", "call_1", {}, output="big " * 900)])
        await session.record("assistant", [ToolPart("read", "call_1", {"n": 2}, output="short")])
        ids = [c["id"] for m in session.build_context().messages for c in m.get("tool_calls", [])]
        assert ids == ["call_1", "call_1_2"]
        await session.record("user", "more " * 1_500)
        context = session.build_context()
        fresh = Store(db).assemble(session.id, session.budget.usable)[0]
        assert context.messages == fresh
        ids = [c["id"] for m in fresh for c in m.get("tool_calls", [])]
        assert ids == ["call_1"], "the first use of an id keeps it"


async def test_tool_definitions_take_their_share_of_the_window(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    from lossless.tokens import count_tokens

    tools = [
        {
            "type": "function",
            "function": {
                "name": f"tool_{n}",
                "description": "Reads a file of the repository and returns its text. " * 40,
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
        for n in range(6)
    ]
    # No compaction: the view outgrows the budget, and assembly fills what it can.
    config = config_for(
        model=ModelConfig(context_limit=12_000, max_output_tokens=1_000, token_correction=1.0),
        compaction=CompactionConfig(output_budget=1_000, enabled=False),
    )
    rng = random.Random(5)
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        for turn in range(40):
            await session.record("user", f"turn {turn}: " + output(rng, 120))
            await session.record("assistant", output(rng, 120))
        plain = session.build_context()
        with_tools = session.build_context(tools=tools)
        tool_tokens = count_tokens(json.dumps(tools, separators=(",", ":")), model=TEST_MODEL)
        assert with_tools.tokens <= with_tools.budget == plain.budget
        assert with_tools.omitted > plain.omitted
        history = with_tools.tokens - tool_tokens
        assert history <= session.budget.usable - tool_tokens
        server.enqueue(Reply(text="ok"))
        await session.send("which tool?", tools=tools)
        request = server.requests[-1]
        assert len(request["tools"]) == 6
        check_request(request["messages"])
