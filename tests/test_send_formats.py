"""``send`` end to end in each wire format a session's model may be served in,
through litellm against the local server, which checks every request the way the
provider does: Anthropic Messages with extended thinking (signed and redacted
thinking, streamed, parallel calls), OpenAI's Responses API (litellm's
``openai/responses/<model>`` bridge, reasoning items with their encrypted
content), and a long tool run after one instruction, compacted under a small
budget, every request of which the provider would accept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lossless import ReasoningPart, TextPart, ToolPart
from lossless.config import CompactionConfig, Config, LLMConfig, ModelConfig
from lossless.events import EventName
from lossless.parts import Part
from lossless.session import Session
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.both_backends,
    pytest.mark.timeout(180),
    # litellm's logging of a streamed Responses call dumps a usage it rebuilt itself
    # into a field typed otherwise; pydantic warns about litellm's data.
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning"),
]

CLAUDE = "anthropic/claude-sonnet-4-5"
THINKING = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
RESPONSES = "openai/responses/gpt-5"
ENCRYPTED = {"reasoning_effort": "low", "include": ["reasoning.encrypted_content"], "store": False}
READ = {
    "type": "function",
    "function": {
        "name": "read",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}


def config(
    api_base: str, params: dict[str, Any], *, context_limit: int = 32_000, **sections: Any
) -> Config:
    return Config(
        model=ModelConfig(
            context_limit=context_limit,
            max_output_tokens=2_048,
            profile="default",
            token_correction=1.0,
        ),
        llm=LLMConfig(api_base=api_base, api_key="test", num_retries=0, params=params),
        **sections,
    )


def read(path: str) -> ToolCallSpec:
    return ToolCallSpec("read", {"path": path})


def refusals(server: LocalLLMServer) -> list[str]:
    return [request.refusal for request in server.recorded if request.refusal is not None]


async def answer(session: Session, calls: list[ToolPart], output: str = "x = 1") -> None:
    for call in calls:
        await session.update_tool(call.call_id, status="completed", output=output)


def thinking_of(part: Part) -> dict[str, Any]:
    assert isinstance(part, ReasoningPart) and part.payload is not None
    payload = part.payload
    return json.loads(payload) if isinstance(payload, str) else dict(payload)


async def test_anthropic_thinking_with_parallel_calls_goes_back_signed(
    database: Path | str,
) -> None:
    with LocalLLMServer() as server:
        server.enqueue(
            Reply(reasoning="Both files at once.", tool_calls=[read("a.py"), read("b.py")]),
            Reply(reasoning="Sealed.", reasoning_redacted=True, tool_calls=[read("c.py")]),
            Reply(reasoning="All read.", text="They agree."),
        )
        cfg = config(server.anthropic_base_url, THINKING)
        async with Session.open(model=CLAUDE, db=database, config=cfg) as session:
            handed: list[Part] = []
            first = await session.send("Compare the files.", tools=[READ], on_part=handed.append)
            assert [call.call_id for call in first.tool_calls] == ["toolu_1", "toolu_2"]
            (signed,) = first.reasoning
            assert thinking_of(signed)["thinking"] == "Both files at once."
            assert thinking_of(signed)["signature"]
            # The reasoning is handed over first, complete, then the calls.
            assert handed[0] == signed and handed[1:] == first.tool_calls
            await answer(session, first.tool_calls)
            second = await session.respond(tools=[READ])
            (redacted,) = second.reasoning
            assert redacted.text is None and thinking_of(redacted)["type"] == "redacted_thinking"
            await answer(session, second.tool_calls)
            last = await session.respond(tools=[READ])
            assert last.text == "They agree."
        assert refusals(server) == []
        sent = server.requests_to("anthropic")
        assert all(body["thinking"] == THINKING["thinking"] for body in sent)
        # The third request carries both loop turns' blocks, each first in its turn.
        turns = [m["content"] for m in sent[2]["messages"] if m["role"] == "assistant"]
        assert [turn[0]["type"] for turn in turns] == ["thinking", "redacted_thinking"]
        assert [block["type"] for block in turns[0][1:]] == ["tool_use", "tool_use"]


async def test_a_request_without_the_loop_s_thinking_is_refused_as_anthropic_does(
    database: Path | str,
) -> None:
    """The server's check is what the other tests rely on: the same loop sent
    without its thinking block is refused with Anthropic's error."""
    with LocalLLMServer() as server:
        server.enqueue(Reply(reasoning="Look first.", tool_calls=[read("a.py")]))
        cfg = config(server.anthropic_base_url, THINKING)
        async with Session.open(model=CLAUDE, db=database, config=cfg) as session:
            first = await session.send("Read a.py.", tools=[READ])
            await answer(session, first.tool_calls)
            messages = session.build_context(tools=[READ]).messages
        import litellm

        for message in messages:
            message.pop("thinking_blocks", None)
            message.pop("reasoning_content", None)
        with pytest.raises(litellm.BadRequestError, match="must start with a thinking block"):
            await litellm.acompletion(
                model=CLAUDE,
                messages=messages,
                tools=[READ],
                api_base=server.anthropic_base_url,
                api_key="test",
                max_tokens=2_048,
                num_retries=0,
                **THINKING,
            )


