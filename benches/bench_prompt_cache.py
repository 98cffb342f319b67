"""Prompt-cache stability: how much of each request repeats the previous request's
opening over a long agent replay, and what telling it costs a turn.

Targets: over a 2,000-request agent replay (tool calls with outputs of varied size,
a 32,000-token window, so compaction runs often), with the arena on, >= 97% of all
input tokens sent repeat the previous request's prefix; computing
``stable_prefix_tokens`` <= 50 µs a turn. The smoke run (pytest benches) replays
150 requests; ``LOSSLESS_BENCH_FULL=1`` replays 2,000.

The replay talks to the project's local server through litellm, as an agent would:
a question, then tool calls the model asks for, each result stored with
``update_tool`` and the model asked again, until it answers; then the next question.
The share is counted twice: by the session (``TurnResult.stable_prefix_tokens``
over ``context_tokens``) and by the server, which compares the messages it receives
(characters of the shared opening messages over all characters).
"""

from __future__ import annotations

import random
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import FULL, SEED, prose, tool_output
from lossless import Session
from lossless.config import CompactionConfig, Config, LLMConfig, ModelConfig
from lossless.events import Event, EventName
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

REQUESTS = 2_000 if FULL else 150
# The default soft threshold, and (full runs) one that compacts later and less often.
SOFT_THRESHOLDS = [0.6, 0.85] if FULL else [0.6]
WINDOW = 32_000
MODEL = "openai/bench-model"
TOOLS = ["read_file", "grep", "run_tests", "list_dir", "git_diff"]
# Output sizes in bytes (about four to a token): mostly small, some large.
OUTPUT_SIZES = [(80, 800, 0.55), (800, 6_000, 0.35), (6_000, 20_000, 0.10)]
FAILURE_RATE = 0.03
STEPS_PER_QUESTION = (3, 14)


@dataclass
class Replay:
    """What one replay measured."""

    requests: int = 0
    input_tokens: int = 0
    stable_tokens: int = 0
    server_chars: int = 0
    server_shared_chars: int = 0
    compactions: list[dict[str, Any]] = field(default_factory=list)
    after_compaction: list[float] = field(default_factory=list)
    # Input tokens not repeated from the previous request: what the request adds
    # (its growth over the previous one), and what it sends again because something
    # before it changed (a compaction, the arena's block).
    fresh_new: int = 0
    fresh_resent: int = 0
    # What was sent again, by what came before the request: a compaction, a new
    # question (the arena's block moves after it), or neither.
    resent_after_compaction: int = 0
    resent_new_question: int = 0
    largest_request: int = 0

    @property
    def ceiling(self) -> float:
        """The most this workload can repeat under this configuration, whatever the
        compaction: the content each request adds at its end was in no earlier
        request, and no request is larger than the largest one sent, so at least
        ``fresh_new / (requests * largest_request)`` of the input is new."""
        return 1 - self.fresh_new / max(self.requests * self.largest_request, 1)

    @property
    def share(self) -> float:
        return self.stable_tokens / max(self.input_tokens, 1)

    @property
    def server_share(self) -> float:
        return self.server_shared_chars / max(self.server_chars, 1)


def _output(rng: random.Random) -> str:
    pick, total = rng.random(), 0.0
    for low, high, weight in OUTPUT_SIZES:
        total += weight
        if pick <= total:
            return tool_output(rng, low, high)
    return tool_output(rng, *OUTPUT_SIZES[-1][:2])


def _config(server: LocalLLMServer, soft_threshold: float = 0.6) -> Config:
    return Config(
        # The local server stands in for a hosted provider: rendered as for one.
        model=ModelConfig(
            context_limit=WINDOW, max_output_tokens=1_000, token_correction=1.0, profile="default"
        ),
        llm=LLMConfig(api_base=server.base_url, api_key="test", num_retries=0),
        compaction=CompactionConfig(output_budget=1_000, soft_threshold=soft_threshold),
    )


