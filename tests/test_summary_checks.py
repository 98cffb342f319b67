"""Model summaries are checked, not trusted: what a summary drops of the user's
instructions and the identifiers they name is added back from the built-in pass,
and a summary that mostly repeats its prompt is refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import TEST_MODEL
from lossless import Session, ToolPart, _native
from lossless.compaction import prompts
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.testing import LocalLLMServer, Reply

pytestmark = pytest.mark.anyio

RULE = "Never touch legacy_billing/ and keep amounts in minor units."
LIMITS = ModelConfig(context_limit=12_000, max_output_tokens=1_000)
SUMMARY_MODEL = "openai/lossless-summariser"


def with_model(config_for: Callable[..., Config]) -> Config:
    compaction = CompactionConfig(
        output_budget=1_000, model=SUMMARY_MODEL, model_context_limit=100_000
    )
    return config_for(model=LIMITS, compaction=compaction)


async def fill(session: Session, turns: int = 20) -> None:
    """An instruction with a rule, then a run of tool calls, appended straight to the store."""
    store = session.store
    store.append_message(session.id, "user", [{"kind": "text", "text": f"Fix payouts. {RULE}"}])
    for turn in range(turns):
        part = ToolPart(
            "read_file", f"c{turn}", {"path": "src/payouts/client.py"}, output="x" * 900
        )
        wire: dict[str, Any] = {
            "kind": "tool",
            "name": part.name,
            "call_id": part.call_id,
            "input": '{"path": "src/payouts/client.py"}',
            "output": part.output,
            "status": "completed",
        }
        store.append_message(session.id, "assistant", [wire])
    store.append_message(session.id, "user", [{"kind": "text", "text": "carry on"}])
    store.append_message(session.id, "assistant", [{"kind": "text", "text": "on it"}])


async def test_a_summary_that_drops_a_rule_gets_it_back(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    server.responder = lambda request: Reply(text="Read the payout client several times.")
    async with await Session.create(model=TEST_MODEL, db=db, config=with_model(config_for)) as s:
        await fill(s)
        result = await s.compact()
        assert result.status == "completed", result.reason
        assert result.levels[0] == 1
        text = s.store.live_summaries(s.id)[0]["text"]
        assert text.startswith("Read the payout client several times.")
        assert "## Kept from the source" in text
        assert "legacy_billing/" in text and "src/payouts/client.py" in text


async def test_a_summary_that_repeats_its_prompt_is_refused(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    server.responder = lambda request: Reply(text=request["messages"][0]["content"][:600])
    async with await Session.create(model=TEST_MODEL, db=db, config=with_model(config_for)) as s:
        await fill(s)
        result = await s.compact()
        assert result.status == "completed", result.reason
        assert [attempt.split(":")[0] for attempt in result.attempts[:2]] == ["level 1", "level 2"]
        assert all("repeats its prompt" in attempt for attempt in result.attempts[:2])
        # The built-in summary took over, and it keeps the rule.
        text = s.store.live_summaries(s.id)[0]["text"]
        assert text.startswith("## Goal") and "legacy_billing/" in text


async def test_a_condensed_summary_keeps_its_childrens_rules(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with await Session.create(model=TEST_MODEL, db=db, config=with_model(config_for)) as s:
        native = s.store
        texts = [f"## Instructions and constraints\n- {RULE}\n", "## Goal\nShip the refund flow.\n"]
        for text in texts:
            native.append_message(s.id, "user", [{"kind": "text", "text": text}])
        first, second = (m.id for m in s.history())
        version = native.view_stats(s.id)["version"]
        native.commit_summary(s.id, texts[0], 3, [first], [], version)
        version = native.view_stats(s.id)["version"]
        native.commit_summary(s.id, texts[1], 3, [second], [], version)
        server.responder = lambda request: Reply(text="Refund flow shipped.")
        live = native.live_summaries(s.id)
        candidate = await s.compaction._summariser.condense(live, 400)
        assert candidate.level == 1
        assert "legacy_billing/" in candidate.text
        assert server.requests[0]["messages"][0]["content"] == prompts.CONDENSE1


def test_the_check_finds_what_a_summary_left_out() -> None:
    extractive = f"## Instructions and constraints\n- {RULE}\n\n## Relevant files\n- src/a.py\n"
    missing, echo, repetition = _native.check_summary(
        "Keeps amounts in minor units.", extractive, "Summarise."
    )
    assert missing == [RULE, "src/a.py"]
    assert echo == repetition == 0.0
    kept = _native.with_kept("Keeps amounts in minor units.", missing)
    assert _native.check_summary(kept, extractive, "")[0] == []


async def test_a_summary_stuck_in_a_loop_is_refused(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    server.responder = lambda request: Reply(text="Summary: " + "payout." * 200)
    async with await Session.create(model=TEST_MODEL, db=db, config=with_model(config_for)) as s:
        await fill(s)
        result = await s.compact()
        assert result.status == "completed", result.reason
        assert all("repeats itself" in attempt for attempt in result.attempts[:2])
        assert s.store.live_summaries(s.id)[0]["text"].startswith("## Goal")