async def test_responses_reasoning_items_come_back_and_go_out_encrypted(
    database: Path | str,
) -> None:
    with LocalLLMServer() as server:
        server.enqueue(
            Reply(reasoning="Plan the reads.", tool_calls=[read("a.py"), read("b.py")]),
            Reply(reasoning="Opaque.", reasoning_redacted=True, tool_calls=[read("c.py")]),
            Reply(text="Done."),
        )
        cfg = config(server.base_url, ENCRYPTED)
        async with Session.open(model=RESPONSES, db=database, config=cfg) as session:
            first = await session.send("Read them.", tools=[READ])
            (item,) = first.reasoning
            assert (item.provider, item.text) == ("openai", "Plan the reads.")
            assert thinking_of(item)["type"] == "reasoning"
            await answer(session, first.tool_calls)
            second = await session.respond(tools=[READ])
            (opaque,) = second.reasoning
            assert opaque.text is None and thinking_of(opaque)["encrypted_content"]
            await answer(session, second.tool_calls)
            assert (await session.respond(tools=[READ])).text == "Done."
            # Stored as they came: the item reads back byte for byte as JSON.
            stored = [p for m in session.history() for p in m.parts if isinstance(p, ReasoningPart)]
            assert [thinking_of(p) for p in stored] == [thinking_of(item), thinking_of(opaque)]
        assert refusals(server) == []
        sent = server.requests_to("responses")
        replayed = [i for i in sent[2]["input"] if i.get("type") == "reasoning"]
        # The server verified each encrypted_content it issued, unchanged.
        assert [i["encrypted_content"] for i in replayed] == [
            thinking_of(item)["encrypted_content"],
            thinking_of(opaque)["encrypted_content"],
        ]


STEPS = 40


