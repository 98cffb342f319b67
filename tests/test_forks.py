"""Forks: a session that shares its parent's history up to a message without a
copy and goes its own way; ``sync`` forks by itself when a history is edited or
rewound. Nothing stored of the parent ever changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from conftest import make_config, sql_rows
from lossless import Session, session_for_key
from lossless.cli import app
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.errors import InvalidInputError
from lossless.events import Event, EventName
from lossless.recall import grep
from lossless.testing import LocalLLMServer
from lossless.testing.conformance import check_request

pytestmark = [pytest.mark.anyio]

MODEL = "openai/fork-test"


def _round(n: int, result: str | None = None) -> list[dict[str, Any]]:
    call = f"call_{n}"
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call,
                    "type": "function",
                    "function": {"name": "probe", "arguments": json.dumps({"n": n})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call, "content": result or f"probe {n}: nominal"},
    ]


def _history(rounds: int, instruction: str = "Probe every sensor.") -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": instruction}]
    for n in range(rounds):
        messages.extend(_round(n))
    return messages


def _texts(session: Session) -> list[str]:
    texts = []
    for message in session.history():
        for part in message.parts:
            if part.kind == "text":
                texts.append(part.text)
            elif part.kind == "tool":
                texts.append(f"{part.call_id}={part.output}")
    return texts


def _all_rows(db: Path | str) -> dict[str, list[tuple[str, ...]]]:
    """Every stored row a fork must leave alone, read from outside the library."""
    return {
        "messages": sql_rows(db, "SELECT * FROM messages ORDER BY id"),
        "parts": sql_rows(db, "SELECT * FROM parts ORDER BY pk"),
        "tool_outputs": sql_rows(db, "SELECT * FROM tool_outputs ORDER BY part_pk"),
        "summaries": sql_rows(db, "SELECT * FROM summaries ORDER BY pk"),
    }


def _only_added(before: dict[str, list[Any]], after: dict[str, list[Any]]) -> None:
    for table, rows in before.items():
        assert set(rows) <= set(after[table]), f"a stored {table} row changed"


@pytest.mark.both_backends
async def test_fork_shares_the_history_up_to_a_message(config: Config, db: Path | str) -> None:
    async with Session.open(model=MODEL, db=db, config=config) as parent:
        await parent.sync(_history(3))
        history = parent.history()
        at = history[2]
        async with await parent.fork(at=at.id) as child:
            assert child.parent_id == parent.id
            assert [m.id for m in child.history()] == [m.id for m in history[:3]]
            await child.record("user", "Stop: probe only sensor 1 again.")
            own = child.history()[-1]
            assert own.seq == at.seq + 1
            assert own.session_id == child.id
        assert [m.id for m in parent.history()] == [m.id for m in history]
        with pytest.raises(InvalidInputError):
            await parent.fork(at="msg_nothing")


@pytest.mark.both_backends
async def test_sync_forks_on_an_edit_and_the_parent_keeps_everything(
    config: Config, db: Path | str
) -> None:
    forked: list[Event] = []
    async with Session.open(model=MODEL, db=db, config=config, key="agent-1") as session:
        session.events.subscribe(forked.append, EventName.SESSION_FORKED)
        for rounds in range(5):
            await session.sync(_history(rounds))
        parent = session.id
        parent_texts = _texts(session)
    before = _all_rows(db)
    async with Session.open(model=MODEL, db=db, config=config, key="agent-1") as session:
        session.events.subscribe(forked.append, EventName.SESSION_FORKED)
        edited = _history(4)
        edited[3:5] = _round(1, "probe 1: OVERHEATING")
        context = await session.sync(edited)
        check_request(context.messages)
        assert session.id != parent
        assert session.parent_id == parent
        assert forked and forked[0].payload["parent_id"] == parent
        assert "call_1=probe 1: OVERHEATING" in _texts(session)
        assert "call_0=probe 0: nominal" in _texts(session)
        assert any("OVERHEATING" in str(m.get("content")) for m in context.messages)
        # The same list again stores nothing more on the branch.
        count = len(session.history())
        await session.sync(edited)
        assert len(session.history()) == count
    assert await session_for_key(db, "agent-1") == session.id
    _only_added(before, _all_rows(db))
    async with Session.open(model=MODEL, db=db, config=config, session_id=parent) as old:
        assert _texts(old) == parent_texts


@pytest.mark.both_backends
async def test_a_rewind_forks_and_shares_the_prefix(config: Config, db: Path | str) -> None:
    async with Session.open(model=MODEL, db=db, config=config) as session:
        for rounds in range(6):
            await session.sync(_history(rounds))
        parent = session.id
        shared = [m.id for m in session.history()[:3]]
        retried = _history(2) + _round(7)
        await session.sync(retried)
        assert session.id != parent
        ids = [m.id for m in session.history()]
        assert ids[:3] == shared, "the first messages are the parent's rows, not copies"
        assert _texts(session)[-1] == "call_7=probe 7: nominal"
    own = sql_rows(db, f"SELECT count(*) FROM messages WHERE session_id = '{session.id}'")
    assert own == [("1",)]


async def test_a_history_handed_over_at_once_forks_at_the_edit(
    config: Config, tmp_path: Path
) -> None:
    async with Session.open(model=MODEL, db=tmp_path / "forks.db", config=config) as session:
        await session.sync(_history(6))
        parent = [m.id for m in session.history()]
        edited = _history(6)
        edited[7:9] = _round(3, "probe 3: flooded")
        await session.sync(edited)
        history = session.history()
        # The user turn and rounds 0-2 are shared; round 3's call is the fork's own,
        # as its result changed; rounds 4 and 5 are stored again after it.
        assert [m.id for m in history[:4]] == parent[:4]
        assert {m.session_id for m in history[4:]} == {session.id}
        assert "call_3=probe 3: flooded" in _texts(session)


@pytest.mark.both_backends
async def test_recall_in_a_fork_sees_what_it_shares_only(config: Config, db: Path | str) -> None:
    async with Session.open(model=MODEL, db=db, config=config) as session:
        messages = _history(1, "Calibrate the zeppelin altimeter.")
        await session.sync(messages)
        await session.sync([*messages, {"role": "user", "content": "Also the periscope."}])
        parent = session.id
        await session.sync([*messages, {"role": "user", "content": "Also the gyroscope."}])
        child = session.id
    assert child != parent
    assert grep("zeppelin", db=db, session=child)
    assert grep("gyroscope", db=db, session=child)
    assert not grep("periscope", db=db, session=child)
    assert grep("periscope", db=db, session=parent)
    family = grep("periscope gyroscope zeppelin", db=db, session=child, lineage=True)
    assert {hit.session_id for hit in family} == {parent, child}
    found = {hit.snippet for hit in family}
    assert any("periscope" in text for text in found)
    assert len({hit.part_id for hit in family}) == len(family), "shared hits once"


async def test_compaction_in_a_fork_never_touches_its_parent(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    config = make_config(
        server,
        model=ModelConfig(context_limit=3_000, max_output_tokens=200, token_correction=1.0),
        compaction=CompactionConfig(output_budget=0),
    )
    db = tmp_path / "forks.db"
    long_round = [_round(n, f"probe {n}: " + "reading " * 60) for n in range(30)]
    history = [{"role": "user", "content": "Probe every sensor. Never stop the pumps."}]
    async with Session.open(model=MODEL, db=db, config=config) as session:
        for n in range(12):
            history.extend(long_round[n])
            await session.sync(history)
        await session.compact()
        parent = session.id
    before = _all_rows(db)
    parent_view = sql_rows(db, f"SELECT * FROM context_items WHERE session_id = '{parent}'")
    async with Session.open(model=MODEL, db=db, config=config, session_id=parent) as session:
        branch = [*history[:9], {"role": "user", "content": "Now only the pumps."}]
        for n in range(12, 30):
            branch.extend(long_round[n])
            context = await session.sync(branch)
            check_request(context.messages)
            assert context.tokens <= context.budget
            assert any("Now only the pumps." in str(m.get("content")) for m in context.messages)
        await session.compact()
        assert session.parent_id == parent
        child = session.id
    _only_added(before, _all_rows(db))
    assert sql_rows(db, f"SELECT * FROM context_items WHERE session_id = '{parent}'") == (
        parent_view
    )
    own_summaries = sql_rows(db, f"SELECT count(*) FROM summaries WHERE session_id = '{child}'")
    assert int(own_summaries[0][0]) >= 1


def _growth() -> st.SearchStrategy[list[tuple[str, int]]]:
    step = st.tuples(st.sampled_from(["grow", "repeat", "edit", "rewind"]), st.integers(0, 50))
    return st.lists(step, min_size=1, max_size=12)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=_growth())
@pytest.mark.parametrize("format", ["openai", "anthropic"])
async def test_any_history_is_stored_once_per_branch(
    config: Config,
    tmp_path_factory: pytest.TempPathFactory,
    format: Literal["openai", "anthropic"],
    steps: list[tuple[str, int]],
) -> None:
    db = tmp_path_factory.mktemp("sync") / "property.db"
    messages = _history(1)
    version = 0
    async with Session.open(model=MODEL, db=db, config=config) as session:
        first = messages if format == "openai" else _as_anthropic(messages)
        await session.sync(first, format=format)
        for action, number in steps:
            before = _all_rows(db)
            if action == "grow":
                messages = messages + _round(100 + number)
            elif action == "edit":
                index = number % len(messages)
                if messages[index]["role"] != "user":
                    continue
                version += 1
                messages = [*messages[:index], {"role": "user", "content": f"v{version}"}]
            elif action == "rewind":
                # Back to a user message or a whole tool round.
                cut = 1 + 2 * (number % ((len(messages) + 1) // 2))
                messages = messages[: min(cut, len(messages))]
            if format == "openai":
                context = await session.sync(messages, format="openai")
                check_request(context.messages)
            else:
                context = await session.sync(_as_anthropic(messages), format="anthropic")
            assert context.tokens <= context.budget
            _only_added(before, _all_rows(db))
            # The branch holds the list: one turn per user or assistant message,
            # each result on its call.
            turns = [m for m in messages if m["role"] != "tool"]
            history = session.history()
            assert len(history) == len(turns)
            assert _texts(session) == _expected_texts(messages)


def _as_anthropic(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same history as Anthropic Messages, message for message."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        if message["role"] == "user":
            converted.append(message)
        elif message["role"] == "assistant":
            uses = [
                {
                    "type": "tool_use",
                    "id": call["id"],
                    "name": call["function"]["name"],
                    "input": json.loads(call["function"]["arguments"]),
                }
                for call in message["tool_calls"]
            ]
            converted.append({"role": "assistant", "content": uses})
        else:
            result = {
                "type": "tool_result",
                "tool_use_id": message["tool_call_id"],
                "content": message["content"],
            }
            converted.append({"role": "user", "content": [result]})
    return converted


def _expected_texts(messages: list[dict[str, Any]]) -> list[str]:
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    texts = []
    for message in messages:
        if message["role"] == "user":
            texts.append(message["content"])
        elif message["role"] == "assistant":
            for call in message["tool_calls"]:
                texts.append(f"{call['id']}={results.get(call['id'])}")
    return texts


async def test_the_cli_shows_the_lineage(config: Config, tmp_path: Path) -> None:
    db = tmp_path / "forks.db"
    async with Session.open(model=MODEL, db=db, config=config, key="ops") as session:
        for rounds in range(3):
            await session.sync(_history(rounds))
        parent = session.id
        await session.sync(_history(1) + _round(9))
        child = session.id
    runner = CliRunner()
    env = {"COLUMNS": "200", "NO_COLOR": "1"}
    listed = runner.invoke(app, ["--db", str(db), "sessions"], env=env)
    assert listed.exit_code == 0, listed.output
    assert f"{parent} @ #" in listed.output
    assert "key ops" in listed.output
    tree = runner.invoke(app, ["--db", str(db), "tree", child], env=env)
    assert tree.exit_code == 0, tree.output
    assert f"fork of {parent} at message #" in tree.output
    tree = runner.invoke(app, ["--db", str(db), "tree", parent], env=env)
    assert f"forked as {child} at message #" in tree.output
