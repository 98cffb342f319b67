"""The budget holds against the provider's own count: a margin until the provider
reports what a prompt cost, then the measured ratio."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import TEST_MODEL
from lossless import Session
from lossless.calibration import UNCALIBRATED_MARGIN, TokenCalibration, counts_exactly
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.testing import LocalLLMServer, Reply
from lossless.tokens import count_tokens

pytestmark = pytest.mark.anyio

WINDOW, REPLY, RESERVE = 6_000, 200, 500
# The provider's tokenizer counts this much more than tiktoken.
PROVIDER_RATIO = 1.3


def provider_count(request: dict[str, Any]) -> int:
    """What the provider of these tests says a request costs."""
    text = json.dumps(request["messages"])
    return int(count_tokens(text) * PROVIDER_RATIO)


def calibrated_config(config_for: Callable[..., Config], **model: Any) -> Config:
    return config_for(
        model=ModelConfig(context_limit=WINDOW, max_output_tokens=REPLY, **model),
        compaction=CompactionConfig(output_budget=RESERVE),
    )


def test_openai_models_count_exactly_and_others_start_with_a_margin() -> None:
    assert counts_exactly("gpt-4o") and counts_exactly("openai/gpt-4.1-mini")
    assert not counts_exactly("anthropic/claude-sonnet-4-5")
    assert not counts_exactly("openai/llama-3-8b")
    assert TokenCalibration("gpt-4o").correction == 1.0
    assert TokenCalibration("gemini/gemini-2.5-flash").correction == UNCALIBRATED_MARGIN
    assert TokenCalibration("anthropic/claude-sonnet-4-5", fixed=1.1).correction == 1.1


def test_a_larger_ratio_is_taken_at_once_and_a_smaller_one_halfway() -> None:
    calibration = TokenCalibration("openai/local")
    assert calibration.observe(1_000, 1_300)
    assert calibration.correction == pytest.approx(1.3 * 1.02)
    calibration.observe(1_000, 1_100)
    assert calibration.correction == pytest.approx(1.2 * 1.02)
    assert not calibration.observe(1_000, 10), "a broken report is ignored"
    assert not calibration.observe(0, 100)
    calibration.observe(1_000, 500)
    assert calibration.correction >= 1.0


async def test_the_budget_starts_with_a_margin_for_a_model_not_counted_exactly(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    config = calibrated_config(config_for)
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        room = WINDOW - REPLY - RESERVE
        assert session.budget.usable == int(room / UNCALIBRATED_MARGIN)


async def test_a_full_view_never_overflows_the_providers_window(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    counts: list[int] = []

    def responder(request: dict[str, Any]) -> Reply:
        counts.append(provider_count(request))
        return Reply(text="noted", prompt_tokens=counts[-1])

    server.responder = responder
    # No compaction: every request is assembled as full as the budget allows.
    config = config_for(
        model=ModelConfig(context_limit=WINDOW, max_output_tokens=REPLY),
        compaction=CompactionConfig(output_budget=RESERVE, enabled=False),
    )
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        for turn in range(25):
            await session.send(f"turn {turn}: " + "payout ledger refund invoice " * 60)
        assert session.build_context().omitted > 0, "the view was over the budget"
        # Every request after the first report fits the provider's window.
        assert max(counts[1:]) + REPLY <= WINDOW, counts
        assert session.budget.correction >= PROVIDER_RATIO


async def test_a_fixed_correction_ignores_reports(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    server.responder = lambda request: Reply(text="ok", prompt_tokens=100_000)
    config = calibrated_config(config_for, token_correction=1.0)
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        before = session.budget
        await session.send("hello")
        assert session.budget == before