async def test_a_long_tool_run_under_a_small_budget_is_accepted_at_every_step(
    database: Path | str,
) -> None:
    """One instruction, forty steps of thinking and parallel calls, a window that
    holds a fraction of them: compaction runs, and every request still carries the
    loop's last thinking block first, so the provider accepts each one."""
    replies = [
        Reply(
            reasoning=f"Step {n}: the ledger entries of module {n} come next.",
            tool_calls=[read(f"ledger/module_{n}.py"), read(f"ledger/module_{n}_test.py")],
        )
        for n in range(STEPS)
    ]
    with LocalLLMServer() as server:
        server.enqueue(*replies, Reply(reasoning="Every module read.", text="Balanced."))
        cfg = config(
            server.anthropic_base_url,
            THINKING,
            context_limit=7_000,
            compaction=CompactionConfig(output_budget=1_000),
        )
        async with Session.open(model=CLAUDE, db=database, config=cfg) as session:
            completed = []
            session.events.subscribe(completed.append, EventName.COMPACTION_COMPLETED)
            result = await session.send("Audit every ledger module.", tools=[READ])
            steps = 0
            while result.tool_calls:
                output = f"def entry_{steps}():\n" + "    balance += 1\n" * 30
                await answer(session, result.tool_calls, output)
                result = await session.respond(tools=[READ])
                steps += 1
            assert (steps, result.text) == (STEPS, "Balanced.")
            assert completed, "the run never compacted"
            sent = server.requests_to("anthropic")
            assert len(sent) == STEPS + 1
            # Nothing was lost: every step's thinking is stored, and recall finds it.
            from lossless.recall import grep

            assert len(grep(r"Step 17: the", session=session, mode="regex")) == 1
        assert refusals(server) == []
        # The window held a fraction of the run: old steps were left to summaries.
        last = sent[-1]["messages"]
        assert sum(1 for m in last if m["role"] == "assistant") < STEPS
        assert last[-2]["content"][0]["type"] == "thinking"


async def test_readable_reasoning_alone_is_stored_and_handed_over(database: Path | str) -> None:
    """Chat Completions: a model that shows its reasoning as text only."""
    with LocalLLMServer() as server:
        server.enqueue(Reply(reasoning="Two and two.", text="4"))
        cfg = config(server.base_url, {})
        async with Session.open(model="openai/lossless-test", db=database, config=cfg) as s:
            handed: list[Part] = []
            result = await s.send("Sum 2 and 2.", on_part=handed.append)
            assert result.reasoning == [ReasoningPart("openai", "Two and two.")]
            assert handed[-1] == result.reasoning[0]
            assert TextPart("4") in handed


async def test_a_turn_repeating_a_call_goes_back_whole_with_its_thinking(
    database: Path | str,
) -> None:
    """Decision 35 splits a turn at a repeated identical call, for Gemini; a turn
    sent back with its thinking stays whole, or its second half would be the loop's
    last turn calling tools without thinking, which Anthropic refuses."""
    twice = [ToolCallSpec("ls", {}), ToolCallSpec("ls", {})]
    with LocalLLMServer() as server:
        server.enqueue(Reply(reasoning="List it twice.", tool_calls=twice), Reply(text="Same."))
        cfg = config(server.anthropic_base_url, THINKING)
        async with Session.open(model=CLAUDE, db=database, config=cfg) as session:
            first = await session.send("List the directory twice.", tools=[READ])
            await answer(session, first.tool_calls)
            messages = session.build_context(tools=[READ]).messages
            assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]
            assert len(messages[1]["tool_calls"]) == 2 and messages[1]["thinking_blocks"]
            assert (await session.respond(tools=[READ])).text == "Same."
        assert refusals(server) == []
        sent = server.requests_to("anthropic")[-1]["messages"]
        assert [block["type"] for block in sent[1]["content"]] == [
            "thinking",
            "tool_use",
            "tool_use",
        ]


async def test_elsewhere_a_repeated_call_still_starts_a_turn_of_its_own(
    database: Path | str,
) -> None:
    cfg = config("http://127.0.0.1:9", {})
    async with Session.open(model="gemini/gemini-2.5-pro", db=database, config=cfg) as session:
        signed = ReasoningPart(
            "anthropic",
            "List it twice.",
            {"type": "thinking", "thinking": "x", "signature": "c2ln"},
        )
        await session.record("user", "List the directory twice.")
        await session.record(
            "assistant",
            [signed, ToolPart("ls", "c1", "{}", "a.py"), ToolPart("ls", "c2", "{}", "a.py")],
        )
        messages = session.build_context().messages
        roles = [m["role"] for m in messages]
        assert roles == ["user", "assistant", "tool", "assistant", "tool"]
        assert not any("thinking_blocks" in m for m in messages)
