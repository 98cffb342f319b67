"""The OpenAI Agents SDK on a lossless session: the SDK's own ``Runner`` runs a
multi-turn, tool-using agent against the project's local server (the Responses API)
with ``LosslessSession`` as its memory, as it does on the SDK's ``SQLiteSession``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

agents = pytest.importorskip("agents")

from agents import (  # noqa: E402
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    SessionSettings,
    SQLiteSession,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI  # noqa: E402

from lossless import count_tokens  # noqa: E402
from lossless.config import Config  # noqa: E402
from lossless.errors import InvalidInputError  # noqa: E402
from lossless.integrations.openai_agents import LosslessSession  # noqa: E402
from lossless.parts import ToolPart  # noqa: E402
from lossless.session import Session  # noqa: E402
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec, small_window  # noqa: E402

pytestmark = pytest.mark.anyio

PIN = "Amounts are integers in cents."
MODEL = "openai/gpt-4o-mini"


AUDITORS = [
    "amberly",
    "birchwood",
    "cobaltine",
    "dunmore",
    "elmsworth",
    "foxglade",
    "grayling",
    "hollins",
    "ironsby",
    "juniper",
    "kestrel",
    "larkspur",
    "millbrook",
    "northcote",
]


@function_tool
def ledger_balance(account: str) -> str:
    """The balance of an account."""
    number = int(account.split("-")[1])
    auditor = AUDITORS[number % len(AUDITORS)]
    return f"account {account}: balance 1204 cents, audited by {auditor}; " + "entry " * 150


def _config() -> Config:
    return small_window()


@pytest.fixture(autouse=True)
def _no_tracing() -> None:
    set_tracing_disabled(True)


@pytest.fixture
async def client(server: LocalLLMServer) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=server.base_url, api_key="sk-local", max_retries=0) as opened:
        yield opened


def _agent(client: AsyncOpenAI, session: LosslessSession | None = None) -> Agent[Any]:
    tools: list[Any] = [ledger_balance]
    if session is not None:
        tools += session.recall_tools()
    return Agent(
        name="bookkeeper",
        instructions="You keep the ledger.",
        model=OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client),
        tools=tools,
    )


async def _turn(server: LocalLLMServer, agent: Agent[Any], session: Any, n: int) -> str:
    """One user turn: the model calls the tool, then answers."""
    server.enqueue(
        Reply(tool_calls=[ToolCallSpec("ledger_balance", json.dumps({"account": f"A-{n}"}))]),
        Reply(text=f"Account A-{n} holds 1204 cents."),
    )
    result = await Runner.run(agent, f"What does account A-{n} hold?", session=session)
    return str(result.final_output)


async def test_a_runner_outgrows_the_window_and_keeps_the_pin(
    server: LocalLLMServer, tmp_path: Path, client: AsyncOpenAI
) -> None:
    async with LosslessSession(
        "books-1", model=MODEL, db=tmp_path / "a.db", config=_config()
    ) as session:
        await (await session.session()).pin(PIN)
        agent = _agent(client, session)
        for n in range(14):
            assert await _turn(server, agent, session, n) == f"Account A-{n} holds 1204 cents."
        stored = (await session.session()).history()
    requests = server.requests_to("responses")
    assert len(requests) == 28
    for request in requests:
        text = json.dumps(request["input"])
        assert PIN in text, "every request holds the pinned fact"
    # Each turn's question reaches the model; the oldest tool results no longer do
    # (a summary stands for them), and the requests stay within the window.
    last = json.dumps(requests[-1]["input"])
    assert "A-13" in last
    assert "account A-0: balance" not in last
    limit = _config().model.context_limit
    assert all(count_tokens(json.dumps(r["input"])) < limit for r in requests)
    # Stored once each: per turn, the question and one assistant turn with its call.
    assert len(stored) == 14 * 3
    assert [m.role for m in stored[:3]] == ["user", "assistant", "assistant"]


async def _one_long_run(
    server: LocalLLMServer, client: AsyncOpenAI, session: LosslessSession, bound: bool
) -> list[dict[str, Any]]:
    """One run of 20 tool calls in a row; the requests the server received for it."""
    calls = [
        Reply(tool_calls=[ToolCallSpec("ledger_balance", json.dumps({"account": f"A-{n}"}))])
        for n in range(20)
    ]
    server.enqueue(*calls, Reply(text="All twenty hold 1204 cents."))
    sent = len(server.requests_to("responses"))
    run_config = RunConfig(call_model_input_filter=session.bound_model_input if bound else None)
    result = await Runner.run(
        _agent(client, session),
        "Audit A-0 to A-19.",
        session=session,
        run_config=run_config,
        max_turns=30,
    )
    assert result.final_output == "All twenty hold 1204 cents."
    return server.requests_to("responses")[sent:]


async def test_bound_model_input_bounds_every_call_of_a_long_run(
    server: LocalLLMServer, tmp_path: Path, client: AsyncOpenAI
) -> None:
    """Within one run the SDK appends each step to what it sends; with the filter,
    each call is the session's bounded context instead, pin and newest result in."""
    limit = _config().model.context_limit
    sizes = {}
    for bound in (False, True):
        async with LosslessSession(
            f"long-{bound}", model=MODEL, db=tmp_path / "a.db", config=_config()
        ) as session:
            await (await session.session()).pin(PIN)
            requests = await _one_long_run(server, client, session, bound)
            stored = (await session.session()).history()
        assert len(requests) == 21
        assert len(stored) == 1 + 20 + 1, "each call and its output stored once"
        sizes[bound] = [count_tokens(json.dumps(r["input"])) for r in requests]
        for n, request in enumerate(requests[1:]):
            text = json.dumps(request["input"])
            assert f"account A-{n}: balance" in json.dumps(request["input"][-1])
            assert PIN in text
    assert max(sizes[False]) > limit, "without the filter the run outgrows the window"
    assert max(sizes[True]) < limit


