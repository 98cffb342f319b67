"""Reasoning parts in the store: kept verbatim, refused when a provider could not
take them back, found by their readable text and never by signed data."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lossless import ReasoningPart, Store, TextPart
from lossless.errors import InvalidInputError
from lossless.parts import part_from_wire

pytestmark = pytest.mark.both_backends

MODEL = "anthropic/claude-sonnet-4-5"
# Anthropic's key order and spacing: a serializer would give other bytes.
THINKING = (
    '{"type": "thinking", "thinking": "The ledger must balance first.", '
    '"signature": "RXVnZW5pYyBzaWduYXR1cmU="}'
)
REDACTED = '{"type": "redacted_thinking", "data": "b2thcGkgcmVkYWN0ZWQ="}'


@pytest.fixture
def store(database: Path | str) -> Store:
    return Store(database)


def stored_parts(store: Store, session: str) -> list[object]:
    return [part_from_wire(part) for row in store.history(session) for part in row.parts]


def test_a_payload_reads_back_byte_for_byte(store: Store) -> None:
    session = store.create_session(MODEL)
    parts = [
        ReasoningPart("anthropic", "The ledger must balance first.", THINKING),
        ReasoningPart("anthropic", payload=REDACTED),
        ReasoningPart("deepseek", "Weighing both options."),
        TextPart("Balanced."),
    ]
    store.append(session, "assistant", parts)
    assert stored_parts(store, session) == parts


def test_a_dict_payload_is_stored_as_json_with_its_keys_in_order(store: Store) -> None:
    session = store.create_session(MODEL)
    block = {"type": "thinking", "thinking": "Zürich first", "signature": "c2ln"}
    store.append(session, "assistant", [ReasoningPart("anthropic", "Zürich first", block)])
    (part,) = stored_parts(store, session)
    assert isinstance(part, ReasoningPart) and isinstance(part.payload, str)
    assert part.payload == '{"type":"thinking","thinking":"Zürich first","signature":"c2ln"}'
    assert list(json.loads(part.payload)) == ["type", "thinking", "signature"]


@pytest.mark.parametrize(
    ("part", "field"),
    [
        (
            ReasoningPart("anthropic", "x", {"type": "thinking", "thinking": "x"}),
            "parts[1].payload.signature",
        ),
        (
            ReasoningPart("anthropic", payload={"type": "thinking", "signature": "s"}),
            "parts[1].payload.thinking",
        ),
        (
            ReasoningPart("anthropic", payload={"type": "redacted_thinking"}),
            "parts[1].payload.data",
        ),
        (ReasoningPart("anthropic", payload='["not", "a block"]'), "parts[1].payload"),
        (ReasoningPart("anthropic", payload={"thinking": "x"}), "parts[1].payload.type"),
        (ReasoningPart("anthropic"), "parts[1]"),
        (ReasoningPart("", "x"), "parts[1].provider"),
    ],
)
def test_a_block_no_provider_would_take_back_is_refused_and_nothing_is_stored(
    store: Store, part: ReasoningPart, field: str
) -> None:
    session = store.create_session(MODEL)
    with pytest.raises(InvalidInputError, match=rf"^{re.escape(field)}:"):
        store.append(session, "assistant", [TextPart("first"), part])
    assert store.history(session) == []


def test_search_finds_readable_reasoning_and_never_signed_data(store: Store) -> None:
    session = store.create_session(MODEL)
    store.append(
        session,
        "assistant",
        [
            ReasoningPart("anthropic", "The ledger must balance first.", THINKING),
            ReasoningPart("anthropic", payload=REDACTED),
            TextPart("Balanced."),
        ],
    )
    assert len(store.grep("ledger", session_id=session)) == 1
    for secret in ["RXVnZW5pYyBzaWduYXR1cmU", "b2thcGkgcmVkYWN0ZWQ", "signature"]:
        assert store.grep(secret, session_id=session) == []
        assert store.grep(secret, session_id=session, mode="regex") == []


def test_read_shows_the_readable_text_and_a_marker_for_the_rest(store: Store) -> None:
    session = store.create_session(MODEL)
    appended = store.append(
        session,
        "assistant",
        [
            ReasoningPart("anthropic", "The ledger must balance first.", THINKING),
            ReasoningPart("anthropic", payload=REDACTED),
            TextPart("Balanced."),
        ],
    )
    text = store.read(appended.id).text
    assert "[reasoning] The ledger must balance first." in text
    assert "[reasoning: redacted]" in text
    assert "RXVnZW5pYyBzaWduYXR1cmU" not in text and "b2thcGkgcmVkYWN0ZWQ" not in text


def test_reasoning_adds_nothing_to_the_view(store: Store) -> None:
    session = store.create_session(MODEL)
    plain = store.append(session, "assistant", [TextPart("Balanced.")])
    reasoned = store.append(
        session,
        "assistant",
        [ReasoningPart("anthropic", "The ledger must balance first.", THINKING), "Balanced."],
    )
    assert reasoned.token_count == plain.token_count
