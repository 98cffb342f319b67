"""Questions about long agent conversations, asked the way people ask them.

:func:`generate_conversation` plants facts in known user turns of a demo trajectory
(user requests, assistant replies, tool calls with their outputs), each with a
question that asks for it in other words (other word forms, question words,
stopwords), and a distractor sentence that shares some of its words, planted in
another turn. :func:`measure` records the conversations into sessions under a
small window, so compaction moves the planted turns out of view, then asks every
question of :func:`lossless.recall.grep` and of a plain BM25 over the raw turns.

Everything is driven by ``random.Random(seed)``: a seed always gives the same
conversations and questions.
"""

from __future__ import annotations

import math
import random
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from lossless.demo.trajectory import Turn, generate_trajectory
from lossless.errors import InvalidInputError
from lossless.parts import FileRefPart, Part, TextPart, ToolPart

if TYPE_CHECKING:
    from lossless.config import Config
    from lossless.session import Session

__all__ = [
    "Conversation",
    "HitRates",
    "PlantedFact",
    "QuestionReport",
    "bm25_ranking",
    "generate_conversation",
    "measure",
]

# (statement, question, distractor); {slots} are filled from the seed.
_TEMPLATES: list[tuple[str, str, str]] = [
    (
        "Heads up: the staging database password rotates every {n} days, so scripts must "
        "read it from the vault each time.",
        "How often does the password for the staging database get rotated?",
        "The production database was restarted after the password manager outage.",
    ),
    (
        "We agreed on {word}-{animal} as the code name of the {quarter} release.",
        "What did we decide to name the {quarter} release?",
        "Release notes for the previous quarter still need a reviewer.",
    ),
    (
        "The flaky test in payhub/{area} only fails when TZ is set to {tz}.",
        "Which timezone setting makes the flaky {area} tests fail?",
        "A flaky network test in payhub/{area} was quarantined last sprint.",
    ),
    (
        "{person} is on call for payouts this week; page her on extension {n}.",
        "Who is the on-call person for payouts, and which extension should I page?",
        "{other} covered the payouts dashboard last month.",
    ),
    (
        "Refunds above {n} EUR need a second approval from finance.",
        "What is the limit for refunds that require a second approval?",
        "Finance asked for a list of every refund issued in EUR.",
    ),
    (
        "The nightly export job writes its CSV files to the bucket s3://{word}-{animal}.",
        "Where do the nightly exports get written to?",
        "The export of invoices to CSV is run by hand on Mondays.",
    ),
    (
        "The v1 webhooks endpoint is deprecated; every client must migrate by {month} {day}.",
        "When do clients have to finish migrating off the deprecated webhook endpoint?",
        "Webhook deliveries that fail are logged on the client dashboard.",
    ),
    (
        "The rate limiter allows {n} requests per minute for each merchant.",
        "How many requests can a merchant send per minute before the limiter kicks in?",
        "Merchant onboarding requests are reviewed within a day.",
    ),
    (
        "Pin Python 3.{minor} in the build image; 3.{other_minor} breaks the Decimal rounding.",
        "Which Python version should we pin for the build image?",
        "The build of the docs takes about {n} minutes.",
    ),
    (
        "Ledger reconciliation runs at {hour}:30 UTC every weekday.",
        "What time does the reconciliation of the ledger run?",
        "The ledger tables were vacuumed on Sunday.",
    ),
    (
        "Our Sentry project for payhub is named {word}-{animal}.",
        "What's the name of the Sentry project we use?",
        "Sentry alerts go to the payments channel.",
    ),
    (
        "Invoice uploads are capped at {n} invoices per batch.",
        "How large can a batch of uploaded invoices be?",
        "A batch of payouts failed on Tuesday and was retried.",
    ),
    (
        "Every database migration has to be reviewed by {person} before it is merged.",
        "Who needs to review migrations before we merge them?",
        "The migration guide was merged into the wiki by {other}.",
    ),
    (
        "Our provider of FX rates is {provider}; the API key is kept in the {word} vault.",
        "Which provider supplies our FX rates?",
        "FX conversions are rounded to the minor unit.",
    ),
    (
        "The feature flag {word}_checkout switches on the new checkout flow.",
        "Which feature flag enables the new checkout?",
        "The checkout page loads slowly on mobile.",
    ),
    (
        "Support tickets should be sent to {word}@payhub.example; it is watched during "
        "business hours.",
        "What address do support tickets go to?",
        "Support asked about a missing invoice.",
    ),
    (
        "Staging deploys are frozen from {month} {day} until the audit is over.",
        "When does the deploy freeze for staging start?",
        "The audit team wants read access to staging.",
    ),
    (
        "Our SLA promises payouts within {small} business days.",
        "How many business days does the SLA allow for a payout?",
        "Payout reports are emailed every business day.",
    ),
    (
        "Encryption keys live in the HSM cluster called {word}-{animal}.",
        "Where are the encryption keys stored?",
        "Rotating the API keys is on next week's list.",
    ),
    (
        "Logs older than {n} days are deleted by the retention job.",
        "How long do we keep logs before the retention job deletes them?",
        "The retention of invoices is governed by tax law.",
    ),
    (
        "The load test peaked at {n} transactions per second before the pool saturated.",
        "What throughput did the load testing reach, in transactions per second?",
        "Transactions in GBP are settled the next day.",
    ),
    (
        "Customer {person} was charged twice on {month} {day}; refund them manually.",
        "Which customer was double charged and needs a manual refund?",
        "Customers are charged in their local currency.",
    ),
    (
        "The backup of the primary Postgres cluster finishes around {hour}:00 UTC.",
        "At what hour do the Postgres backups complete?",
        "Postgres was upgraded on the replica first.",
    ),
    (
        "The mobile app expects payout amounts as integers in minor units, never as floats.",
        "How does the mobile app want amounts of payouts to be sent?",
        "The mobile team is hiring.",
    ),
]

