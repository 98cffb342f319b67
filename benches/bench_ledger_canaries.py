"""What a request still carries after compaction: typed canaries through 5 rounds.

**What.** A long agent session (``lossless.testing.canaries``: a user instruction,
then many assistant tool calls, parallel ones too, with sizeable outputs, and now
and then a user remark) has canaries of six types planted at early, middle and late
positions: rules (prohibitions and escalations worded many ways), constraints (hard
limits with a value), facts, decisions, goals and preferences, each with a random
value. Some are restated later with a new value. The session is recorded through the
own-loop path (``Session.open`` with a window, then ``record_messages`` step by
step) in 5 rounds: a round records the next fifth of the session's steps, then runs
``await session.compact()``, then takes the request ``await session.context()``
gives. Each request is scored per canary type: how many canaries stated so far it
carries with their latest value, and how many it carries only with a stale,
superseded value (it presents a stale value as current). Beside it, "auto" records
the same rounds without calling ``compact()``: lossless compacting by itself at its
soft limit, as it does when nobody asks.

Windows: 10%, 20% and 30% of the transcript's tokens (the request's budget:
``context_limit`` is that plus the reply and compaction reserves), and the model's
own window ("normal"), where compaction is what ``/compact`` does once per round.
Two baselines written here get the same messages and the same budget (tokens counted
with the session's encoding): keep-the-tail truncation, and a running summary
buffer (each message a round drops adds its newest sentence to the summary, which
keeps its newest lines within a quarter of the budget; then the tail that fits).

**Run.** ``pytest benches/bench_ledger_canaries.py -s`` prints the table (3 seeds,
sessions of about 600 messages, one canary per type and position: about 15 s on 2
cores). With ``LOSSLESS_BENCH_FULL=1``: 8 seeds, about 1,500 messages, two per type
and position (about 3 minutes). Lossless's figures move a little from run to run: a
background round started while a step is recorded ends where the timing lets it.
Cells read ``kept/stated``: canaries stated so far that the request carries with
their latest value, summed over seeds; ``sN`` when N more are carried only with a
stale value.

**Targets** (not asserted: today's figures are far below them; the smoke run checks
only that the scoring works). With the normal window, every type at 100% at round 5
and no stale value presented as current; at a 20% window at least 85% of all
canaries and every type at least 70%; at a 10% window at least 40%.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.session import Session
from lossless.testing.canaries import (
    CANARY_TYPES,
    CanarySession,
    CanaryType,
    Position,
    TypeScore,
    canary_session,
    message_text,
    request_text,
    score,
)
from lossless.tokens import TokenCounter

FULL = os.environ.get("LOSSLESS_BENCH_FULL") == "1"
SEEDS = tuple(range(101, 109)) if FULL else (101, 102, 103)
MESSAGES = 1_500 if FULL else 600
PER_POSITION = 2 if FULL else 1
ROUNDS = 5
MODEL = "gpt-4o"
REPLY_TOKENS = 1_024
WINDOWS: tuple[tuple[str, float | None], ...] = (
    ("10%", 0.10),
    ("20%", 0.20),
    ("30%", 0.30),
    ("normal", None),
)
# "lossless" compacts once per round as asked (``compact()``, what ``/compact`` does);
# "auto" only records, compacting by itself at its soft limit as it does unasked.
SYSTEMS = ("lossless", "auto", "tail", "buffer")
POSITIONS: tuple[Position, ...] = ("early", "middle", "late")
# The running summary's share of the budget: a quarter leaves the tail most of it.
SUMMARY_SHARE = 0.25
# A message's framing in a chat request (role and separators), as providers count it.
MESSAGE_OVERHEAD = 4

Scores = dict[CanaryType, TypeScore]


@dataclass
class RoundResult:
    """One round's scores by type and by position of the canary's first statement,
    and the tokens of its request (counted one way for every system)."""

    scores: Scores
    positions: dict[Position, TypeScore]
    tokens: int


def _result(
    messages: Sequence[dict[str, Any]], canaries: CanarySession, upto: int, counter: TokenCounter
) -> RoundResult:
    text = request_text(messages)
    positions: dict[Position, TypeScore] = {}
    for position in POSITIONS:
        placed = [c for c in canaries.canaries if c.position == position]
        positions[position] = _sum(score(text, placed, upto).values())
    return RoundResult(score(text, canaries.canaries, upto), positions, _tokens(counter, messages))


# window -> system -> one result per round, summed over seeds.
Results = dict[str, dict[str, list[RoundResult]]]


def _tokens(counter: TokenCounter, messages: Sequence[dict[str, Any]]) -> int:
    return sum(counter.count(message_text(m)) + MESSAGE_OVERHEAD for m in messages)


def _round_ends(canaries: CanarySession) -> list[int]:
    """The step each round records up to: fifths of the session's steps."""
    steps = len(canaries.steps)
    return [round(steps * r / ROUNDS) for r in range(1, ROUNDS + 1)]


