"""The canary generator and scorer of ``benches/bench_ledger_canaries.py``: sessions
are deterministic per seed, every type has several phrasings, each value is found
only where it was planted, and a request is scored latest, stale or missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from lossless.session import Session
from lossless.testing._canary_templates import RESTATEMENTS, TEMPLATES
from lossless.testing.canaries import (
    CANARY_TYPES,
    Canary,
    canary_session,
    carries,
    message_text,
    request_text,
    score,
)

SEEDS = (1, 2, 3)


def _restated(canaries: tuple[Canary, ...]) -> Canary:
    return next(c for c in canaries if len(c.statements) > 1)


def test_each_type_has_at_least_four_phrasings() -> None:
    for kind in CANARY_TYPES:
        texts = {template.text for template in TEMPLATES[kind]}
        assert len(texts) >= 4, kind
        # Subjects name what a restatement supersedes: one canary per subject.
        assert len({t.subject for t in TEMPLATES[kind]}) == len(TEMPLATES[kind]), kind
    assert len(RESTATEMENTS) >= 4


def test_rules_are_worded_beyond_must_and_never() -> None:
    plain = [
        t.text for t in TEMPLATES["rule"] if not {"must", "never"} & set(t.text.lower().split())
    ]
    assert len(plain) >= 4, plain


def test_same_seed_same_session_other_seed_other_session() -> None:
    first, again = canary_session(7, messages=300), canary_session(7, messages=300)
    assert first.messages == again.messages
    assert first.canaries == again.canaries
    other = canary_session(8, messages=300)
    assert other.messages != first.messages
    assert {c.statements[0].value for c in other.canaries}.isdisjoint(
        c.statements[0].value for c in first.canaries
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_every_value_is_only_where_it_was_planted(seed: int) -> None:
    session = canary_session(seed, messages=500, per_position=2)
    texts = [message_text(m) for m in session.messages]
    assert len(session.canaries) == 6 * 3 * 2
    for canary in session.canaries:
        for statement in canary.statements:
            holders = [i for i, text in enumerate(texts) if carries(text, statement.value)]
            assert holders == [statement.index], (canary.subject, statement.value)
            assert statement.sentence in texts[statement.index]


@pytest.mark.parametrize("seed", SEEDS)
def test_positions_and_restatements(seed: int) -> None:
    session = canary_session(seed, messages=600)
    total = len(session.messages)
    for canary in session.canaries:
        first = canary.statements[0].index / total
        low = {"early": 0.02, "middle": 0.40, "late": 0.80}[canary.position]
        assert low <= first <= low + 0.3, (canary.position, first)
        indexes = [s.index for s in canary.statements]
        assert indexes == sorted(set(indexes)), "a restatement comes later"
    assert any(len(c.statements) > 1 for c in session.canaries)


def test_the_session_looks_like_agent_work() -> None:
    session = canary_session(5, messages=1_500)
    messages = session.messages
    assert 1_500 <= len(messages) < 1_600
    calls = [m for m in messages if m["role"] == "assistant" and m.get("tool_calls")]
    assert any(len(m["tool_calls"]) > 1 for m in calls), "parallel calls"
    outputs = [len(m["content"]) for m in messages if m["role"] == "tool"]
    assert len(outputs) > len(messages) / 2
    assert sum(outputs) / len(outputs) > 1_000, "sizeable outputs"
    users = sum(m["role"] == "user" for m in messages)
    assert 0 < users < len(messages) / 8


def test_the_latest_value_counts_and_a_stale_one_alone_is_stale() -> None:
    session = canary_session(3, messages=600)
    canary = _restated(session.canaries)
    old, new = canary.statements[0].value, canary.statements[-1].value
    end = len(session.messages)
    stale = score(f"The value was {old}.", [canary], end)[canary.type]
    assert (stale.planted, stale.latest, stale.restated, stale.stale) == (1, 0, 1, 1)
    both = score(f"{old}, now {new}", [canary], end)[canary.type]
    assert (both.latest, both.stale) == (1, 0)
    # Before the restatement, the old value is the latest one.
    before = score(f"{old}", [canary], canary.statements[-1].index)[canary.type]
    assert (before.latest, before.restated, before.stale) == (1, 0, 0)


def test_a_value_never_planted_or_not_yet_stated_is_not_found() -> None:
    session = canary_session(4, messages=600)
    everything = request_text(session.messages)
    scores = score("QX7-4411-ZB and $48,213", session.canaries, len(session.messages))
    assert all(s.latest == 0 and s.stale == 0 for s in scores.values())
    nothing_yet = score(everything, session.canaries, 0)
    assert all(s.planted == 0 for s in nothing_yet.values())
    full = score(everything, session.canaries, len(session.messages))
    assert all(s.latest == s.planted > 0 and s.stale == 0 for s in full.values())


def test_a_value_inside_a_longer_token_is_not_carried() -> None:
    assert carries("under 41 words.", "41 words")
    assert not carries("under 141 words.", "41 words")
    assert not carries("AQX7-4411-ZB", "QX7-4411-ZB")


def test_request_text_reads_text_parts_and_tool_calls() -> None:
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "see CHG-12345"}],
        "tool_calls": [{"id": "c", "function": {"name": "grep", "arguments": '{"p": "X"}'}}],
    }
    text = request_text([message])
    assert carries(text, "CHG-12345") and 'grep({"p": "X"})' in text


@pytest.mark.anyio
async def test_a_session_records_through_the_own_loop(tmp_path: Path) -> None:
    session = canary_session(6, messages=200)
    async with Session.open(model="gpt-4o", db=tmp_path / "c.db") as stored:
        for step in session.steps:
            await stored.record_messages(step)
        request = await stored.context()
    # Nothing compacted at this size: every latest value is in the request.
    scores = score(request_text(request.messages), session.canaries, len(session.messages))
    assert all(s.latest == s.planted for s in scores.values()), scores
