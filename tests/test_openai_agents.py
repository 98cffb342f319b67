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

import pytest

agents = pytest.importorskip("agents")

from agents import (  # noqa: E402
    Agent,
    OpenAIResponsesModel,
    Runner,
    SQLiteSession,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI  # noqa: E402

from lossless import count_tokens  # noqa: E402
from lossless.config import CompactionConfig, Config, ModelConfig  # noqa: E402
from lossless.integrations.openai_agents import LosslessSession  # noqa: E402
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec  # noqa: E402

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
    return Config(
        model=ModelConfig(context_limit=4_000, max_output_tokens=300),
        compaction=CompactionConfig(output_budget=0),
    )


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


async def test_the_same_run_on_the_sdk_session_matches(
    server: LocalLLMServer, tmp_path: Path, client: AsyncOpenAI
) -> None:
    answers = {}
    for name, session in (
        ("sdk", SQLiteSession("books", tmp_path / "sdk.db")),
        ("lossless", LosslessSession("books", model=MODEL, db=tmp_path / "l.db")),
    ):
        agent = _agent(client)
        answers[name] = [await _turn(server, agent, session, n) for n in range(3)]
        items = await session.get_items()
        answers[name + " items"] = [
            (item.get("role"), item.get("type")) for item in items if item.get("role") != "system"
        ]
        if isinstance(session, LosslessSession):
            await session.close()
        else:
            session.close()
    assert answers["sdk"] == answers["lossless"]
    assert len(answers["lossless items"]) == len(answers["sdk items"])


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
        assert len(after) == len(before) - 1
        assert (await session.session()).parent_id == first
        popped = await session.pop_item()
        assert popped is not None and popped["type"] == "function_call_output"
        await session.clear_session()
        assert await session.get_items() == []
        assert await session.pop_item() is None
    # Another object with the same id opens the session the id names now.
    async with LosslessSession("books-3", model=MODEL, db=db) as again:
        assert await again.get_items() == []
    async with LosslessSession("books-1x", model=MODEL, db=db) as other:
        await _turn(server, _agent(client), other, 2)
    async with LosslessSession("books-1x", model=MODEL, db=db) as other:
        assert "A-2" in json.dumps(await other.get_items())
        assert len(await other.get_items(limit=2)) == 2


def test_the_example_runs_offline() -> None:
    """``examples/openai_agents_session.py`` runs against the local server."""
    example = Path(__file__).parent.parent / "examples" / "openai_agents_session.py"
    done = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=120, check=True
    )
    assert "36 turns stored" in done.stdout
