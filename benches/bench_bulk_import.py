"""A long history handed over at once: the shape of every import, and of the first
``record_messages`` of an existing conversation.

1,060 OpenAI chat messages (265 turns of an instruction, a tool call, its output and
an answer; about 280,000 tokens) recorded with one ``record_messages`` call into a
window of 111,000 usable tokens (soft limit 66,600, goal 33,300), the local test
server summarising (``SummaryResponder``), then one ``compact()``: once with no
round while recording (the whole history is one span, as when rounds lag behind an
import) and once with rounds starting as the soft limit is crossed. Figures: how many
leaves each level wrote, the view's size after the import beside the round's goal,
and the time the import took. Target: no leaf falls to level 3 while the model's
summary shrinks its run well, and the view ends within the soft limit; for the span
at once, at no less than half the goal (a round aims at its goal; condensation does
the rest).

By default (``--benchmark-disable``) the import runs once, as a smoke test, at a
tenth of the size (106 messages into a window of a tenth, leaves of 2,000 tokens);
a real run imports the full history::

    .venv/bin/pytest benches/bench_bulk_import.py --benchmark-enable -p no:cacheprovider -s
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from lossless import Session
from lossless.config import CompactionConfig, Config, LLMConfig, ModelConfig
from lossless.testing import LocalLLMServer, SummaryResponder

MODEL = "openai/bench"
SUMMARY_MODEL = "openai/bench-summariser"
# 128,000 less a 8,808-token reply and the 8,192-token compaction reserve: 111,000.
WINDOW = 128_000
REPLY_TOKENS = 8_808
_WORDS_TEXT = (
    "payout ledger refund invoice currency settle batch retry webhook merchant account "
    "balance charge capture dispute schedule config service handler request response "
    "timeout error module function fixture decimal rounding passed failed"
)
WORDS = _WORDS_TEXT.split()


def conversation(turns: int, output_words: int, answer_words: int) -> list[dict[str, Any]]:
    """An agent's conversation: per turn an instruction, a tool call, its output (every
    tenth naming a file id) and an answer. Most of it is the answers' text, so pruning
    tool output cannot do a summary's work."""
    rng = random.Random(1729)

    def prose(words: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(words))

    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        output = prose(output_words)
        if turn % 10 == 0:
            output += f" wrote file_{turn * 2654435761 % 16**12:012x}"
        call_id = f"call_{turn}"
        call = {"name": "read_file", "arguments": json.dumps({"path": f"src/m{turn}.py"})}
        messages += [
            {"role": "user", "content": f"Task {turn}: {prose(12)}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": call}],
            },
            {"role": "tool", "tool_call_id": call_id, "content": output},
            {"role": "assistant", "content": prose(answer_words)},
        ]
    return messages


def import_history(db: Path, scale: int, automatic: bool) -> dict[str, Any]:
    """Records the conversation at ``1/scale`` of the full size and compacts; returns
    the figures. Without ``automatic`` rounds, no round starts while it is recorded."""
    figures: dict[str, Any] = {}

    async def main() -> None:
        with LocalLLMServer(responder=SummaryResponder()) as server:
            config = Config(
                model=ModelConfig(
                    context_limit=WINDOW // scale,
                    max_output_tokens=REPLY_TOKENS // scale,
                    token_correction=1.0,
                ),
                llm=LLMConfig(api_base=server.base_url, api_key="bench", timeout_s=30.0),
                compaction=CompactionConfig(
                    model=SUMMARY_MODEL,
                    model_context_limit=WINDOW,
                    output_budget=8_192 // scale,
                    leaf_chunk_tokens=20_000 // scale,
                    enabled=automatic,
                ),
            )
            async with await Session.create(model=MODEL, db=db, config=config) as session:
                messages = conversation(265 // scale, 150, 850)
                started = time.perf_counter()
                await session.record_messages(messages)
                if automatic:
                    # What the rounds the import started leave, once they are done.
                    await session.compaction.wait_for_pending()
                    figures["status"] = "rounds done"
                else:
                    figures["status"] = (await session.compact()).status
                figures["seconds"] = time.perf_counter() - started
                figures["messages"] = len(messages)
                figures["history_tokens"] = sum(
                    int(message.token_count or 0) for message in session.history()
                )
                rows = session.store.describe(session.id)
                figures["leaves"] = dict(
                    sorted(Counter(row["level"] for row in rows if row["kind"] == "leaf").items())
                )
                figures["condensed"] = sum(row["kind"] == "condensed" for row in rows)
                figures["view"] = session.view_tokens()
                figures["goal"] = session.compaction.goal
                figures["soft_limit"] = session.budget.soft_limit
                figures["usable"] = session.budget.usable

    anyio.run(main)
    return figures


@pytest.mark.benchmark(group="bulk-import")
@pytest.mark.parametrize("automatic", [False, True], ids=["at-once", "rounds-on"])
def test_bulk_import_is_summarised_not_truncated(
    benchmark: Any, record: Any, tmp_path: Path, automatic: bool
) -> None:
    scale = 1 if benchmark.enabled else 10
    runs: list[dict[str, Any]] = []

    def run() -> None:
        runs.append(import_history(tmp_path / f"import-{len(runs)}.db", scale, automatic))

    benchmark.pedantic(run, rounds=1, iterations=1)
    figures = runs[-1]
    rounds = "rounds on while recording" if automatic else "one compaction after"
    print(
        f"\nbulk import ({rounds}, 1/{scale} size): {figures['messages']} messages, "
        f"{figures['history_tokens']} tokens; leaves per level {figures['leaves']}, "
        f"{figures['condensed']} condensed; view {figures['view']} tokens (goal "
        f"{figures['goal']}, soft limit {figures['soft_limit']}, usable {figures['usable']}); "
        f"{figures['status']} in {figures['seconds']:.2f} s"
    )
    assert figures["leaves"].get(3, 0) == 0
    assert figures["view"] <= figures["soft_limit"]
    # Whether one compaction or the rounds the import started: a round aims at its
    # goal, not far below it.
    assert figures["goal"] // 2 <= figures["view"]
    record(
        benchmark,
        f"bulk import, {rounds}",
        target="no level-3 leaf; view within [goal / 2, soft limit]",
        leaves=figures["leaves"],
        view=figures["view"],
        goal=figures["goal"],
    )
