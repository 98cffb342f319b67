"""Long agent sessions with planted, typed canaries, and the scorer of a request.

A canary is something a session states once and an agent must still honour much
later: a ``rule`` (prohibitions and escalations, worded in many ways), a
``constraint`` (a hard limit with a value), a ``fact`` (a code, an id, a host, a
path, a date, a name), a ``decision``, a ``goal`` or a ``preference``. Each carries a
random value no reader can guess (``QX7-4411-ZB``, ``$48,213``, ``2034-05-17``), so
a request is scored by exact matching on the value, whatever else it says.

:func:`canary_session` builds a deterministic session for a seed: Chat Completions
messages of real-looking agent work (see ``_agent_filler``), with canaries stated in
user messages (and decisions in assistant messages) at early, middle and late
positions. Some are restated later with a new value ("Update: the budget cap changed
to ..."): their latest value is the one in force, the earlier ones are stale.
:func:`score` then says, for each type, how many canaries a request's text carries
with their latest value, and how many it carries only with a stale one, i.e. presents
a superseded value as current.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from lossless.testing._agent_filler import Step, agent_steps
from lossless.testing._canary_templates import (
    CANARY_TYPES,
    RESTATEMENTS,
    TEMPLATES,
    CanaryType,
    Template,
)
from lossless.testing._canary_values import fresh_value

__all__ = [
    "CANARY_TYPES",
    "Canary",
    "CanarySession",
    "CanaryType",
    "Position",
    "Statement",
    "TypeScore",
    "canary_session",
    "carries",
    "message_text",
    "request_text",
    "score",
]

Position = Literal["early", "middle", "late"]

# Where in the session (as a share of its messages) a canary is first stated, and
# where a restatement of an early or a middle one goes: always a later round.
_SPANS: dict[Position, tuple[float, float]] = {
    "early": (0.02, 0.18),
    "middle": (0.40, 0.60),
    "late": (0.80, 0.95),
}
_RESTATED_AT: dict[Position, tuple[float, float]] = {
    "early": (0.45, 0.92),
    "middle": (0.70, 0.95),
}
_RESTATE_SHARE = 0.5
_ASSISTANT_DECISION_SHARE = 0.5
_PER_MESSAGE = 2
SYSTEM_PROMPT = "You are a careful coding agent working in the user's repository."


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of a canary's value: the message (its index in the session)
    that holds it, who said it, and its sentence."""

    index: int
    role: Literal["user", "assistant"]
    value: str
    sentence: str


@dataclass(frozen=True, slots=True)
class Canary:
    """A planted canary: its type, subject, where it was first stated, and every
    statement of its value, oldest first."""

    type: CanaryType
    subject: str
    position: Position
    template: str
    statements: tuple[Statement, ...]

    def stated(self, upto: int) -> tuple[Statement, ...]:
        """The statements among the first ``upto`` messages."""
        return tuple(s for s in self.statements if s.index < upto)


@dataclass(frozen=True, slots=True)
class CanarySession:
    """A generated session: its steps (each recorded at once: a user message, or an
    assistant message with its tool results) and its canaries."""

    seed: int
    system_prompt: str
    steps: tuple[Step, ...]
    canaries: tuple[Canary, ...]

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Every message, in order (the indexes statements refer to)."""
        return [message for step in self.steps for message in step]


@dataclass
class TypeScore:
    """For one type: canaries stated so far, those carried with their latest value,
    those restated so far, and those carried only with a stale value."""

    planted: int = 0
    latest: int = 0
    restated: int = 0
    stale: int = 0
    missing: list[str] = field(default_factory=list)

    def add(self, other: TypeScore) -> None:
        """Adds ``other``'s counts (another seed's) to these."""
        self.planted += other.planted
        self.latest += other.latest
        self.restated += other.restated
        self.stale += other.stale
        self.missing += other.missing


def carries(text: str, value: str) -> bool:
    """Whether ``text`` holds ``value`` as a whole token: not inside a longer number
    or word (``41 words`` is not in ``141 words``)."""
    pattern = rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])"
    return re.search(pattern, text) is not None


def message_text(message: Mapping[str, Any]) -> str:
    """The text of one Chat Completions message: its content (a string or text
    parts) and its tool calls' names and arguments."""
    content = message.get("content")
    pieces: list[str] = []
    if isinstance(content, str):
        pieces.append(content)
    elif isinstance(content, list):
        pieces += [str(p.get("text", "")) for p in content if isinstance(p, Mapping)]
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        pieces.append(f"{function.get('name', '')}({function.get('arguments', '')})")
    return "\n".join(pieces)


def request_text(messages: Iterable[Mapping[str, Any]]) -> str:
    """Everything a request's messages say, as one text to score."""
    return "\n\n".join(message_text(message) for message in messages)


