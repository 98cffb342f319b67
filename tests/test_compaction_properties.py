"""Invariants of compaction over random sessions and compaction sequences.

After every compaction (explicit, or started by the soft threshold):

* the assembled context never exceeds its budget, and the whole view fits it;
* every file id ever stored in the session appears in the assembled context;
* every stored message is reachable exactly once from the view: directly, or
  through one chain of live summaries (``describe`` sources);
* the summary DAG is acyclic, and superseded summaries point at their condensation;
* stored messages and parts are unchanged except for tombstones, and only
  completed tool outputs carry one.
"""

from __future__ import annotations

import json
import random
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from conftest import TEST_MODEL, make_config
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.parts import part_from_wire
from lossless.session import Session
from lossless.testing import LocalLLMServer, Reply, SummaryResponder

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

_WORDS_TEXT = (
    "ledger refund invoice settle batch retry webhook merchant balance charge capture dispute "
    "payout schedule config service handler request timeout error module fixture decimal"
)
WORDS = _WORDS_TEXT.split()
FILE_IDS = [f"file_{n * 2654435761 % 16**10:010x}" for n in range(1, 31)]


def words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(count))


# -- scenarios ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    role: str
    text_words: int
    text_file: int | None = None
    tool: str | None = None  # tool name
    tool_status: str = "completed"
    output_words: int = 0
    output_file: int | None = None
    input_file: int | None = None
    file_ref: int | None = None


@dataclass(frozen=True)
class Compact:
    pass


@dataclass(frozen=True)
class Scenario:
    context_limit: int
    protect_user_turns: int
    prune_protect_tokens: int
    prune_minimum_tokens: int
    summary_max_tokens: int
    max_rounds: int
    seed: int
    # The compaction model the summarising-model test names: one that mostly works,
    # or one that always fails (so every summary is a level-3 truncation).
    model: str = "openai/lossless-summariser"
    steps: list[Turn | Compact] = field(default_factory=list)


file_index = st.one_of(st.none(), st.integers(0, len(FILE_IDS) - 1))


@st.composite
def turns(draw: st.DrawFn, role: str) -> Turn:
    if role == "user":
        return Turn(
            "user",
            draw(st.integers(1, 120)),
            text_file=draw(file_index),
            file_ref=draw(st.one_of(st.none(), st.integers(0, len(FILE_IDS) - 1))),
        )
    tool = draw(st.sampled_from([None, None, "read_file", "grep", "skill"]))
    return Turn(
        "assistant",
        draw(st.integers(0, 120)),
        text_file=draw(file_index),
        tool=tool,
        tool_status=draw(st.sampled_from(["completed"] * 6 + ["error", "running"])),
        output_words=draw(st.integers(0, 300)),
        output_file=draw(file_index),
        input_file=draw(file_index),
    )


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    steps: list[Turn | Compact] = []
    assistant_run = 0
    for _ in range(draw(st.integers(4, 160))):
        kind = draw(st.sampled_from(["user", "assistant", "assistant"] * 4 + ["compact"]))
        if kind == "compact":
            steps.append(Compact())
            continue
        # At most two assistant messages in a row, so the protected tail stays small.
        if kind == "assistant" and assistant_run < 2 and steps:
            steps.append(draw(turns("assistant")))
            assistant_run += 1
        else:
            steps.append(draw(turns("user")))
            assistant_run = 0
    steps.append(Compact())
    return Scenario(
        context_limit=draw(st.sampled_from([9_000, 12_000, 20_000])),
        protect_user_turns=draw(st.integers(1, 2)),
        prune_protect_tokens=draw(st.sampled_from([0, 500, 2_000, 40_000])),
        prune_minimum_tokens=draw(st.sampled_from([0, 300, 20_000])),
        summary_max_tokens=draw(st.sampled_from([300, 1_000, 2_048])),
        max_rounds=draw(st.integers(1, 4)),
        seed=draw(st.integers(0, 2**32)),
        model=draw(st.sampled_from(["openai/lossless-summariser", "openai/lossless-unavailable"])),
        steps=steps,
    )


# -- the model of what was stored -----------------------------------------------------------


def normalized(part: dict[str, Any]) -> tuple[Any, ...]:
    """A stored or sent part without its id and tombstone state."""
    return tuple(
        sorted((key, value) for key, value in part.items() if key not in ("id", "compacted"))
    )


