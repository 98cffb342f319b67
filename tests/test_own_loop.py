"""The own loop: an agent that calls its model itself, records what happened and
asks lossless for the next request, gets every promise ``send`` keeps.

Every request, from :meth:`Session.build_context` (the peek) and from
:meth:`Session.context` (the awaited call), holds the newest user message, every
pinned fact and the system prompt, fits its budget, and passes the providers'
checks, however far compaction lags behind the loop.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import make_config
from lossless import Session, ToolPart
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.errors import InvalidInputError
from lossless.events import Event, EventName
from lossless.session import BuiltContext
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec
from lossless.testing.conformance import check_request

pytestmark = pytest.mark.anyio

MODEL = "openai/own-loop"
INSTRUCTION = "Migrate every module to the new API. Never touch legacy_billing/."
PIN = "Never deploy on Fridays."
IDENTITY = "You are the migration agent of the payments team."


def _config(server: LocalLLMServer, context_limit: int, max_output: int = 1_000) -> Config:
    return make_config(
        server,
        model=ModelConfig(
            context_limit=context_limit, max_output_tokens=max_output, token_correction=1.0
        ),
        compaction=CompactionConfig(output_budget=0),
    )


def _output(rng: random.Random, lines: int) -> str:
    words = ["module", "payout", "client", "import", "refactor", "test", "passed", "api"]
    return "\n".join(
        f"{n:4d}  " + " ".join(rng.choice(words) for _ in range(rng.randint(3, 9)))
        for n in range(lines)
    )


def _texts(context: BuiltContext) -> list[str]:
    texts = []
    for message in context.messages:
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(str(block.get("text", "")) for block in content)
    return texts


def _check_promises(context: BuiltContext, *, pins: list[str], instruction: str) -> None:
    texts = _texts(context)
    assert any(instruction in text for text in texts), "the instruction is in the request"
    system = context.messages[0]
    assert system["role"] == "system"
    assert IDENTITY in system["content"], "the system prompt leads the request"
    for pin in pins:
        assert pin in system["content"], f"the pin {pin!r} is in the system message"
    assert context.tokens <= context.budget, f"{context.tokens} over {context.budget}"


async def test_a_tool_run_after_one_instruction_keeps_every_promise(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    """One instruction, then 300 tool calls recorded back to back with no pause: a
    round cannot keep up, and every request still holds the instruction, the pin and
    the identity, fits the window and passes the providers' checks."""
    rng = random.Random(27)
    config = _config(server, 16_000)
    async with Session.open(
        model=MODEL, db=tmp_path / "loop.db", config=config, system_prompt=IDENTITY
    ) as session:
        await session.pin(PIN)
        await session.record("user", INSTRUCTION)
        left_out = 0
        fronts: list[str] = []
        for call in range(300):
            output = _output(rng, rng.randint(50, 450))
            part = ToolPart("read_file", f"call_{call}", {"path": f"src/m{call}.py"}, output=output)
            await session.record("assistant", [part])
            peek = session.build_context()
            _check_promises(peek, pins=[PIN], instruction=INSTRUCTION)
            context = await session.context()
            _check_promises(context, pins=[PIN], instruction=INSTRUCTION)
            left_out += peek.omitted > 0
            fronts.append(repr(context.messages[:3]))
            if call % 10 == 0 or context.omitted:
                check_request(context.messages)
        assert left_out > 0, "the loop outran compaction at least once"
    # The front of the request moves in steps, not on every request.
    moves = sum(1 for a, b in itertools.pairwise(fronts) if a != b)
    assert moves < 100, f"the front of the request moved {moves} times in 300 requests"


