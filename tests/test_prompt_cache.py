"""Prompt-cache-stable requests through the public API and the local server: each
request repeats the previous one's opening, the figures every turn and compaction
report, and the optional cache breakpoints."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TEST_MODEL
from lossless import Session
from lossless.compaction import prompts
from lossless.config import CompactionConfig, Config
from lossless.events import Event, EventName
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

pytestmark = pytest.mark.anyio

_step = st.tuples(
    st.sampled_from(["send", "tool_loop", "failure", "task", "record"]),
    st.text(alphabet="abcdefgh ", min_size=1, max_size=40).filter(str.strip),
    st.integers(min_value=1, max_value=400),
)


async def _run_steps(
    server: LocalLLMServer, session: Session, steps: list[tuple[str, str, int]]
) -> None:
    """Drives ``session`` through ``steps``: questions, tool loops (the model calls a
    tool, its result is stored, the model is asked again), failed tools, task
    changes and turns recorded from elsewhere."""
    for turn, (kind, words, size) in enumerate(steps):
        if kind == "task":
            await session.set_task(f"task {words}")
        elif kind == "record":
            await session.record("user", f"note {turn}: {words}")
        if kind in ("tool_loop", "failure"):
            call = ToolCallSpec("grep", {"pattern": words}, id=f"call_{turn}")
            server.enqueue(Reply(tool_calls=[call]), Reply(text=f"done {turn}"))
            result = await session.send(f"look for {words}")
            status = "error" if kind == "failure" else "completed"
            output = f"{words} " * size
            await session.update_tool(
                result.tool_calls[0].call_id, status=status, output=output, error=None
            )
            await session.respond()
        else:
            server.enqueue(Reply(text=f"reply {turn}"))
            await session.send(f"question {turn}: {words}")


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(_step, min_size=2, max_size=7))
def test_without_compaction_each_request_begins_with_the_last_one_up_to_its_newest_user_turn(
    server: LocalLLMServer, config_for: Callable[..., Config], steps: list[tuple[str, str, int]]
) -> None:
    config = config_for(compaction=CompactionConfig(enabled=False, output_budget=1_000))

    async def run() -> list[int]:
        server.reset()
        prefixes: list[int] = []
        with tempfile.TemporaryDirectory() as tmp:
            async with Session.open(
                model=TEST_MODEL, db=Path(tmp) / "cache.db", config=config, system_prompt="be brief"
            ) as s:
                s.events.subscribe(
                    lambda event: (
                        prefixes.append(event.payload["stable_prefix_tokens"])
                        if event.payload.get("role") == "assistant"
                        else None
                    ),
                    EventName.MESSAGE_CREATED,
                )
                await _run_steps(server, s, steps)
        return prefixes

    stable = anyio.run(run)
    reports = server.prefixes
    assert len(reports) == len(stable) >= 2
    assert all(report.extends_previous for report in reports)
    # The session's own count agrees: every request after the first repeats at least
    # the system message and the previous request's first user message.
    assert stable[0] == 0 and all(tokens > 0 for tokens in stable[1:])


async def test_each_turn_reports_its_stable_prefix_and_the_providers_cached_tokens(
    config_for: Callable[..., Config], db: Path
) -> None:
    async with LocalLLMServer(report_cached_tokens=True) as server:
        config = config_for(llm_overrides={"api_base": server.base_url})
        async with Session.open(
            model=TEST_MODEL, db=db, config=config, system_prompt="be brief"
        ) as s:
            created: list[Event] = []
            s.events.subscribe(created.append, EventName.MESSAGE_CREATED)
            server.enqueue(Reply(text="first"), Reply(text="second"))
            first = await s.send("the first question")
            second = await s.send("the second question")
    assert first.stable_prefix_tokens == 0
    # The second request repeats the first whole: the system message and the question.
    assert 0 < second.stable_prefix_tokens < second.context_tokens
    assert first.cached_input_tokens == 0
    assert second.cached_input_tokens is not None and second.cached_input_tokens > 0
    assert second.cache_write_input_tokens is None
    replies = [e.payload for e in created if e.payload.get("role") == "assistant"]
    assert replies[1]["stable_prefix_tokens"] == second.stable_prefix_tokens
    assert replies[1]["request_tokens"] == second.context_tokens
    assert replies[1]["cached_input_tokens"] == second.cached_input_tokens
    assert server.prefixes[1].shared_messages == 2


async def test_a_new_question_leaves_the_last_block_in_place_and_repeats_the_whole_request(
    config_for: Callable[..., Config], db: Path
) -> None:
    async with LocalLLMServer() as server:
        config = config_for(llm_overrides={"api_base": server.base_url})
        async with Session.open(
            model=TEST_MODEL, db=db, config=config, system_prompt="be brief"
        ) as s:
            await s.set_task("Rotate the staging keys.")
            call = ToolCallSpec("grep", {"pattern": "keys"}, id="call_1")
            server.enqueue(Reply(tool_calls=[call]), Reply(text="found them"))
            first = await s.send("where are the keys?")
            await s.update_tool(
                first.tool_calls[0].call_id, status="completed", output="keys.py: 3 hits"
            )
            looped = await s.respond()
            await s.set_task("Rotate the production keys.")
            server.enqueue(Reply(text="next"))
            second = await s.send("and in production?")
    loop_end, asked = server.requests[-2]["messages"], server.requests[-1]["messages"]
    # The request after the new question begins with the whole previous request, the
    # first block included where it was sent; the new block follows the new question.
    assert asked[: len(loop_end)] == loop_end
    assert server.prefixes[-1].shared_messages == len(loop_end)
    blocks = [m["content"] for m in asked if str(m.get("content")).startswith("<context>")]
    assert len(blocks) == 2 and "staging" in blocks[0] and "production" in blocks[1]
    assert asked[-1]["content"] == blocks[1] and asked[-2]["content"] == "and in production?"
    # The session counts the same: all of the loop's last request is repeated.
    assert second.stable_prefix_tokens == looped.context_tokens, (second, looped)


async def test_a_compaction_reports_the_cached_tokens_it_invalidated(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with Session.open(
        model=TEST_MODEL, db=db, config=config_for(), system_prompt="be brief"
    ) as s:
        for turn in range(6):
            server.enqueue(Reply(text=f"reply {turn} " + "words " * 200))
            await s.send(f"question {turn} " + "context " * 200)
        last = s._last_request
        assert last is not None
        result = await s.compact()
        stored = [e for e in s.store.events(s.id) if e["name"] == "compaction_completed"]
    assert result.summary_ids
    assert result.invalidated_tokens is not None
    assert 0 < result.invalidated_tokens < last.print.tokens
    assert json.loads(stored[-1]["payload_json"])["invalidated_tokens"] == result.invalidated_tokens


async def test_a_compaction_that_changes_nothing_reports_no_invalidation(
    server: LocalLLMServer, session: Session
) -> None:
    server.enqueue(Reply(text="short"))
    await session.send("short")
    result = await session.compact()
    assert not result.summary_ids and not result.pruned_parts
    assert result.invalidated_tokens is None


def _marks(request: dict[str, Any]) -> list[tuple[int, str]]:
    """Where a request carries cache_control marks: (message index, role)."""
    marked = []
    for index, message in enumerate(request["messages"]):
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if "cache_control" in message or any("cache_control" in block for block in blocks):
            marked.append((index, message["role"]))
    return marked


@pytest.mark.parametrize("hints", [True, False])
async def test_cache_breakpoints_mark_the_system_message_summaries_and_history_only_when_on(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path, hints: bool
) -> None:
    config = config_for(llm_overrides={"cache_hints": hints})
    async with Session.open(model=TEST_MODEL, db=db, config=config, system_prompt="be brief") as s:
        for turn in range(4):
            await s.record("user", f"question {turn} " + "context " * 300)
            await s.record("assistant", f"answer {turn} " + "words " * 300)
        await s.compact()
        await s.set_task("finish the report")
        server.enqueue(Reply(text="ok"))
        await s.send("and now?")
        summaries = sum(1 for item in s.build_context().item_ids if item.startswith("sum_"))
    request = server.requests[-1]
    messages = request["messages"]
    marks = _marks(request)
    if not hints:
        assert marks == []
        return
    assert summaries >= 1
    block = len(messages) - 1
    assert messages[block]["content"].startswith("<context>")
    # The system message, the last summary (a user message right after the system
    # message and the earlier summaries) and the newest user message before the block.
    assert marks == [(0, "system"), (summaries, "user"), (block - 1, "user")]
    assert len(marks) <= 4
    assert messages[block - 1]["content"][0]["text"] == "and now?"


async def test_a_reply_of_tool_calls_only_keeps_its_request_valid_with_hints(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    config = config_for(llm_overrides={"cache_hints": True})
    async with Session.open(model=TEST_MODEL, db=db, config=config) as s:
        server.enqueue(Reply(tool_calls=[ToolCallSpec("ls", {}, id="c1")]), Reply(text="done"))
        first = await s.send("list files")
        await s.update_tool(first.tool_calls[0].call_id, status="completed", output="a.py")
        await s.respond()
    request = server.requests[-1]
    # The history ends with the tool's result: it carries the mark.
    assert _marks(request) == [(len(request["messages"]) - 1, "tool")]


@pytest.mark.parametrize("idle", [0.05, None])
async def test_a_turn_after_the_cache_expired_compacts_first(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path, idle: float | None
) -> None:
    compaction = CompactionConfig(output_budget=1_000, compact_after_idle_s=idle)
    async with Session.open(model=TEST_MODEL, db=db, config=config_for(compaction=compaction)) as s:
        server.enqueue(Reply(text="ok"))
        await s.send("begin")
        # Above the round's goal, under the soft limit: no compaction of its own.
        for turn in range(12):
            await s.record("user", f"note {turn} " + "context " * 1_000)
        assert s.compaction.goal < s.view_tokens() < s.budget.soft_limit
        assert s.compaction.last_result is None
        await anyio.sleep(0.1)
        server.enqueue(Reply(text="ok"))
        await s.send("and now?")
    summaries = [m for m in server.requests[-1]["messages"] if "[summary " in m["content"]]
    assert bool(summaries) == (idle is not None)


async def test_the_summarisation_call_reuses_the_conversations_prefix_when_asked(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    summary = "## Goal\nfinish the ledger work\n## Completed\nthe early questions were answered"
    server.responder = lambda request: Reply(text=summary)
    # Without the ledger's own call to the model, so the summary's is the last request.
    compaction = CompactionConfig(
        output_budget=1_000, model=TEST_MODEL, reuse_conversation_prefix=True, ledger_model=False
    )
    config = config_for(compaction=compaction)
    async with Session.open(model=TEST_MODEL, db=db, config=config, system_prompt="be brief") as s:
        for turn in range(6):
            server.enqueue(Reply(text=f"answer {turn} " + "words " * 300))
            await s.send(f"question {turn} " + "ledger " * 300)
        result = await s.compact()
        live = s.store.live_summaries(s.id)
    assert result.status == "completed", result.reason
    conversation, summarising = server.requests[-2], server.requests[-1]
    # The summarisation request is the last request with the instruction appended.
    assert summarising["messages"][:-1] == conversation["messages"]
    assert server.prefixes[-1].shared_messages == len(conversation["messages"])
    instruction = summarising["messages"][-1]
    assert instruction["role"] == "user" and instruction["content"].startswith(prompts.LEVEL1)
    assert "question 0" in instruction["content"] or "answer" in instruction["content"]
    assert live and live[0]["text"].startswith(summary)


async def test_without_the_setting_the_summariser_gets_a_transcript(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    server.responder = lambda request: Reply(text="## Goal\nfinish the ledger work")
    compaction = CompactionConfig(output_budget=1_000, model=TEST_MODEL, ledger_model=False)
    async with Session.open(model=TEST_MODEL, db=db, config=config_for(compaction=compaction)) as s:
        for turn in range(6):
            server.enqueue(Reply(text=f"answer {turn} " + "words " * 300))
            await s.send(f"question {turn} " + "ledger " * 300)
        await s.compact()
    assert server.requests[-1]["messages"][0] == {"role": "system", "content": prompts.LEVEL1}