class Runner:
    def __init__(self, session: Session, scenario: Scenario) -> None:
        self.session = session
        self.rng = random.Random(scenario.seed)
        self.expected: list[tuple[str, list[dict[str, Any]]]] = []
        self.running: list[tuple[int, int, str]] = []  # (message index, part index, call id)
        self.calls = 0
        self.compactions = 0

    def parts_for(self, turn: Turn) -> list[dict[str, Any]]:
        text = words(self.rng, turn.text_words) if turn.text_words else "ok"
        if turn.text_file is not None:
            text += f" see {FILE_IDS[turn.text_file]}"
        parts: list[dict[str, Any]] = [{"kind": "text", "text": text}]
        if turn.file_ref is not None:
            file = FILE_IDS[turn.file_ref]
            parts.append(
                {
                    "kind": "file_ref",
                    "file_id": file,
                    "path": f"logs/{file}.log",
                    "file_type": "text",
                    "token_count": 40_000,
                    "summary": "a large log",
                }
            )
        if turn.tool is not None:
            self.calls += 1
            call_id = f"call_{self.calls}"
            arguments = (
                '{"path": "a.py"}'
                if turn.input_file is None
                else f'{{"id": "{FILE_IDS[turn.input_file]}"}}'
            )
            output = words(self.rng, turn.output_words)
            if turn.output_file is not None:
                output += f" {FILE_IDS[turn.output_file]}"
            tool: dict[str, Any] = {
                "kind": "tool",
                "name": turn.tool,
                "call_id": call_id,
                "input": arguments,
                "status": turn.tool_status,
                "output": None if turn.tool_status == "running" else output,
                "error": "it broke" if turn.tool_status == "error" else None,
            }
            if turn.tool_status == "running":
                self.running.append((len(self.expected), len(parts), call_id))
            parts.append(tool)
        return parts

    async def record(self, turn: Turn) -> None:
        parts = self.parts_for(turn)
        self.expected.append((turn.role, parts))
        await self.session.record(turn.role, [part_from_wire(part) for part in parts])
        # Calls finish a little later, their output possibly naming a file.
        while len(self.running) > 1 or (self.running and self.rng.random() < 0.5):
            message, index, call_id = self.running.pop(0)
            output = words(self.rng, self.rng.randint(0, 300))
            if self.rng.random() < 0.5:
                output += f" wrote {self.rng.choice(FILE_IDS)}"
            await self.session.update_tool(call_id, status="completed", output=output)
            part = self.expected[message][1][index]
            part["status"], part["output"] = "completed", output

    async def compact(self) -> None:
        await self.session.compaction.wait_for_pending()
        self.check()
        result = await self.session.compact()
        assert result.status in ("completed", "not_needed"), result
        assert self.session.view_tokens() <= self.session.budget.soft_limit
        self.compactions += 1
        self.check()

    async def settle(self) -> None:
        """Let a background round finish; check what it left."""
        if self.session.compaction.pending:
            await self.session.compaction.wait_for_pending()
            result = self.session.compaction.last_result
            assert result is not None
            assert result.status in ("completed", "not_needed"), result
            assert self.session.view_tokens() <= self.session.budget.soft_limit
            self.compactions += 1
            self.check()

    # -- invariants -------------------------------------------------------------------

    def check(self) -> None:
        session, store = self.session, self.session.store
        context = session.build_context()
        assert context.tokens <= context.budget
        view = store.view_stats(session.id)
        if view["tokens"] <= session.budget.usable:
            assert context.omitted == 0
            text = "\n".join(self.context_text(context.messages))
            for file_id in store.session_file_ids(session.id):
                assert file_id in text, f"{file_id} fell out of the active context"
        self.check_reachability()
        self.check_history()

    @staticmethod
    def context_text(messages: list[dict[str, Any]]) -> Iterator[str]:
        for message in messages:
            if message.get("content"):
                yield str(message["content"])
            for call in message.get("tool_calls") or ():
                yield call["function"]["arguments"]

    def check_reachability(self) -> None:
        store, sid = self.session.store, self.session.id
        nodes = {node["id"]: node for node in store.describe(sid)}
        # Acyclic, and every condensed parent points at its condensation.
        state: dict[str, int] = {}

        def visit(node_id: str) -> None:
            assert state.get(node_id) != 1, f"cycle through {node_id}"
            if state.get(node_id) == 2:
                return
            state[node_id] = 1
            node = nodes[node_id]
            if node["source_kind"] == "summary":
                for source in node["sources"]:
                    assert nodes[source]["superseded_by"] == node_id
                    visit(source)
            state[node_id] = 2

        for node_id in nodes:
            visit(node_id)
        reached: dict[str, int] = {}
        for item in store.view_items(sid):
            stack = [item["id"]]
            if item["kind"] == "summary":
                assert nodes[item["id"]]["live"]
            while stack:
                current = stack.pop()
                if current in nodes:
                    stack.extend(nodes[current]["sources"])
                else:
                    reached[current] = reached.get(current, 0) + 1
        complete = [
            message["id"] for message in store.history(sid) if message["status"] == "complete"
        ]
        assert sorted(reached) == sorted(complete)
        assert set(reached.values()) <= {1}, "a message is reachable twice"

    def check_history(self) -> None:
        history = self.session.store.history(self.session.id)
        assert len(history) == len(self.expected)
        for stored, (role, parts) in zip(history, self.expected, strict=True):
            assert stored["role"] == role
            assert [normalized(part) for part in stored["parts"]] == [
                normalized(part) for part in parts
            ]
            for part in stored["parts"]:
                if part["compacted"]:
                    assert part["kind"] == "tool" and part["status"] == "completed"