async def test_a_tool_run_through_respond_keeps_the_same_promises(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    """The same run through ``send`` and ``respond``: every request the server
    received held the instruction, the pin and the identity, within the window."""
    rng = random.Random(28)
    config = _config(server, 8_000)
    calls = 60
    for call in range(calls):
        server.enqueue(Reply(text="", tool_calls=[ToolCallSpec("read_file", {"n": call})]))
    server.enqueue(Reply(text="Every module is migrated."))
    async with Session.open(
        model=MODEL, db=tmp_path / "send.db", config=config, system_prompt=IDENTITY
    ) as session:
        await session.pin(PIN)
        result = await session.send(INSTRUCTION)
        while result.tool_calls:
            output = _output(rng, rng.randint(50, 300))
            await session.update_tool(
                result.tool_calls[0].call_id, status="completed", output=output
            )
            result = await session.respond()
            assert result.context_tokens <= session.budget.usable + session._system_tokens
    received = server.requests
    assert len(received) == calls + 1
    for body in received:
        messages = body["messages"]
        texts = [str(message.get("content") or "") for message in messages]
        assert any(INSTRUCTION in text for text in texts)
        assert IDENTITY in texts[0] and PIN in texts[0]


async def test_pins_are_sent_when_the_history_fills_the_window(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    """The arena is planned against what will be sent: a window the stored view
    overfills still carries the pin, and the request fits."""
    config = _config(server, 401, max_output=1)
    async with Session.open(
        model=MODEL, db=tmp_path / "tight.db", config=config, system_prompt=IDENTITY
    ) as session:
        for turn in range(30):
            await session.record("user", f"Question {turn}: what does step {turn} change?")
            await session.record("assistant", f"Step {turn} changes the payout client a bit.")
        await session.pin(PIN)
        context = session.build_context()
        _check_promises(context, pins=[PIN], instruction="Question 29")
        awaited = await session.context()
        _check_promises(awaited, pins=[PIN], instruction="Question 29")


async def test_the_arena_block_is_charged_at_its_rendered_cost(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    """Task, working memory and pins render with zone tags and a ``<context>``
    wrapper; what the request counts for them is what they cost, so it fits."""
    config = _config(server, 700, max_output=1)
    async with Session.open(
        model=MODEL, db=tmp_path / "block.db", config=config, system_prompt=IDENTITY
    ) as session:
        await session.record("user", INSTRUCTION)
        for call in range(12):
            part = ToolPart("grep", f"c{call}", {"q": "api"}, output=f"match {call} " * 20)
            await session.record("assistant", [part])
        await session.pin(PIN)
        await session.set_task("Migrate billing_api next; then the payout client.")
        await session.set_working_memory("Done: auth, users. Pending: billing_api, payouts.")
        context = await session.context()
        _check_promises(context, pins=[PIN], instruction=INSTRUCTION)
        counter_total = _counted(session, context.messages)
        assert counter_total <= context.budget


def _counted(session: Session, messages: list[dict[str, Any]]) -> int:
    """The request's tokens counted afresh: each message's content and its calls,
    and a few tokens of framing per message."""
    total = 0
    for message in messages:
        total += 4 + session._count(str(message.get("content") or ""))
        for call in message.get("tool_calls") or []:
            total += session._count(call["function"]["name"] + call["function"]["arguments"])
    return total


async def test_usage_reported_back_calibrates_the_budget(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    """Usage handed back from any provider's shape is read, published, and moves
    the budget's correction as a ``send`` would."""
    config = make_config(
        server,
        model=ModelConfig(context_limit=16_000, max_output_tokens=1_000),
    )
    seen: list[Event] = []
    async with Session.open(model=MODEL, db=tmp_path / "usage.db", config=config) as session:
        session.events.subscribe(seen.append, EventName.REQUEST_USAGE)
        await session.record("user", INSTRUCTION)
        context = await session.context()
        reported = await session.report_usage(
            {
                "input_tokens": context.tokens,
                "cache_read_input_tokens": context.tokens,
                "output_tokens": 3,
            }
        )
        assert reported.input_tokens == 2 * context.tokens
        assert session.budget.correction > 1.0
        assert seen[-1].payload["request_tokens"] == context.tokens
        assert seen[-1].payload["cached_input_tokens"] == context.tokens
        with pytest.raises(InvalidInputError):
            await session.report_usage({"total": 3})


@st.composite
def _steps(draw: st.DrawFn) -> list[tuple[str, int]]:
    kinds = ["user", "call", "call", "call", "failure", "pin", "task", "answer"]
    return draw(
        st.lists(
            st.tuples(st.sampled_from(kinds), st.integers(min_value=1, max_value=400)),
            min_size=1,
            max_size=40,
        )
    )


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=_steps(), window=st.sampled_from([640, 1_000, 2_000, 4_000]))
# A pin and a task whose tags cost more than the window had left beside the view.
@example(
    steps=[
        ("user", 1),
        ("user", 1),
        ("user", 1),
        ("call", 250),
        ("pin", 1),
        ("task", 1),
        ("call", 190),
    ],
    window=640,
)
# Failures whose tags and text cost more than planned, then a pin, at a tiny window.
@example(
    steps=[
        ("user", 1),
        ("user", 271),
        ("user", 221),
        ("user", 1),
        ("user", 1),
        ("user", 200),
        ("user", 261),
        ("user", 98),
        ("user", 99),
        ("user", 5),
        ("user", 336),
        ("user", 234),
        ("failure", 58),
        ("user", 368),
        ("user", 1),
        ("user", 311),
        ("user", 130),
        ("user", 156),
        ("user", 1),
        ("user", 270),
        ("user", 390),
        ("user", 1),
        ("user", 1),
        ("failure", 1),
        ("user", 1),
        ("call", 1),
        ("call", 112),
        ("user", 1),
        ("user", 1),
        ("user", 1),
        ("pin", 1),
        ("user", 1),
        ("user", 1),
        ("failure", 246),
    ],
    window=640,
)
def test_every_request_keeps_the_promises(
    server: LocalLLMServer, tmp_path_factory: pytest.TempPathFactory, steps: Any, window: int
) -> None:
    """Random loops of instructions, calls of any size, failures, pins, task
    changes and answers, in windows from tiny to roomy: every request holds the
    newest instruction, every pin and the identity, fits, and passes the checks."""
    db = tmp_path_factory.mktemp("prop") / "prop.db"

    async def run() -> None:
        config = _config(server, window, max_output=64)
        rng = random.Random(len(steps) * window)
        async with Session.open(
            model=MODEL, db=db, config=config, system_prompt=IDENTITY
        ) as session:
            instruction = "Start: tidy the repository."
            await session.record("user", instruction)
            pins: list[str] = []
            for at, (kind, size) in enumerate(steps):
                if kind == "user":
                    instruction = f"Instruction {at}: " + " ".join(["please"] * (size // 20))
                    await session.record("user", instruction)
                elif kind in ("call", "failure"):
                    status = "error" if kind == "failure" else "completed"
                    part = ToolPart(
                        "run",
                        f"c{at}",
                        {"n": at},
                        output=_output(rng, max(1, size // 10)),
                        status=status,
                        error="exit 1" if status == "error" else None,
                    )
                    await session.record("assistant", [part])
                elif kind == "pin" and len(pins) < 3:
                    pins.append(f"Rule {at}: keep file {size} read-only.")
                    await session.pin(pins[-1])
                elif kind == "task":
                    await session.set_task(f"Task {at}: finish part {size}.")
                else:
                    await session.record("assistant", f"Answer {at}: done with {size}.")
                for context in (session.build_context(), await session.context()):
                    _check_promises(context, pins=pins, instruction=instruction)
                    check_request(context.messages)

    anyio.run(run)


def test_the_example_loop_runs_offline() -> None:
    """``examples/own_loop.py``, the README's loop against the local server, runs to
    its answer with every call answered."""
    example = Path(__file__).parent.parent / "examples" / "own_loop.py"
    done = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=120, check=True
    )
    assert "'requests': 4" in done.stdout
    assert "legacy_billing/ untouched" in done.stdout