def score(text: str, canaries: Sequence[Canary], upto: int) -> dict[CanaryType, TypeScore]:
    """Per type, how ``text`` (a request) carries the canaries stated among the first
    ``upto`` messages: with the latest value stated so far, or only with a stale one."""
    scores = {kind: TypeScore() for kind in CANARY_TYPES}
    for canary in canaries:
        stated = canary.stated(upto)
        if not stated:
            continue
        kept = scores[canary.type]
        kept.planted += 1
        latest, stale = stated[-1].value, [s.value for s in stated[:-1]]
        has_latest = carries(text, latest)
        kept.latest += has_latest
        if not has_latest:
            kept.missing.append(f"{canary.subject} ({canary.position})")
        if stale:
            kept.restated += 1
            kept.stale += not has_latest and any(carries(text, v) for v in stale)
    return scores


def canary_session(seed: int, *, messages: int = 1_500, per_position: int = 1) -> CanarySession:
    """A session of at least ``messages`` messages with ``per_position`` canaries of
    each type planted at each of the early, middle and late positions (at most 2:
    each canary of a type has a phrasing of its own). The same seed gives the same
    session."""
    if not 1 <= per_position <= 2:
        raise ValueError("per_position: 1 or 2")
    rng = random.Random(seed)
    steps = agent_steps(rng, messages)
    haystack = request_text(m for step in steps for m in step)
    planner = _Planner(rng, steps, haystack)
    picks = [(kind, *pick) for kind in CANARY_TYPES for pick in _picks(rng, kind, per_position)]
    # Planted in random order: a message takes at most two canaries, and the ones
    # planted last move on to later messages; no type should always be those.
    rng.shuffle(picks)
    canaries = sorted(
        (planner.plant(kind, template, position) for kind, template, position in picks),
        key=lambda c: (CANARY_TYPES.index(c.type), c.statements[0].index),
    )
    return CanarySession(seed, SYSTEM_PROMPT, tuple(steps), tuple(canaries))


def _picks(
    rng: random.Random, kind: CanaryType, per_position: int
) -> list[tuple[Template, Position]]:
    positions: list[Position] = ["early", "middle", "late"]
    templates = rng.sample(TEMPLATES[kind], 3 * per_position)
    return [(t, positions[i % 3]) for i, t in enumerate(templates)]


class _Planner:
    """Writes canary sentences into the steps' messages and records where."""

    def __init__(self, rng: random.Random, steps: list[Step], haystack: str) -> None:
        self._rng = rng
        self._steps = steps
        self._haystack = haystack
        self._taken: set[str] = set()
        starts, total = [], 0
        for step in steps:
            starts.append(total)
            total += len(step)
        self._starts, self._total = starts, total
        self._load: dict[int, int] = {}

    def _last(self, role: str) -> int:
        return max(i for i, step in enumerate(self._steps) if step[0]["role"] == role)

    def plant(self, kind: CanaryType, template: Template, position: Position) -> Canary:
        rng = self._rng
        value = fresh_value(template.kind, rng, self._taken, self._haystack)
        role: Literal["user", "assistant"] = "user"
        if kind == "decision" and rng.random() < _ASSISTANT_DECISION_SHARE:
            role = "assistant"
        sentence = template.text.format(value=value)
        first = self._state(
            role, sentence, value, int(rng.uniform(*_SPANS[position]) * self._total)
        )
        statements = [first]
        if position != "late" and rng.random() < _RESTATE_SHARE:
            new = fresh_value(template.kind, rng, self._taken, self._haystack)
            restated = rng.choice(RESTATEMENTS).format(subject=template.subject, value=new)
            at = int(rng.uniform(*_RESTATED_AT[position]) * self._total)
            statements.append(self._state("user", restated, new, max(at, first.index + 1)))
        return Canary(kind, template.subject, position, template.text, tuple(statements))

    def _state(
        self, role: Literal["user", "assistant"], sentence: str, value: str, target: int
    ) -> Statement:
        """Puts ``sentence`` into the first ``role`` message at or after the message
        ``target`` (a user message, or an assistant one with tool calls) that holds
        fewer than two canaries: people state a few things at once, not a dozen."""
        wanted = [
            i
            for i, step in enumerate(self._steps)
            if step[0]["role"] == role
            and (role == "user" or step[0].get("tool_calls"))
            and self._starts[i] >= target
        ]
        free = [i for i in wanted if self._load.get(i, 0) < _PER_MESSAGE]
        step_no = (free or wanted or [self._last(role)])[0]
        self._load[step_no] = self._load.get(step_no, 0) + 1
        message = self._steps[step_no][0]
        before = message.get("content") or ""
        # Stated before or after what the message already says, as people do both.
        if not before:
            message["content"] = sentence
        elif self._rng.random() < 0.5:
            message["content"] = f"{sentence} {before}"
        else:
            message["content"] = f"{before} {sentence}"
        return Statement(self._starts[step_no], role, value, sentence)
