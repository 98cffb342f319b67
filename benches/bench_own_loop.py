"""The own loop: an agent that calls its model itself and asks lossless for each
request, beside the same agent through ``send``.

Targets (issue 27):

1. Over a 2,000-turn replay (a user turn, 1-4 tool calls of varied size, an answer;
   a 32,000-token window; the task state changing every turn), the own loop
   (``record`` + ``await session.context()`` + its own litellm call) repeats at least
   as large a share of its input tokens from the previous request as the same
   replay through ``send``/``respond`` does, and at least 93%. Same data, same run,
   the project's local server on 127.0.0.1 as the model. The smoke run replays 60
   turns; ``LOSSLESS_BENCH_FULL=1`` replays 2,000.
2. ``await session.context()`` on an unchanged 1,000-message session: its median,
   beside ``build_context()``.
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import litellm
import pytest

from bench_prompt_cache import _output
from conftest import FULL, SEED, prose
from lossless import Session, ToolPart
from lossless.config import CompactionConfig, Config, LLMConfig, ModelConfig
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

TURNS = 2_000 if FULL else 60
WINDOW = 32_000
MODEL = "openai/bench-model"
TOOLS = ["read_file", "grep", "run_tests", "list_dir", "git_diff"]


@dataclass
class Share:
    """Input tokens sent, and those repeating the previous request's opening."""

    requests: int = 0
    input_tokens: int = 0
    stable_tokens: int = 0
    #: Tokens no earlier request held: what each request added at its end beyond
    #: the previous one. No cache can serve them, so they bound the share.
    new_tokens: int = 0
    previous: int = 0

    def add(self, tokens: int, stable: int) -> None:
        self.requests += 1
        self.input_tokens += tokens
        self.stable_tokens += stable
        self.new_tokens += min(tokens - stable, max(0, tokens - self.previous))
        self.previous = tokens

    @property
    def share(self) -> float:
        return self.stable_tokens / max(self.input_tokens, 1)

    @property
    def ceiling(self) -> float:
        """The largest share this replay could repeat: all but its new tokens."""
        return 1 - self.new_tokens / max(self.input_tokens, 1)


@dataclass(frozen=True)
class Turn:
    """One scripted turn: the question, the calls the model makes, their outputs,
    the answer and the task state after it."""

    question: str
    calls: list[tuple[str, str]]
    outputs: list[str]
    texts: list[str]
    answer: str
    task: str


def _script(turns: int) -> list[Turn]:
    rng = random.Random(SEED)
    script = []
    for turn in range(turns):
        calls = [(rng.choice(TOOLS), f"src/m{turn}_{step}.py") for step in range(rng.randint(1, 4))]
        script.append(
            Turn(
                question=f"Question {turn}: {prose(rng, 80, 400)}",
                calls=calls,
                outputs=[_output(rng) for _ in calls],
                texts=[prose(rng, 0, 120) for _ in calls],
                answer=prose(rng, 100, 600),
                task=f"Step {turn}: {prose(rng, 40, 160)}",
            )
        )
    return script


def _config(server: LocalLLMServer) -> Config:
    return Config(
        # The local server stands in for a hosted provider, which takes the default
        # rendering; `auto` would pick `strict` for an unknown model behind an api_base.
        model=ModelConfig(
            context_limit=WINDOW, max_output_tokens=1_000, token_correction=1.0, profile="default"
        ),
        llm=LLMConfig(api_base=server.base_url, api_key="test", num_retries=0),
        compaction=CompactionConfig(output_budget=1_000),
    )


def _enqueue(server: LocalLLMServer, turn: Turn) -> None:
    for (name, path), text in zip(turn.calls, turn.texts, strict=True):
        server.enqueue(Reply(text=text, tool_calls=[ToolCallSpec(name, {"path": path})]))
    server.enqueue(Reply(text=turn.answer))


async def _through_send(server: LocalLLMServer, db: Path, script: list[Turn]) -> Share:
    figures = Share()
    async with Session.open(model=MODEL, db=db, config=_config(server)) as session:
        await session.pin("Never touch legacy_billing/; amounts are integers in cents.")
        for turn in script:
            _enqueue(server, turn)
            result = await session.send(turn.question)
            figures.add(result.context_tokens, result.stable_prefix_tokens)
            for output in turn.outputs:
                call = result.tool_calls[0]
                await session.update_tool(call.call_id, status="completed", output=output)
                result = await session.respond()
                figures.add(result.context_tokens, result.stable_prefix_tokens)
            await session.set_task(turn.task)
    return figures


