"""Facts planted in a long agent session, and the check that each can be read back.

An agent session of user instructions, assistant notes and tool calls with large
outputs, with facts planted in user turns, assistant notes and tool outputs spread
over the whole run (none in its last twentieth, so compaction takes them out of
view). Each fact names a service no other fact names, and is asked for the way an
agent asks: a question in its own words. :func:`check_facts` then requires of each
fact that ``grep`` puts the message holding it in its top 5, and that its text is
either in the active context or in ``expand(hit.covering_summary_id,
around=hit.owner_id, max_tokens=4_000)``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from lossless.parts import TextPart, ToolPart

if TYPE_CHECKING:
    from lossless.parts import Part
    from lossless.session import Session

__all__ = ["FactReport", "PlantedFact", "check_facts", "fact_session"]

_SYLLABLES = [
    "bra", "cor", "dun", "fel", "gav", "hol", "jix", "kem", "lor", "mav", "nep", "orb",
    "pel", "quo", "ras", "sil", "tov", "ump", "vex", "wal", "yor", "zen", "tir", "mok",
]  # fmt: skip
_FILLER = (
    "the build step reads the config then retries the upload and logs each attempt "
    "while the cache warms and the queue drains before the next deploy window opens"
)
_WORDS = _FILLER.split(" ")
_ATTRIBUTES = ["rollback token", "on-call owner", "maintenance window", "database port"]


@dataclass(frozen=True, slots=True)
class PlantedFact:
    """One planted fact: where it is, what it says, and how it is asked for."""

    turn: int
    where: Literal["user", "assistant", "tool"]
    text: str
    question: str
    message_id: str = ""


@dataclass
class FactReport:
    """How many planted facts were found and read back, and the ones that were not."""

    found: int = 0
    read_back: int = 0
    in_context: int = 0
    failures: list[str] = field(default_factory=list)


def _name(rng: random.Random, taken: set[str]) -> str:
    while True:
        name = "".join(rng.choice(_SYLLABLES) for _ in range(3))
        if name not in taken:
            taken.add(name)
            return name


def _filler(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def fact_session(
    messages: int, facts: int, *, seed: int = 7
) -> tuple[list[tuple[str, list[Part]]], list[PlantedFact]]:
    """The turns of a ``messages``-message agent session with ``facts`` planted
    facts, and the facts (their ``turn`` indexes the turns)."""
    rng = random.Random(seed)
    planted_at = sorted(rng.sample(range(2, messages * 19 // 20), facts))
    taken: set[str] = set()
    planned: dict[int, tuple[str, str]] = {}
    for turn in planted_at:
        service = _name(rng, taken)
        attribute = rng.choice(_ATTRIBUTES)
        value = f"{_name(rng, taken)}-{rng.randint(1000, 9999)}"
        text = f"The {attribute} of the {service} service is {value}."
        question = f"What is the {attribute} for the {service} service?"
        planned[turn] = (text, question)
    turns: list[tuple[str, list[Part]]] = []
    facts_out: list[PlantedFact] = []
    for turn in range(messages):
        fact = planned.get(turn)
        role, parts, where = _turn(rng, turn, fact[0] if fact else None)
        turns.append((role, parts))
        if fact is not None:
            facts_out.append(PlantedFact(turn, where, fact[0], fact[1]))
    return turns, facts_out


def _turn(
    rng: random.Random, turn: int, fact: str | None
) -> tuple[str, list[Part], Literal["user", "assistant", "tool"]]:
    if turn % 25 == 0:
        text = f"Next task {turn}: {_filler(rng, 20)}."
        return "user", [TextPart(f"{text} {fact}" if fact else text)], "user"
    if turn % 2 == 1:
        note = f"Working on it: {_filler(rng, 25)}."
        return "assistant", [TextPart(f"{note} {fact}" if fact else note)], "assistant"
    output = _filler(rng, rng.randint(150, 600))
    if fact:
        words = output.split(" ")
        cut = rng.randint(0, len(words))
        output = " ".join([*words[:cut], fact, *words[cut:]])
    call = ToolPart("read_file", f"call_{turn}", {"path": f"src/m{turn}.py"}, output=output)
    return "assistant", [call], "tool"


async def record_facts(
    session: Session, turns: list[tuple[str, list[Part]]], facts: list[PlantedFact]
) -> list[PlantedFact]:
    """Records ``turns`` into ``session``; returns ``facts`` with their message ids."""
    ids: dict[int, str] = {}
    wanted = {fact.turn for fact in facts}
    for index, (role, parts) in enumerate(turns):
        result = await session.record(role, parts)
        if index in wanted:
            ids[index] = result.message_id
    await session.compaction.wait_for_pending()
    # Turns recorded while the last background round ran can leave the view over its
    # threshold with no later turn to start another (a write waits only at twice the
    # budget): compact until it is under, as the next model turn would.
    await session.compaction.run_compaction()
    return [
        PlantedFact(fact.turn, fact.where, fact.text, fact.question, ids[fact.turn])
        for fact in facts
    ]


def check_facts(session: Session, facts: list[PlantedFact]) -> FactReport:
    """Grep each fact's question; require the message holding it in the top 5 and
    its text in the active context or in the focused expansion of its summary."""
    from lossless.recall import expand, grep

    report = FactReport()
    context = "\n".join(
        str(message.get("content") or "") for message in session.build_context().messages
    )
    for fact in facts:
        hits = grep(fact.question, session=session, limit=5)
        hit = next((hit for hit in hits if hit.owner_id == fact.message_id), None)
        if hit is None:
            report.failures.append(f"turn {fact.turn} ({fact.where}): not in the top 5")
            continue
        report.found += 1
        if fact.text in context:
            report.in_context += 1
            report.read_back += 1
            continue
        if hit.covering_summary_id is None:
            # Still in the view: its tool output may be pruned, the marker in the
            # context naming the part, and the output read back whole.
            if _pruned_and_read_back(session, hit.part_id, fact, context):
                report.read_back += 1
            else:
                report.failures.append(
                    f"turn {fact.turn} ({fact.where}): in the view but not in the context"
                )
            continue
        expansion = expand(
            hit.covering_summary_id, db=session, around=hit.owner_id, max_tokens=4_000
        )
        if any(fact.text in message.text for message in expansion.messages):
            report.read_back += 1
        else:
            report.failures.append(
                f"turn {fact.turn} ({fact.where}): not in the expansion of "
                f"{hit.covering_summary_id} around {hit.owner_id}"
            )
    return report


def _pruned_and_read_back(
    session: Session, part_id: str | None, fact: PlantedFact, context: str
) -> bool:
    """Whether the context holds the pruning marker of ``part_id`` and reading the
    fact's message back whole gives its text."""
    from lossless.recall import read

    if part_id is None or f"part {part_id}" not in context:
        return False
    page = read(fact.message_id, db=session, max_tokens=100_000)
    return fact.text in page.text