def _config(window: int | None) -> Config | None:
    """A window of ``window`` request tokens: the context limit is that, the reply
    and compaction's reserve; None keeps the model's own limits."""
    if window is None:
        return None
    reserve = REPLY_TOKENS + CompactionConfig().output_budget
    return Config(model=ModelConfig(context_limit=window + reserve, max_output_tokens=REPLY_TOKENS))


async def _lossless(
    canaries: CanarySession, window: int | None, db: Path, counter: TokenCounter, *, force: bool
) -> tuple[list[RoundResult], int]:
    """Records the session round by round, compacting (when ``force``) and scoring
    each request; returns the rounds and the request budget lossless used."""
    rounds: list[RoundResult] = []
    budget = 0
    config = _config(window)
    system = canaries.system_prompt
    async with Session.open(model=MODEL, db=db, config=config, system_prompt=system) as session:
        done = 0
        for end in _round_ends(canaries):
            for step in canaries.steps[done:end]:
                await session.record_messages(step)
            done = end
            if force:
                await session.compact()
            request = await session.context()
            budget = request.budget
            upto = sum(len(step) for step in canaries.steps[:end])
            rounds.append(_result(request.messages, canaries, upto, counter))
    return rounds, budget


def _tail(
    messages: Sequence[dict[str, Any]], budget: int, counter: TokenCounter
) -> list[dict[str, Any]]:
    """The newest messages that fit ``budget``, without a tool result cut from its call."""
    kept: list[dict[str, Any]] = []
    used = 0
    for message in reversed(messages):
        used += counter.count(message_text(message)) + MESSAGE_OVERHEAD
        if used > budget:
            break
        kept.append(message)
    kept.reverse()
    while kept and kept[0]["role"] == "tool":
        kept.pop(0)
    return kept


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def _newest_sentence(message: dict[str, Any]) -> str:
    pieces = [p for p in _SENTENCE_END.split(message_text(message)) if p.strip()]
    return pieces[-1].strip() if pieces else ""


