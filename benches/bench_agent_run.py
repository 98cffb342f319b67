"""What agents send today, over a long run: one instruction, then a tool call per step
whose assistant turn carries thinking blocks (Anthropic's, with their signatures) and
whose result carries a 1280×800 screenshot, as a browser agent's does.

The same run is made with text only, with the reasoning, and with reasoning and
screenshots, on a Claude model whose requests send the current tool loop's blocks
back and the newest screenshots inline (older ones as a reference line). Figures per
variant: the store's
size on disk, the request's size per turn (median bytes of its JSON and tokens), and
the time to assemble a request per turn (median of ``build_context``). Full runs take
500 steps; the smoke run 40.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import FULL, prose, tool_output
from lossless import MediaPart, Part, ReasoningPart, Session, ToolPart
from lossless.testing import screenshot

CLAUDE = "anthropic/claude-sonnet-4-5"
STEPS = 500 if FULL else 40
INSTRUCTION = "Find every broken link on the docs site and open one issue per page."


@dataclass
class RunFigures:
    """What one run measured."""

    store_bytes: int = 0
    request_bytes: list[int] = field(default_factory=list)
    request_tokens: list[int] = field(default_factory=list)
    assembly_s: list[float] = field(default_factory=list)

    def medians(self) -> tuple[float, float, float]:
        return (
            statistics.median(self.request_bytes),
            statistics.median(self.request_tokens),
            statistics.median(self.assembly_s),
        )


def _thinking(rng: random.Random, step: int) -> ReasoningPart:
    text = prose(rng, 400, 2_000)
    signature = "".join(rng.choice("ABCDEFGHabcdefgh0123456789+/") for _ in range(480))
    block = {"type": "thinking", "thinking": text, "signature": signature + f"{step:04d}=="}
    return ReasoningPart("anthropic", text, block)


def _step_parts(rng: random.Random, step: int, thinking: bool, screenshots: bool) -> list[Part]:
    call_id = f"toolu_{step:05d}"
    url = f"https://docs.example.com/page/{step}"
    parts: list[Part] = [_thinking(rng, step)] if thinking else []
    parts.append(
        ToolPart("browser_open", call_id, {"url": url}, output=tool_output(rng, 600, 3_000))
    )
    if screenshots:
        shot = screenshot(1280, 800, seed=step)
        parts.append(MediaPart(data=shot, caption=f"the page at {url}", call_id=call_id))
    return parts


def run_agent(db: Path, *, thinking: bool, screenshots: bool = False) -> RunFigures:
    """Records the run, assembling the request after every step."""
    rng = random.Random(29)
    figures = RunFigures()

    async def main() -> None:
        async with await Session.create(model=CLAUDE, db=db) as session:
            await session.record("user", INSTRUCTION)
            for step in range(STEPS):
                parts = _step_parts(rng, step, thinking, screenshots)
                await session.record("assistant", parts)
                await session.compaction.wait_for_pending()
                started = time.perf_counter()
                request = session.build_context()
                figures.assembly_s.append(time.perf_counter() - started)
                figures.request_bytes.append(len(json.dumps(request.messages)))
                figures.request_tokens.append(request.tokens)

    anyio.run(main)
    figures.store_bytes = sum(path.stat().st_size for path in db.parent.glob(db.name + "*"))
    return figures


@pytest.mark.benchmark(group="agent-run")
def test_a_run_with_thinking_and_screenshots_against_text_only(
    benchmark: Any, record: Any, tmp_path: Path
) -> None:
    runs: dict[str, RunFigures] = {}

    def run() -> None:
        runs["text"] = run_agent(tmp_path / "text.db", thinking=False)
        runs["thinking"] = run_agent(tmp_path / "thinking.db", thinking=True)
        runs["thinking and screenshots"] = run_agent(
            tmp_path / "screens.db", thinking=True, screenshots=True
        )

    benchmark.pedantic(run, rounds=1, iterations=1)
    for label, figures in runs.items():
        size, tokens, assembly = figures.medians()
        print(
            f"\nagent run, {STEPS} steps, {label}: store {figures.store_bytes / 1e6:.2f} MB, "
            f"request median {size / 1e3:.1f} KB / {tokens:.0f} tokens, "
            f"assembly median {assembly * 1e3:.3f} ms"
        )
    text, full = runs["text"], runs["thinking and screenshots"]
    record(
        benchmark,
        f"agent run of {STEPS} steps, thinking and screenshots against text only",
        target="figures only",
        store_ratio=round(full.store_bytes / text.store_bytes, 2),
        request_bytes_ratio=round(full.medians()[0] / text.medians()[0], 2),
        assembly_ratio=round(full.medians()[2] / text.medians()[2], 2),
    )