def config_for(scenario: Scenario, base: Config, model: str | None) -> Config:
    compaction = CompactionConfig(
        output_budget=1_000,
        model=model,
        model_context_limit=16_000 if model else None,
        protect_user_turns=scenario.protect_user_turns,
        prune_protect_tokens=scenario.prune_protect_tokens,
        prune_minimum_tokens=scenario.prune_minimum_tokens,
        summary_max_tokens=scenario.summary_max_tokens,
        max_rounds=scenario.max_rounds,
    )
    return base.model_copy(
        update={
            "model": ModelConfig(context_limit=scenario.context_limit, max_output_tokens=1_000),
            "compaction": compaction,
        }
    )


async def play(scenario: Scenario, config: Config, db: Path) -> None:
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        runner = Runner(session, scenario)
        for step in scenario.steps:
            if isinstance(step, Compact):
                await runner.compact()
            else:
                await runner.record(step)
                await runner.settle()
        # Finish every call still running and compact once more.
        while runner.running:
            _, _, call_id = runner.running[0]
            message, index, _ = runner.running.pop(0)
            await session.update_tool(call_id, status="completed", output="done")
            part = runner.expected[message][1][index]
            part["status"], part["output"] = "completed", "done"
        await runner.compact()
        stats = session.store.stats()
        nodes = session.store.describe(session.id)
        event(f"summaries: {min(stats['summaries'], 10) // 3 * 3}+")
        event(f"tombstones: {'some' if stats['tombstones'] else 'none'}")
        event(f"condensations: {min(sum(node['kind'] == 'condensed' for node in nodes), 2)}")
        event(f"levels: {sorted({node['level'] for node in nodes})}")


class MixedResponder:
    """Mostly short structured summaries; some failures and replies too big to use,
    so that level 3 (and the condensations its larger summaries lead to) runs too.
    The choice depends only on the request, so examples replay exactly."""

    def __init__(self) -> None:
        self.summary = SummaryResponder()

    def __call__(self, request: dict[str, Any]) -> Reply:
        if request["model"] == "lossless-unavailable":
            return Reply(text="unavailable", status=503)
        roll = zlib.crc32(json.dumps(request["messages"], sort_keys=True).encode()) % 10
        if roll < 3:
            return Reply(text="overloaded", status=500)
        if roll < 6:
            return Reply(text=" ".join(WORDS) * 400)
        return self.summary(request)


@pytest.fixture(scope="module")
def llm_server() -> Iterator[LocalLLMServer]:
    with LocalLLMServer(responder=MixedResponder()) as server:
        yield server


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios())
def test_compaction_invariants_with_the_extractive_summariser(
    scenario: Scenario, llm_server: LocalLLMServer
) -> None:
    requests = len(llm_server.requests)
    with tempfile.TemporaryDirectory() as tmp:
        config = config_for(scenario, make_config(llm_server), None)
        anyio.run(play, scenario, config, Path(tmp) / "db.sqlite")
    assert len(llm_server.requests) == requests, "no model is called without a compaction model"


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios())
def test_compaction_invariants_with_a_summarising_model(
    scenario: Scenario, llm_server: LocalLLMServer
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = make_config(llm_server).model_copy(
            update={"llm": make_config(llm_server).llm.model_copy(update={"num_retries": 0})}
        )
        config = config_for(scenario, base, scenario.model)
        anyio.run(play, scenario, config, Path(tmp) / "db.sqlite")