_SLOTS: dict[str, Callable[[random.Random], str]] = {
    "n": lambda rng: str(rng.randint(12, 9_000)),
    "small": lambda rng: str(rng.randint(2, 9)),
    "minor": lambda rng: str(rng.randint(10, 13)),
    "other_minor": lambda rng: str(rng.randint(7, 9)),
    "hour": lambda rng: f"{rng.randint(0, 23):02d}",
    "day": lambda rng: str(rng.randint(1, 28)),
    "month": lambda rng: rng.choice(["March", "April", "June", "August", "October"]),
    "quarter": lambda rng: rng.choice(["Q1", "Q2", "Q3", "Q4"]),
    "word": lambda rng: rng.choice(["amber", "cobalt", "saffron", "umber", "teal", "ochre"]),
    "animal": lambda rng: rng.choice(["heron", "otter", "lynx", "marten", "ibis", "stoat"]),
    "area": lambda rng: rng.choice(["fx", "ledger", "billing", "payouts", "webhooks"]),
    "tz": lambda rng: rng.choice(["Pacific/Auckland", "Asia/Kolkata", "America/St_Johns"]),
    "person": lambda rng: rng.choice(["Priya Raman", "Lena Vogt", "Ana Souza", "Mei Tanaka"]),
    "other": lambda rng: rng.choice(["Tom Okafor", "Jonas Berg", "Sara Lind"]),
    "provider": lambda rng: rng.choice(["Fixer", "OpenRates", "Currencylayer"]),
}


@dataclass(frozen=True, slots=True)
class PlantedFact:
    """A fact stated in user turn ``turn`` (a message index, from 1) and a question about it."""

    turn: int
    statement: str
    question: str


@dataclass(frozen=True, slots=True)
class Conversation:
    turns: list[Turn]
    facts: list[PlantedFact]


def _fill(template: str, values: dict[str, str]) -> str:
    return template.format(**values)


def _slot_values(rng: random.Random) -> dict[str, str]:
    return {name: draw(rng) for name, draw in sorted(_SLOTS.items())}