async def test_an_early_fact_is_recalled_through_the_recall_tools(
    server: LocalLLMServer, tmp_path: Path, client: AsyncOpenAI
) -> None:
    async with LosslessSession(
        "books-2", model=MODEL, db=tmp_path / "a.db", config=_config()
    ) as session:
        agent = _agent(client, session)
        for n in range(12):
            await _turn(server, agent, session, n)
        server.enqueue(
            Reply(tool_calls=[ToolCallSpec("lossless_grep", json.dumps({"query": "amberly"}))]),
            Reply(text="Found it."),
        )
        await Runner.run(agent, "Who audited account A-0?", session=session)
    requests = server.requests_to("responses")
    assert "amberly" not in json.dumps(requests[-2]["input"]), "A-0's result left the context"
    grep_result = requests[-1]["input"][-1]
    assert grep_result["type"] == "function_call_output"
    assert "amberly" in grep_result["output"]


def _seen(item: dict[str, Any]) -> tuple[Any, ...]:
    """What the model reads of an input item: ids, statuses and the content's
    form (a string or a list of parts) left aside."""
    content = item.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content)
    kind = item.get("type", "message")
    fields = ("role", "name", "arguments", "output")
    return (kind, content, *(item.get(field) for field in fields))


def _conversation(items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """A request's items but the system ones, call ids numbered as they appear (the
    server numbers its calls across runs)."""
    calls: dict[str, int] = {}
    seen = []
    for item in items:
        if item.get("role") != "system":
            call = item.get("call_id")
            seen.append((_seen(item), calls.setdefault(call, len(calls)) if call else None))
    return seen


async def test_the_same_run_on_the_sdk_session_matches(
    server: LocalLLMServer, tmp_path: Path, client: AsyncOpenAI
) -> None:
    """Within the window, every request the model receives holds what the SDK's own
    session sends, item for item; lossless adds its system item in front."""
    inputs: dict[str, list[list[tuple[Any, ...]]]] = {}
    for name, session in (
        ("sdk", SQLiteSession("books", tmp_path / "sdk.db")),
        ("lossless", LosslessSession("books", model=MODEL, db=tmp_path / "l.db")),
    ):
        if isinstance(session, LosslessSession):
            await (await session.session()).pin(PIN)
        agent = _agent(client)
        sent = len(server.requests_to("responses"))
        answers = [await _turn(server, agent, session, n) for n in range(3)]
        assert answers == [f"Account A-{n} holds 1204 cents." for n in range(3)]
        requests = server.requests_to("responses")[sent:]
        assert len(requests) == 6
        inputs[name] = [_conversation(r["input"]) for r in requests]
        if isinstance(session, LosslessSession):
            assert all(PIN in json.dumps(r["input"][0]) for r in requests)
            await session.close()
        else:
            assert not any(i.get("role") == "system" for r in requests for i in r["input"])
            session.close()
    assert inputs["lossless"] == inputs["sdk"]
    # The last request carries all three turns: questions, calls, results, answers.
    assert len(inputs["sdk"][-1]) == 3 * 4 - 1


async def test_pop_item_and_clear_session_keep_everything_stored(
    server: LocalLLMServer, tmp_path: Path, client: AsyncOpenAI
) -> None:
    db = tmp_path / "a.db"
    async with LosslessSession("books-3", model=MODEL, db=db) as session:
        agent = _agent(client)
        await _turn(server, agent, session, 1)
        before = await session.get_items()
        first = (await session.session()).id
        popped = await session.pop_item()
        assert popped is not None and popped["type"] == "message"
        assert "1204 cents" in json.dumps(popped)
        after = await session.get_items()
        assert after == before[:-1]
        assert (await session.session()).parent_id == first
        # A tool's output is part of the turn holding its call: popping it leaves the
        # call without an output (the request shows it pending, as the Responses API
        # wants an output for every call), and adding it back restores the view.
        popped = await session.pop_item()
        assert popped is not None and popped["type"] == "function_call_output"
        assert "audited by" in popped["output"]
        newest = (await session.session()).history()[-1]
        assert isinstance(newest.parts[0], ToolPart) and newest.parts[0].output is None
        pending = await session.get_items()
        assert pending[:-1] == before[:-2]
        assert pending[-1]["type"] == "function_call_output"
        assert "pending" in pending[-1]["output"]
        await session.add_items([popped])
        assert await session.get_items() == before[:-1]
        assert (await session.pop_item()) == popped
        call = await session.pop_item()
        assert call is not None and call["type"] == "function_call"
        assert call["name"] == "ledger_balance"
        after = await session.get_items()
        assert after == before[:-3]
        assert after[-1]["role"] == "user"
    # Another object with the same id opens the popped view.
    async with LosslessSession("books-3", model=MODEL, db=db) as again:
        assert await again.get_items() == after
        await again.clear_session()
        assert await again.get_items() == []
        assert await again.pop_item() is None
    async with LosslessSession("books-3", model=MODEL, db=db) as again:
        assert await again.get_items() == []
    # Nothing was deleted: the first session still holds the whole turn.
    async with Session.open(model=MODEL, db=db, session_id=first) as original:
        assert [m.role for m in original.history()] == ["user", "assistant", "assistant"]


async def test_a_second_object_and_another_process_see_the_same_history(
    server: LocalLLMServer, tmp_path: Path, client: AsyncOpenAI
) -> None:
    db = tmp_path / "a.db"
    async with LosslessSession("books-4", model=MODEL, db=db) as one:
        await _turn(server, _agent(client), one, 2)
        items = await one.get_items()
    async with LosslessSession("books-4", model=MODEL, db=db) as two:
        assert await two.get_items() == items
        assert await two.get_items(limit=2) == items[-2:]
    script = (
        "import anyio, json, sys\n"
        "from lossless.integrations.openai_agents import LosslessSession\n"
        "async def main():\n"
        f"    async with LosslessSession('books-4', model={MODEL!r}, db=sys.argv[1]) as s:\n"
        "        print(json.dumps(await s.get_items()))\n"
        "anyio.run(main)\n"
    )
    done = await anyio.run_process([sys.executable, "-c", script, str(db)])
    assert json.loads(done.stdout) == items


async def test_a_limit_keeps_the_system_item(tmp_path: Path) -> None:
    async with LosslessSession(
        "books-5",
        model=MODEL,
        db=tmp_path / "a.db",
        system_prompt="You keep the ledger.",
        session_settings=SessionSettings(limit=3),
    ) as session:
        await (await session.session()).pin(PIN)
        await session.add_items([{"role": "user", "content": f"note {n}"} for n in range(6)])
        items = await session.get_items(limit=100)
        assert len(items) == 7
        assert items[0]["role"] == "system" and PIN in json.dumps(items[0])
        assert await session.get_items(limit=3) == [items[0], *items[-3:]]
        assert await session.get_items(limit=None) == [items[0], *items[-3:]]
        assert await session.get_items(limit=0) == [items[0]]
        assert await session.get_items(limit=100) == items
        with pytest.raises(InvalidInputError):
            await session.get_items(limit=-1)


async def test_items_of_other_tools_are_skipped_and_bad_items_refused(tmp_path: Path) -> None:
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    async with LosslessSession("books-6", model=MODEL, db=tmp_path / "a.db") as session:
        await session.add_items(
            [
                {"role": "user", "content": "Search the web for the rate."},
                {"type": "web_search_call", "id": "ws_1", "status": "completed"},
                {"type": "item_reference", "id": "msg_9"},
                {"type": "custom_tool_call", "call_id": "c0", "name": "g", "input": "x"},
                {"type": "custom_tool_call_output", "call_id": "c0", "output": "y"},
                {**call, "id": "fc_1", "status": "completed"},
                {"type": "function_call_output", "call_id": "c1", "output": "42"},
            ]
        )
        kinds = [item.get("type") for item in await session.get_items()]
        assert kinds == ["message", "function_call", "function_call_output"]
        with pytest.raises(InvalidInputError):
            await session.add_items([{"content": "no role, no type"}])
        with pytest.raises(InvalidInputError):
            await session.add_items(["not an item"])
        assert len((await session.session()).history()) == 2


async def test_a_chat_completions_model_gets_the_pin(
    server: LocalLLMServer, tmp_path: Path, client: AsyncOpenAI
) -> None:
    """The SDK turns the items into Chat Completions messages for such a model: the
    system item becomes a system message, after the agent's instructions."""
    agent = Agent(
        name="bookkeeper",
        instructions="You keep the ledger.",
        model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client),
        tools=[ledger_balance],
    )
    async with LosslessSession("books-7", model=MODEL, db=tmp_path / "a.db") as session:
        await (await session.session()).pin(PIN)
        for n in range(2):
            assert await _turn(server, agent, session, n) == f"Account A-{n} holds 1204 cents."
        assert len((await session.session()).history()) == 6
    requests = server.requests_to("chat")
    assert len(requests) == 4
    for request in requests:
        system = [m for m in request["messages"] if m["role"] == "system"]
        assert "You keep the ledger." in json.dumps(system)
        assert PIN in json.dumps(system)
    roles = [m["role"] for m in requests[-1]["messages"] if m["role"] != "system"]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant", "tool"]