class _SummaryBuffer:
    """A running summary: each message a round drops from the tail adds its newest
    sentence; the summary keeps its newest lines within ``SUMMARY_SHARE`` of the
    budget, and the request is the summary then the tail that fits the rest."""

    def __init__(self, counter: TokenCounter, budget: int) -> None:
        self._counter = counter
        self._cap = int(budget * SUMMARY_SHARE)
        self._budget = budget
        self._lines: list[tuple[str, int]] = []  # each line and its tokens
        self._dropped_to = 0  # messages before this index are in the summary

    def request(
        self, system: dict[str, Any], messages: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        room = self._budget - _tokens(self._counter, [system]) - self._cap
        tail = _tail(messages, room, self._counter)
        start = len(messages) - len(tail)
        for message in messages[self._dropped_to : start]:
            if sentence := _newest_sentence(message):
                self._lines.append((sentence, self._counter.count(sentence) + 1))
        self._dropped_to = max(self._dropped_to, start)
        used = sum(tokens for _, tokens in self._lines)
        while self._lines and used > self._cap:
            used -= self._lines.pop(0)[1]
        text = "\n".join(line for line, _ in self._lines)
        summary = {"role": "user", "content": "Summary so far:\n" + text}
        return [system, summary, *tail] if self._lines else [system, *tail]


def _baselines(
    canaries: CanarySession, budget: int, counter: TokenCounter
) -> dict[str, list[RoundResult]]:
    """The tail and the summary buffer, round by round, within ``budget``."""
    system = {"role": "system", "content": canaries.system_prompt}
    room = budget - _tokens(counter, [system])
    buffer = _SummaryBuffer(counter, budget)
    out: dict[str, list[RoundResult]] = {"tail": [], "buffer": []}
    for end in _round_ends(canaries):
        messages = [m for step in canaries.steps[:end] for m in step]
        requests = {
            "tail": [system, *_tail(messages, room, counter)],
            "buffer": buffer.request(system, messages),
        }
        for name, request in requests.items():
            out[name].append(_result(request, canaries, len(messages), counter))
    return out


def _add(total: list[RoundResult], rounds: list[RoundResult]) -> None:
    if not total:
        total.extend(
            RoundResult(
                {k: TypeScore() for k in CANARY_TYPES}, {p: TypeScore() for p in POSITIONS}, 0
            )
            for _ in rounds
        )
    for into, result in zip(total, rounds, strict=True):
        into.tokens = max(into.tokens, result.tokens)
        for kind in CANARY_TYPES:
            into.scores[kind].add(result.scores[kind])
        for position in POSITIONS:
            into.positions[position].add(result.positions[position])


async def _measure(root: Path) -> tuple[Results, dict[str, list[int]]]:
    """Every window and system over every seed; and each window's budget per seed."""
    counter = TokenCounter(MODEL)
    results: Results = {name: {s: [] for s in SYSTEMS} for name, _ in WINDOWS}
    budgets: dict[str, list[int]] = {name: [] for name, _ in WINDOWS}
    for seed in SEEDS:
        canaries = canary_session(seed, messages=MESSAGES, per_position=PER_POSITION)
        system = {"role": "system", "content": canaries.system_prompt}
        total = _tokens(counter, [system, *canaries.messages])
        for name, share in WINDOWS:
            window = None if share is None else int(total * share)
            for system_name, force in (("lossless", True), ("auto", False)):
                db = root / f"canaries-{seed}-{name.rstrip('%')}-{system_name}.db"
                rounds, budget = await _lossless(canaries, window, db, counter, force=force)
                _add(results[name][system_name], rounds)
            budgets[name].append(budget)
            for system_name, base in _baselines(canaries, budget, counter).items():
                _add(results[name][system_name], base)
    return results, budgets


def _cell(kept: TypeScore) -> str:
    cell = f"{kept.latest}/{kept.planted}"
    return f"{cell} s{kept.stale}" if kept.stale else cell


def _sum(scores: Iterable[TypeScore]) -> TypeScore:
    total = TypeScore()
    for kept in scores:
        total.add(kept)
    return total


def _overall(result: RoundResult) -> TypeScore:
    return _sum(result.scores.values())


def table(results: Results, budgets: dict[str, list[int]]) -> str:
    """The figures per window, system, type and round: ``latest/stated``, and
    ``sN`` when N canaries are carried only with a stale value."""
    lines = ["canaries carried with their latest value (sN: N carried only stale)"]
    header = f"{'system':<9} {'type':<11}" + "".join(
        f"{'round ' + str(r):>13}" for r in range(1, 6)
    )
    for name, _ in WINDOWS:
        low, high = min(budgets[name]), max(budgets[name])
        lines += ["", f"== window {name} (budget {low:,}-{high:,} tokens) ==", header]
        for system in SYSTEMS:
            rounds = results[name][system]
            for kind in CANARY_TYPES:
                cells = "".join(f"{_cell(r.scores[kind]):>13}" for r in rounds)
                lines.append(f"{system:<9} {kind:<11}{cells}")
            cells = "".join(f"{_cell(_overall(r)):>13}" for r in rounds)
            lines.append(f"{system:<9} {'all':<11}{cells}")
            for position in POSITIONS:
                cells = "".join(f"{_cell(r.positions[position]):>13}" for r in rounds)
                lines.append(f"{system:<9} {'(' + position + ')':<11}{cells}")
            tokens = "".join(f"{r.tokens:>13,}" for r in rounds)
            lines.append(f"{system:<9} {'tokens':<11}{tokens}")
    return "\n".join(lines)


def _percent(kept: TypeScore) -> float:
    return round(100 * kept.latest / kept.planted, 1) if kept.planted else 0.0


def _figures(results: Results) -> dict[str, float]:
    """Round 5's share per window, system and type, for the benchmark's summary."""
    figures: dict[str, float] = {}
    for name, _ in WINDOWS:
        for system in SYSTEMS:
            last = results[name][system][-1]
            for kind in CANARY_TYPES:
                figures[f"{name}_{system}_{kind}"] = _percent(last.scores[kind])
            figures[f"{name}_{system}_all"] = _percent(_overall(last))
    return figures


def _check_tail_at_full_window(counter: TokenCounter) -> None:
    """The scoring itself: a tail as large as the whole session carries every latest
    value and presents no stale one as current, in every round, and round 5 counts
    every canary."""
    canaries = canary_session(SEEDS[0], messages=MESSAGES, per_position=PER_POSITION)
    system = {"role": "system", "content": canaries.system_prompt}
    budget = _tokens(counter, [system, *canaries.messages])
    rounds = _baselines(canaries, budget, counter)["tail"]
    for result in rounds:
        for kind, kept in result.scores.items():
            assert kept.latest == kept.planted and kept.stale == 0, (kind, kept.missing)
    assert _overall(rounds[-1]).planted == len(canaries.canaries)


@pytest.mark.benchmark(group="ledger-canaries")
@pytest.mark.timeout(3_600 if FULL else 180)
def test_canaries_kept_through_compaction(
    benchmark: Any, record: Callable[..., None], tmp_path: Path
) -> None:
    measured: list[tuple[Results, dict[str, list[int]]]] = []
    benchmark.pedantic(lambda: measured.append(anyio.run(_measure, tmp_path)), rounds=1)
    results, budgets = measured[-1]
    print("\n" + table(results, budgets))
    record(
        benchmark,
        f"ledger canaries, {len(SEEDS)} seeds of {MESSAGES:,} messages",
        target="normal: 100% every type, no stale; 20%: >=85% all, >=70% each; 10%: >=40%",
        **_figures(results),
    )
    _check_tail_at_full_window(TokenCounter(MODEL))
    planted = 6 * 3 * PER_POSITION * len(SEEDS)
    for name, _ in WINDOWS:
        for system in SYSTEMS:
            assert _overall(results[name][system][-1]).planted == planted, (name, system)