def generate_conversation(*, turns: int = 300, facts: int = 10, seed: int = 0) -> Conversation:
    """A demo trajectory of ``turns`` messages with ``facts`` facts (at most one per
    template) planted in user turns of its first three quarters, where compaction
    reaches them, and a distractor for each in another user turn."""
    if facts > len(_TEMPLATES) or turns < 8 * facts:
        raise InvalidInputError(f"facts: {facts} do not fit {turns} turns")
    rng = random.Random(seed)
    trajectory = generate_trajectory(turns=turns, seed=seed + 11)
    user_turns = [turn.index for turn in trajectory if turn.role == "user"]
    early = [index for index in user_turns if 4 < index <= turns * 3 // 4]
    chosen = rng.sample(early, 2 * facts)
    planted: list[PlantedFact] = []
    extra: dict[int, str] = {}
    for number, template in enumerate(rng.sample(_TEMPLATES, facts)):
        values = _slot_values(rng)
        statement, question, distractor = (_fill(text, values) for text in template)
        turn, other = chosen[2 * number], chosen[2 * number + 1]
        extra[turn], extra[other] = statement, distractor
        planted.append(PlantedFact(turn, statement, question))
    planted.sort(key=lambda fact: fact.turn)
    return Conversation([_with_text(turn, extra.get(turn.index)) for turn in trajectory], planted)


def _with_text(turn: Turn, sentence: str | None) -> Turn:
    """The turn with ``sentence`` said before its own text."""
    if sentence is None:
        return turn
    parts = list(turn.parts)
    for position, part in enumerate(parts):
        if isinstance(part, TextPart):
            parts[position] = TextPart(f"{sentence} {part.text}")
            return replace(turn, parts=tuple(parts))
    return replace(turn, parts=(TextPart(sentence), *parts))


# --- the baseline ---------------------------------------------------------------

_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _turn_text(parts: Sequence[Part]) -> str:
    pieces: list[str] = []
    for part in parts:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, ToolPart):
            pieces += [part.name, str(part.input), part.output or "", part.error or ""]
        elif isinstance(part, FileRefPart):
            pieces += [part.path, part.summary]
    return "\n".join(pieces)


def bm25_ranking(
    documents: Sequence[str], query: str, k1: float = 1.2, b: float = 0.75
) -> list[int]:
    """Indexes of ``documents`` holding a word of ``query``, best first: Okapi BM25
    over lowercased words, without stemming or stopwords (what a plain BM25 does)."""
    bags = [Counter(_words(document)) for document in documents]
    lengths = [sum(bag.values()) for bag in bags]
    average = sum(lengths) / max(len(bags), 1)
    terms = set(_words(query))
    idf = {}
    for term in terms:
        df = sum(1 for bag in bags if term in bag)
        idf[term] = math.log((len(bags) - df + 0.5) / (df + 0.5) + 1)
    scores: list[tuple[float, int]] = []
    for index, (bag, length) in enumerate(zip(bags, lengths, strict=True)):
        score = 0.0
        for term in terms & bag.keys():
            tf = bag[term]
            score += idf[term] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))
        if score > 0:
            scores.append((-score, index))
    return [index for _, index in sorted(scores)]


# --- measuring ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HitRates:
    """Shares of questions with an answer turn (or a summary covering it) in the top k."""

    top5: float
    top10: float


@dataclass(frozen=True, slots=True)
class QuestionReport:
    questions: int
    #: Share of answer turns that compaction moved out of the view.
    out_of_view: float
    lossless: HitRates
    baseline: HitRates
    #: The question with every word required (what grep did before ranking any word).
    all_words: HitRates
    #: Median seconds to answer one question: lossless grep, and the baseline (which
    #: builds its index from the raw turns for every question).
    lossless_seconds: float
    baseline_seconds: float


def _rates(ranks: list[int | None]) -> HitRates:
    count = max(len(ranks), 1)
    return HitRates(
        top5=sum(1 for rank in ranks if rank is not None and rank < 5) / count,
        top10=sum(1 for rank in ranks if rank is not None and rank < 10) / count,
    )


def _first(flags: Sequence[bool]) -> int | None:
    return next((index for index, flag in enumerate(flags) if flag), None)