async def _through_own_loop(server: LocalLLMServer, db: Path, script: list[Turn]) -> Share:
    figures = Share()
    config = _config(server)
    async with Session.open(model=MODEL, db=db, config=config) as session:
        await session.pin("Never touch legacy_billing/; amounts are integers in cents.")
        for turn in script:
            _enqueue(server, turn)
            await session.record("user", turn.question)
            for output in [*turn.outputs, None]:
                request = await session.context()
                figures.add(request.tokens, request.stable_prefix_tokens)
                response = await litellm.acompletion(
                    model=MODEL,
                    messages=request.messages,
                    api_base=server.base_url,
                    api_key="test",
                )
                await session.report_usage(response.usage)
                # As an agent stores what it gets: the reply with its calls pending,
                # then each call's result once the tool ran.
                message = response.choices[0].message
                calls = message.tool_calls or []
                parts: list[Any] = [message.content] if message.content else []
                parts += [
                    ToolPart(c.function.name, c.id, c.function.arguments, status="pending")
                    for c in calls
                ]
                await session.record("assistant", parts)
                for call in calls:
                    await session.update_tool(call.id, status="completed", output=output)
            await session.set_task(turn.task)
    return figures


@pytest.mark.benchmark(group="own-loop")
@pytest.mark.timeout(3_600)
def test_own_loop_repeats_as_much_as_send(benchmark: Any, record: Any) -> None:
    script = _script(TURNS)
    figures: dict[str, Share] = {}

    def run() -> None:
        for name, replay in (("send", _through_send), ("own loop", _through_own_loop)):
            with LocalLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
                figures[name] = anyio.run(replay, server, Path(tmp) / "replay.db", script)

    benchmark.pedantic(run, rounds=1, iterations=1)
    send, own = figures["send"], figures["own loop"]
    print(
        f"\nown-loop replay, {TURNS} turns: own loop {own.share:.4f} (ceiling "
        f"{own.ceiling:.4f}, {own.requests} requests), send {send.share:.4f} (ceiling "
        f"{send.ceiling:.4f}, {send.requests} requests)"
    )
    assert own.requests == send.requests
    assert 0 < own.share < 1 and 0 < send.share < 1
    record(
        benchmark,
        f"own-loop replay {TURNS:,} turns: repeated share",
        ">= send's and >= 93%",
        own_loop=round(own.share, 4),
        send=round(send.share, 4),
        own_loop_ceiling=round(own.ceiling, 4),
        send_ceiling=round(send.ceiling, 4),
        requests=own.requests,
    )


def _session_of(db: Path, server: LocalLLMServer, messages: int) -> str:
    async def build() -> str:
        rng = random.Random(SEED)
        async with Session.open(
            model=MODEL,
            db=db,
            config=_config(server).model_copy(
                update={"model": ModelConfig(context_limit=1_000_000, max_output_tokens=1_000)}
            ),
        ) as session:
            await session.pin("Never touch legacy_billing/.")
            for _ in range(messages // 2):
                await session.record("user", prose(rng, 40, 200))
                await session.record("assistant", prose(rng, 40, 200))
            return session.id

    return anyio.run(build)


@pytest.mark.benchmark(group="own-loop-request")
@pytest.mark.parametrize("call", ["context", "build_context"])
def test_request_of_an_unchanged_session(
    benchmark: Any, record: Any, tmp_path: Path, call: str
) -> None:
    """What asking for the next request costs when nothing changed since the last."""
    with LocalLLMServer() as server:
        db = tmp_path / "request.db"
        session_id = _session_of(db, server, 1_000)

        async def measure() -> int:
            async with Session.open(model=MODEL, db=db, session_id=session_id) as session:
                session.build_context()
                if call == "context":
                    await session.context()

                    def once() -> int:
                        return anyio.from_thread.run(session.context).tokens
                else:

                    def once() -> int:
                        return session.build_context().tokens

                return await anyio.to_thread.run_sync(lambda: benchmark(once))

        tokens = anyio.run(measure)
    assert tokens > 0
    record(benchmark, f"{call}() on an unchanged 1,000-message session", "median", tokens=tokens)