async def test_pop_item_gives_back_compaction_items_and_images(tmp_path: Path) -> None:
    """Popping the answer of a turn that holds an OpenAI compaction item keeps that
    item in the turn; the next pops give it back, then the user's image by URL."""
    image = {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"}
    question = {"role": "user", "content": [{"type": "input_text", "text": "See this."}, image]}
    compaction = {"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque"}
    answer = {"type": "message", "role": "assistant", "content": "A chart."}
    async with LosslessSession("books-9", model=MODEL, db=tmp_path / "a.db") as session:
        await session.add_items([question, compaction, answer])
        before = await session.get_items()
        assert (await session.pop_item())["content"][0]["text"] == "A chart."  # type: ignore[index]
        assert compaction in await session.get_items()
        assert await session.pop_item() == compaction
        assert await session.get_items() == before[:-2]
        assert await session.pop_item() == question
        assert await session.pop_item() is None


async def test_concurrent_first_uses_open_one_session(tmp_path: Path) -> None:
    async with LosslessSession("books-8", model=MODEL, db=tmp_path / "a.db") as session:
        opened: list[Session] = []

        async def use() -> None:
            opened.append(await session.session())

        async with anyio.create_task_group() as group:
            for _ in range(4):
                group.start_soon(use)
        assert len(opened) == 4
        assert all(one is opened[0] for one in opened), "one object, none left open"


def test_a_session_id_must_be_a_non_empty_string(tmp_path: Path) -> None:
    for bad in ("", None, 7):
        with pytest.raises(InvalidInputError, match="session_id"):
            LosslessSession(bad, model=MODEL, db=tmp_path / "a.db")  # type: ignore[arg-type]


def test_the_example_runs_offline() -> None:
    """``examples/openai_agents_session.py`` runs against the local server."""
    example = Path(__file__).parent.parent / "examples" / "openai_agents_session.py"
    done = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=120, check=True
    )
    assert "36 turns stored" in done.stdout
    assert "reopened by its id: the same history" in done.stdout
    assert "lossless_grep found 0 places" not in done.stdout