async def measure(
    directory: Path, *, conversations: int = 2, turns: int = 300, facts: int = 10, seed: int = 0
) -> QuestionReport:
    """Records each conversation into a session with a 6,000-token window (built-in
    extractive summaries), then asks every planted question."""
    asked = _Asked()
    for number in range(conversations):
        conversation = generate_conversation(turns=turns, facts=facts, seed=seed + number)
        await _ask(directory / f"questions-{number}.db", conversation, asked)
    total = len(asked.ranks["lossless"])
    return QuestionReport(
        questions=total,
        out_of_view=asked.hidden / max(total, 1),
        lossless=_rates(asked.ranks["lossless"]),
        baseline=_rates(asked.ranks["baseline"]),
        all_words=_rates(asked.ranks["all_words"]),
        lossless_seconds=statistics.median(asked.seconds["lossless"] or [0.0]),
        baseline_seconds=statistics.median(asked.seconds["baseline"] or [0.0]),
    )


@dataclass
class _Asked:
    """Where each way of searching put each question's first answer, and its time."""

    ranks: dict[str, list[int | None]] = field(
        default_factory=lambda: {"lossless": [], "baseline": [], "all_words": []}
    )
    seconds: dict[str, list[float]] = field(
        default_factory=lambda: {"lossless": [], "baseline": []}
    )
    hidden: int = 0


def _small_window_config() -> Config:
    """A 6,000-token window, compaction scaled to it, the built-in summariser."""
    from lossless.config import CompactionConfig, Config, ModelConfig

    return Config(
        model=ModelConfig(context_limit=6_000, max_output_tokens=800),
        compaction=CompactionConfig(
            output_budget=600,
            summary_max_tokens=400,
            prune_protect_tokens=1_200,
            prune_minimum_tokens=400,
        ),
    )


async def _ask(path: Path, conversation: Conversation, asked: _Asked) -> None:
    from lossless.recall import describe
    from lossless.session import Session

    session = await Session.create(model="gpt-4o", db=path, config=_small_window_config())
    try:
        for turn in conversation.turns:
            await session.record(turn.role, list(turn.parts))
        await session.compaction.wait_for_pending()
        history = session.history()
        nodes = describe(session)
        spans = {node.id: (node.span_start_seq, node.span_end_seq) for node in nodes}
        live = [spans[node.id] for node in nodes if node.live]
        documents = [_turn_text(message.parts) for message in history]
        for fact in conversation.facts:
            # Messages are recorded in order, one per turn: turn i is the i-th message.
            answer = history[fact.turn - 1]
            asked.hidden += any(start <= answer.seq <= end for start, end in live)

            _ask_one(session, fact.question, _answered_by(answer.id, answer.seq, spans), asked)
            started = time.perf_counter()
            order = bm25_ranking(documents, fact.question)[:10]
            asked.seconds["baseline"].append(time.perf_counter() - started)
            asked.ranks["baseline"].append(_first([history[i].id == answer.id for i in order]))
    finally:
        await session.close()


def _answered_by(
    message_id: str, seq: int, spans: dict[str, tuple[int, int]]
) -> Callable[[str], bool]:
    """Whether a hit's owner is the answer turn or a summary whose span holds it."""

    def answers(owner_id: str) -> bool:
        span = spans.get(owner_id)
        return owner_id == message_id or (span is not None and span[0] <= seq <= span[1])

    return answers


def _ask_one(
    session: Session, question: str, answers: Callable[[str], bool], asked: _Asked
) -> None:
    """Asks grep as it ranks now, and with every word required (as it did before)."""
    from lossless.recall import grep

    started = time.perf_counter()
    hits = grep(question, session=session, limit=10)
    asked.seconds["lossless"].append(time.perf_counter() - started)
    asked.ranks["lossless"].append(_first([answers(hit.owner_id) for hit in hits]))
    required = " ".join(f"+{word}" for word in _words(question))
    strict = grep(required, session=session, limit=10)
    asked.ranks["all_words"].append(_first([answers(hit.owner_id) for hit in strict]))
