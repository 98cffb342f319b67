"""The part kinds the core declares and the Python part types agree, and every
kind goes to the store and back unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from lossless import FileRefPart, Store, TextPart, ToolPart
from lossless._native import PART_KINDS
from lossless.errors import InvalidInputError
from lossless.parts import PART_TYPES, part_from_wire, part_to_wire

SAMPLES = [
    TextPart("the plan is in file_0123456789abcdef"),
    ToolPart(
        name="read",
        call_id="call_1",
        input={"path": "a.txt"},
        output="three lines",
        status="completed",
        error="one warning",
    ),
    ToolPart(name="wait", call_id="call_2", status="running"),
    FileRefPart(
        file_id="file_0123456789abcdef",
        path="notes/plan.md",
        file_type="markdown",
        token_count=4_200,
        summary="the plan, in three steps",
    ),
]


def test_every_kind_the_core_declares_has_a_python_type() -> None:
    assert [cls.kind for cls in PART_TYPES] == PART_KINDS


def test_every_kind_comes_back_from_the_store_as_it_went_in(tmp_path: Path) -> None:
    store = Store(tmp_path / "parts.db")
    session = store.create_session("gpt-4o")
    for part in SAMPLES:
        store.append(session, "assistant", [part])
    stored = [part_from_wire(row["parts"][0]) for row in store.history(session)]
    expected = [
        part_from_wire({**part_to_wire(part), "id": "prt", "compacted": False}) for part in SAMPLES
    ]
    assert stored == expected
    assert isinstance(stored[1], ToolPart) and stored[1].input == '{"path": "a.txt"}'


def test_an_unknown_kind_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    store = Store(tmp_path / "parts.db")
    session = store.create_session("gpt-4o")
    expected = r"parts\[0\]\.kind.*file_ref, reasoning, media or provider_compaction"
    with pytest.raises(InvalidInputError, match=expected):
        store.native.append_message(session, "user", [{"kind": "hologram"}])
    assert store.history(session) == []
