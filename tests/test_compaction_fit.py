"""Compaction fits the window it is given: a sweep of small to large windows, with the
built-in summariser and with a summarising model, and a long history handed over at
once, which gets real summaries rather than truncations."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import TEST_MODEL
from lossless import _native
from lossless.compaction import CompactionResult
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.events import EventName
from lossless.parts import TextPart, ToolPart
from lossless.session import Session
from lossless.testing import LocalLLMServer, SummaryResponder
from lossless.tokens import TokenCounter, merge_file_id_footer

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::UserWarning")]

SUMMARY_MODEL = "openai/lossless-summariser"
# The reply reserve of the sweep's windows; the compaction reserve is 0, so the usable
# budget is the window less this.
REPLY_TOKENS = 200
_VOCAB_TEXT = (
    "payment ledger refund invoice currency settle batch retry webhook merchant account "
    "balance charge capture dispute payout schedule config service handler request "
    "response timeout error value module function fixture decimal rounding"
)
VOCAB = _VOCAB_TEXT.split()


def prose(seed: int, words: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(VOCAB) for _ in range(words))


def file_id(n: int) -> str:
    return f"file_{n * 2654435761 % 16**12:012x}"


def window_config(
    config_for: Callable[..., Config], usable: int, *, model: bool, **compaction: Any
) -> Config:
    """A config whose usable budget is ``usable`` tokens."""
    fields: dict[str, Any] = {"output_budget": 0, **compaction}
    if model:
        fields.update(model=SUMMARY_MODEL, model_context_limit=100_000)
    return config_for(
        model=ModelConfig(
            context_limit=usable + REPLY_TOKENS,
            max_output_tokens=REPLY_TOKENS,
            token_correction=1.0,
        ),
        compaction=CompactionConfig(**fields),
    )


async def record_turn(session: Session, turn: int, output_words: int) -> None:
    """One instruction, a tool call with its output and an answer; every fifth
    instruction names a file id."""
    instruction = f"step {turn}: {prose(turn, 10)}"
    if turn % 5 == 0:
        instruction += f" see {file_id(turn)}"
    await session.record("user", instruction)
    call = ToolPart(
        name="search",
        call_id=f"call_{turn}",
        input={"query": prose(turn + 1_000, 3)},
        output=prose(-turn - 1, output_words),
    )
    await session.record("assistant", [TextPart("searching"), call])
    await session.record("assistant", prose(turn + 2_000, 12))


# What a summary must hold to say anything of its messages beside its file-id footer:
# a line of goal and a line of state.
USEFUL_SUMMARY_TOKENS = 64


def fit_exists(session: Session) -> bool:
    """Whether a view within the soft limit exists: the newest user message, the
    newest message, and a useful summary with its framing and the file-id footer
    of every file id of the session, together within it."""
    items = session.store.view_items(session.id)
    messages = [item for item in items if item["kind"] == "message"]
    newest_user = max(
        (item for item in messages if item["role"] == "user"), key=lambda item: item["seq"]
    )
    kept = {newest_user["id"]: newest_user["tokens"], messages[-1]["id"]: messages[-1]["tokens"]}
    ids = session.store.session_file_ids(session.id)
    footer = TokenCounter(TEST_MODEL).count(merge_file_id_footer("", ids))
    smallest = USEFUL_SUMMARY_TOKENS + _native.SUMMARY_FRAMING_TOKENS + footer
    return sum(kept.values()) + smallest <= session.budget.soft_limit


def check_fit(session: Session, result: CompactionResult, where: str) -> None:
    """The compaction did not stall while a fit existed, the view is within the soft
    limit, every live summary is in the request, and the request fits its budget."""
    if not fit_exists(session):
        return
    assert result.status != "stalled", f"{where}: {result.reason}"
    assert session.view_tokens() <= session.budget.soft_limit, f"{where}: {result.reason}"
    context = session.build_context()
    assert context.tokens <= context.budget, where
    sent = json.dumps(context.messages)
    for row in session.store.live_summaries(session.id):
        assert f"[summary {row['id']} " in sent, f"{where}: summary {row['id']} left out"


WINDOWS = (512, 600, 800, 1_000, 1_200, 2_000, 4_000, 16_000)


@pytest.mark.parametrize("model", [False, True], ids=["built-in", "model"])
@pytest.mark.parametrize("usable", WINDOWS)
async def test_compaction_fits_every_window_from_512_usable_tokens(
    server: LocalLLMServer,
    config_for: Callable[..., Config],
    db: Path,
    usable: int,
    model: bool,
) -> None:
    server.responder = SummaryResponder()
    config = window_config(config_for, usable, model=model)
    # Turns of about a tenth of the window, enough of them for the history to fill
    # the window three times over.
    output_words = max(8, usable // 12)
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        summarised = False
        for turn in range(36):
            await record_turn(session, turn, output_words)
            result = await session.compact()
            check_fit(session, result, f"usable {usable}, turn {turn}")
            summarised = summarised or bool(result.summary_ids)
        assert summarised, "the history outgrew the window and was summarised"


# -- a long history handed over at once ---------------------------------------------------


def conversation(turns: int, output_words: int) -> list[dict[str, Any]]:
    """An agent's conversation as OpenAI chat messages: an instruction, a tool call,
    its output and an answer per turn; every tenth output names a file id."""
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        output = prose(-turn - 1, output_words)
        if turn % 10 == 0:
            output += f" wrote {file_id(turn)}"
        call_id = f"call_{turn}"
        arguments = json.dumps({"path": f"src/module_{turn}.py"})
        messages += [
            {"role": "user", "content": f"Task {turn}: {prose(turn, 12)}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "read_file", "arguments": arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": output},
            {"role": "assistant", "content": prose(turn + 5_000, 20)},
        ]
    return messages


def leaves_by_level(session: Session) -> Counter[int]:
    rows = session.store.describe(session.id)
    return Counter(int(row["level"]) for row in rows if row["kind"] == "leaf")


async def test_a_long_history_recorded_at_once_gets_model_summaries(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    # The shape of an import, a tenth of the size: 1,060 messages of about 34,000
    # tokens into a window of 11,100 usable tokens (soft limit 6,660), leaves of at
    # most 2,000 tokens of source each. No round starts while they are recorded, so
    # one compaction finds the whole history, whatever the timing.
    server.responder = SummaryResponder()
    config = window_config(config_for, 11_100, model=True, leaf_chunk_tokens=2_000, enabled=False)
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        await session.record_messages(conversation(265, 90))
        assert session.view_tokens() > 3 * session.budget.usable
        result = await session.compact()
        assert result.status != "stalled", result.reason
        levels = leaves_by_level(session)
        leaves = sum(levels.values())
        assert leaves >= 10, levels
        # The model's summaries shrink their runs well: they are kept, not truncated.
        assert levels[3] <= leaves // 10, levels
        # The round aims at its goal: the view is not cut far below it.
        goal = session.compaction.goal
        assert goal // 2 <= session.view_tokens() <= session.budget.soft_limit
        context = session.build_context()
        assert context.tokens <= context.budget
        sent = json.dumps(context.messages)
        for turn in range(0, 265, 10):
            assert file_id(turn) in sent


async def test_a_long_history_recorded_with_rounds_on_is_summarised_as_one_span(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    # The same import with automatic rounds on: the round starts once the whole list
    # is stored, so it sees a history past the usable budget and aims at its goal,
    # where rounds started part way through the list would each cut to the tail.
    server.responder = SummaryResponder()
    config = window_config(config_for, 11_100, model=True, leaf_chunk_tokens=2_000)
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        triggered: list[int] = []
        session.events.subscribe(
            lambda event: triggered.append(event.payload["view_tokens"]),
            EventName.COMPACTION_TRIGGERED,
        )
        results = await session.record_messages(conversation(265, 90))
        await session.compaction.wait_for_pending()
        assert len(triggered) == 1 and triggered[0] > 3 * session.budget.usable
        assert results[-1].compaction_triggered
        assert not any(result.compaction_triggered for result in results[:-1])
        levels = leaves_by_level(session)
        assert levels[3] <= sum(levels.values()) // 10, levels
        goal = session.compaction.goal
        assert goal // 2 <= session.view_tokens() <= session.budget.soft_limit


# -- condensation without a model ---------------------------------------------------------


async def test_condensing_a_long_tool_run_without_a_model_keeps_the_newest_findings(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    # One instruction, then an agent's long run of tool calls, each step a finding, in a
    # small window: leaves pile up and are condensed by the built-in merge, which keeps
    # the newest findings of what it condenses (a truncation would keep the oldest).
    config = window_config(config_for, 1_500, model=False)
    step_of_seq: dict[int, int] = {}
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        await session.record(
            "user", "Port the ledger to decimal minor units. Never change the payout schedule."
        )
        condensed: list[Any] = []
        for step in range(80):
            call = ToolPart(
                name="read_file",
                call_id=f"call_{step}",
                input={"path": f"src/module_{step}.py"},
                output=prose(-step - 1, 60),
            )
            finding = f"I found that module_{step} rounds refunds with floats."
            recorded = await session.record("assistant", [TextPart(finding), call])
            step_of_seq[recorded.seq] = step
            await session.compact()
        rows = session.store.describe(session.id)
        condensed = [row for row in rows if row["kind"] == "condensed"]
        assert condensed, "the run was condensed"
        # Every condensation was the merge (level 1), none a truncation (level 3).
        assert {row["level"] for row in condensed} == {1}
        newest = max(condensed, key=lambda row: row["span_end_seq"])
        covered = [step for seq, step in step_of_seq.items() if seq <= newest["span_end_seq"]]
        assert min(covered) == 0 and max(covered) > 40
        # The newest step it condensed is in it; the oldest detail went first.
        assert f"module_{max(covered)}" in newest["text"], newest["text"]
        assert "module_0." not in newest["text"], newest["text"]