async def _replay(server: LocalLLMServer, db: Path, requests: int, soft: float) -> Replay:
    rng = random.Random(SEED)
    figures = Replay()
    compacted = False

    def on_compaction(event: Event) -> None:
        nonlocal compacted
        if event.payload.get("summary_ids") or event.payload.get("pruned_parts"):
            figures.compactions.append(event.payload)
            compacted = True

    async with Session.open(
        model=MODEL, db=db, config=_config(server, soft), system_prompt=prose(rng, 1_200, 1_600)
    ) as session:
        session.events.subscribe(on_compaction, EventName.COMPACTION_COMPLETED)
        await session.pin("Never touch legacy_billing/; amounts are integers in cents.")
        await session.set_task("Refactor the payout client: retries and idempotency keys.")
        turn = previous_tokens = 0
        while figures.requests < requests:
            steps = rng.randint(*STEPS_PER_QUESTION)
            question = f"Question {turn}: {prose(rng, 80, 400)}"
            call = None
            for step in range(steps + 1):
                if figures.requests >= requests:
                    break
                last = step == steps
                name = rng.choice(TOOLS)
                reply = (
                    Reply(text=prose(rng, 100, 600))
                    if last
                    else Reply(
                        text=prose(rng, 0, 120),
                        tool_calls=[ToolCallSpec(name, {"path": f"src/m{turn}_{step}.py"})],
                    )
                )
                server.enqueue(reply)
                if call is None:
                    result = await session.send(question)
                else:
                    result = await session.respond()
                figures.requests += 1
                figures.input_tokens += result.context_tokens
                figures.stable_tokens += result.stable_prefix_tokens
                fresh = result.context_tokens - result.stable_prefix_tokens
                grown = min(fresh, max(0, result.context_tokens - previous_tokens))
                figures.fresh_new += grown
                figures.fresh_resent += fresh - grown
                if compacted:
                    figures.resent_after_compaction += fresh - grown
                elif call is None:
                    figures.resent_new_question += fresh - grown
                figures.largest_request = max(figures.largest_request, result.context_tokens)
                previous_tokens = result.context_tokens
                if compacted:
                    figures.after_compaction.append(
                        result.stable_prefix_tokens / max(result.context_tokens, 1)
                    )
                    compacted = False
                if not result.tool_calls:
                    break
                call = result.tool_calls[0]
                failed = rng.random() < FAILURE_RATE
                await session.update_tool(
                    call.call_id,
                    status="error" if failed else "completed",
                    output=_output(rng),
                    error="exit status 1" if failed else None,
                )
            turn += 1
        await session.compaction.wait_for_pending()
    for report in server.prefixes:
        figures.server_chars += report.chars
        figures.server_shared_chars += report.shared_chars
    return figures


@pytest.mark.benchmark(group="prompt-cache")
@pytest.mark.parametrize("soft", SOFT_THRESHOLDS)
@pytest.mark.timeout(1_800)
def test_agent_replay_stable_prefix_share(benchmark: Any, record: Any, soft: float) -> None:
    figures: list[Replay] = []

    def run() -> None:
        with LocalLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "replay.db"
            figures.append(anyio.run(_replay, server, db, REQUESTS, soft))

    benchmark.pedantic(run, rounds=1, iterations=1)
    replay = figures[-1]
    invalidated = [c["invalidated_tokens"] for c in replay.compactions if c["invalidated_tokens"]]
    extra = {
        "requests": replay.requests,
        "input_tokens": replay.input_tokens,
        "stable_share": round(replay.share, 4),
        "server_share": round(replay.server_share, 4),
        "compactions": len(replay.compactions),
        "invalidated_total": sum(invalidated),
        "invalidated_median": int(statistics.median(invalidated)) if invalidated else 0,
        "invalidated_max": max(invalidated, default=0),
        "after_compaction_min_share": round(min(replay.after_compaction, default=1.0), 4),
        "new_share": round(replay.fresh_new / replay.input_tokens, 4),
        "resent_share": round(replay.fresh_resent / replay.input_tokens, 4),
        "resent_after_compaction": round(replay.resent_after_compaction / replay.input_tokens, 4),
        "resent_new_question": round(replay.resent_new_question / replay.input_tokens, 4),
        "mean_request": replay.input_tokens // replay.requests,
        "mean_new_tokens": replay.fresh_new // replay.requests,
        "largest_request": replay.largest_request,
        "ceiling": round(replay.ceiling, 4),
        "summaries_written": sum(len(c["summary_ids"]) for c in replay.compactions),
        "prunes": sum(1 for c in replay.compactions if c["pruned_parts"]),
    }
    print(f"\nprompt-cache replay, soft threshold {soft}: {extra}")
    print(f"invalidated tokens per compaction: {invalidated}")
    assert replay.requests == REQUESTS
    assert 0 < replay.share < 1
    name = f"prompt-cache replay {REQUESTS:,} requests, soft {soft}"
    record(benchmark, name, ">= 97% stable", **extra)


@pytest.mark.benchmark(group="prompt-cache")
def test_stable_prefix_per_turn(benchmark: Any, record: Any, tmp_path: Path) -> None:
    """What a turn adds to tell its stable prefix: the request's print (tools,
    system message and block hashed; the view items' hashes, taken once when each
    item was rendered, copied) and its comparison with the previous request's."""
    from lossless import Store, _native

    db = tmp_path / "print.db"

    async def build() -> str:
        with LocalLLMServer() as server:
            async with Session.open(model=MODEL, db=db, config=_config(server)) as session:
                rng = random.Random(SEED)
                for _ in range(150):
                    await session.record("user", prose(rng, 100, 300))
                    await session.record("assistant", prose(rng, 100, 300))
                return session.id

    session_id = anyio.run(build)
    items = Store(db).native.assemble_placed(session_id, 1_000_000)[5]
    tools = '[{"type":"function","function":{"name":"read_file","parameters":{}}}]' * 20
    system = "You are the payments agent of the billing team. " * 80
    block = "<context>task state, tool failures and recall hits</context> " * 60
    previous = _native.RequestPrint(items, tools, 400, system, 1_000, block, 900, False)

    def turn() -> int:
        current = _native.RequestPrint(items, tools, 400, system, 1_000, block, 900, False)
        return current.common_prefix_tokens(previous)

    stable = benchmark(turn)
    assert stable == previous.tokens > 0
    record(benchmark, "stable_prefix_tokens per turn (300 items)", "<= 50 µs", stable=stable)
