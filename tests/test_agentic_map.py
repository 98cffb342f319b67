"""AgenticMap against the local server: agents with tools in linked sub-sessions,
success only on a finished answer, failures with their reason, resume in the same
sub-session, and many items on one database file."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from conftest import TEST_MODEL
from lossless import Store
from lossless.cli import app
from lossless.config import Config
from lossless.errors import InvalidInputError
from lossless.operators import AgenticMap, AgentTool
from lossless.recall import grep
from lossless.session import Session
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec, content_text

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]


def item_of(request: dict[str, Any]) -> int:
    first = next(m for m in request["messages"] if m["role"] == "user")
    found = re.search(r"item (\d+)", content_text(first["content"]))
    assert found is not None
    return int(found.group(1))


def tool_results(request: dict[str, Any]) -> list[str]:
    return [content_text(m["content"]) for m in request["messages"] if m["role"] == "tool"]


def agent(request: dict[str, Any], lookups: int = 1, latency: float = 0.0) -> Reply:
    """Looks its item up ``lookups`` times, then answers with what it found."""
    n, results = item_of(request), tool_results(request)
    if len(results) < lookups:
        return Reply(tool_calls=[ToolCallSpec("lookup", {"key": n})], latency_s=latency)
    return Reply(text=f"item {n} is {results[-1]}", latency_s=latency)


def lookup_tool() -> AgentTool:
    return AgentTool(
        name="lookup",
        description="Look a key up.",
        parameters={"type": "object", "properties": {"key": {"type": "integer"}}},
        handler=lambda args: f"value-{args['key'] * 10}",
    )


def new_map(config: Config, db: Path, **fields: Any) -> AgenticMap:
    fields.setdefault("template", "Find out about item {{ item }}.")
    fields.setdefault("tools", [lookup_tool()])
    return AgenticMap(model=TEST_MODEL, db=db, config=config, **fields)


async def test_agents_use_tools_in_linked_sub_sessions_and_only_answers_return(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    server.responder = agent
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as parent:
        results = await new_map(config, db, parent=parent).run_all(range(3))
    assert [r.output for r in results] == [f"item {n} is value-{n * 10}" for n in range(3)]
    assert all(r.ok and r.attempts == 2 and r.session_id for r in results)
    async with await Session.load(results[1].session_id or "", db=db, config=config) as child:
        roles = [m.role for m in child.history()]
    assert roles == ["user", "assistant", "assistant"]
    listed = CliRunner().invoke(app, ["--db", str(db), "sessions", "--parent", parent.id])
    assert listed.exit_code == 0, listed.output
    assert all(r.session_id in listed.stdout for r in results)
    assert "3 sessions" in listed.stdout


async def test_a_result_is_a_success_only_when_the_agent_finished(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    def reply(request: dict[str, Any]) -> Reply:
        n = item_of(request)
        if n == 0:
            return Reply(status=400, text="refused")
        if n == 1:
            return Reply(text="a long answ", finish_reason="length")
        if n == 2:
            return Reply(tool_calls=[ToolCallSpec("lookup", {"key": 2})])  # never stops
        if n == 3:
            return Reply(text="")
        if n == 4 and not tool_results(request):
            return Reply(tool_calls=[ToolCallSpec("explode", {})])
        return Reply(text=f"done: {tool_results(request)}")

    server.responder = reply

    def explode(args: dict[str, Any]) -> str:
        raise RuntimeError("the tool broke")

    tools = [lookup_tool(), AgentTool(name="explode", handler=explode)]
    results = await new_map(config, db, tools=tools, max_turns=3).run_all(range(5))
    assert [r.error_kind for r in results] == ["llm_error", "length", "max_turns", "empty", None]
    assert results[2].attempts == 3
    # A tool that raises answers the call with an error; the agent goes on and finishes.
    assert "RuntimeError: the tool broke" in (results[4].output or "")


async def test_a_continuation_message_asks_an_agent_that_stopped_empty_to_go_on(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    def reply(request: dict[str, Any]) -> Reply:
        last = content_text(request["messages"][-1]["content"])
        return Reply(text="finished" if last == "Go on." else "")

    server.responder = reply
    [result] = await new_map(config, db, continuation_message="Go on.").run_all([7])
    assert result.ok and result.output == "finished" and result.attempts == 2


async def test_read_only_agents_get_no_tools(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    with pytest.raises(InvalidInputError, match="read_only"):
        new_map(config, db, read_only=True)
    server.responder = lambda request: Reply(text=f"{len(request.get('tools') or [])} tools")
    [result] = await new_map(config, db, tools=[], read_only=True).run_all([1])
    assert result.output == "0 tools"


async def test_a_stopped_item_resumes_in_its_own_sub_session_where_it_stopped(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    # Item 1's answer (after its lookup) takes long: the map is closed while it waits.
    waiting = threading.Event()

    def slow_answer(request: dict[str, Any]) -> Reply:
        if item_of(request) == 1 and tool_results(request):
            waiting.set()
            return agent(request, latency=1.5)
        return agent(request)

    server.responder = slow_answer
    stream = new_map(config, db, concurrency=2).run(range(2))
    async with stream:
        first = await anext(stream)
        assert first.index == 0
        assert await anyio.to_thread.run_sync(waiting.wait, 5)
    map_id = first.map_id
    asked_before = len(server.requests)
    server.responder = agent
    resumed = await new_map(config, db).resume(map_id).collect()
    assert [r.index for r in resumed] == [1] and resumed[0].output == "item 1 is value-10"
    # It went on from its stored lookup: one more model call, no new lookup.
    assert len(server.requests) == asked_before + 1
    async with await Session.load(resumed[0].session_id or "", db=db, config=config) as child:
        history = child.history()
    assert sum(1 for m in history if m.role == "user") == 1
    everything = await AgenticMap.results(map_id, db=db)
    assert [r.ok for r in everything] == [True, True]
    listed = CliRunner().invoke(app, ["--db", str(db), "sessions", "--parent", map_id])
    assert "2 sessions" in listed.stdout


async def test_64_items_of_three_turns_share_one_database_file_without_lock_errors(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    server.responder = lambda request: agent(request, lookups=2)
    results = await new_map(config, db, concurrency=16).run_all(range(64))
    failures = [(r.index, r.error) for r in results if not r.ok]
    assert failures == []
    assert all(r.attempts == 3 for r in results)
    assert len({r.session_id for r in results}) == 64


async def test_the_items_of_a_run_share_its_connections_and_index_search_once_at_the_end(
    server: LocalLLMServer, config: Config, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Decisions 102 and 121: sub-sessions open no connection of their own; the run
    # writes their turns through its own connection and opens one more, for
    # compaction, however many items it has.
    import lossless.session._open as session_module

    opened: list[str] = []
    open_store = session_module._open_store

    async def counting(db: Any, config: Config) -> Any:
        opened.append(str(db))
        return await open_store(db, config)

    monkeypatch.setattr(session_module, "_open_store", counting)
    server.responder = lambda request: agent(request, lookups=2)
    results = await new_map(config, db, concurrency=4).run_all(range(12))
    assert all(r.ok and r.attempts == 3 for r in results)
    assert len(opened) == 1
    # Every turn of every sub-session is stored, and searchable with nothing queued.
    store = Store(db)
    assert store.native.search_backlog() == 0
    for result in results:
        roles = [m["role"] for m in store.history(result.session_id or "")]
        assert roles == ["user", "assistant", "assistant", "assistant"]
    hits = grep("value-110", db=db, session=results[11].session_id or "")
    assert hits, "the last lookup's result is found by search"


async def test_each_reply_of_an_item_is_recorded_with_its_event(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    # Decision 103: the reply, its message.created event and the view's size come
    # from one trip to the store.
    server.responder = lambda request: agent(request, lookups=2)
    [result] = await new_map(config, db).run_all([5])
    store = Store(db)
    assistant_ids = [
        m["id"] for m in store.history(result.session_id or "") if m["role"] == "assistant"
    ]
    created = [
        event
        for event in store.native.events(result.session_id or "")
        if event["name"] == "message_created" and '"assistant"' in event["payload_json"]
    ]
    assert len(assistant_ids) == 3
    assert [json.loads(event["payload_json"])["message_id"] for event in created] == assistant_ids
