"""Tests of the deterministic demo trajectory generator."""

from __future__ import annotations

import dataclasses
import json
import re
import string
from collections.abc import Iterator

import pytest

from lossless.demo import RECALL_FACT, RECALL_QUERY, RECALL_TURN, Turn, generate_trajectory
from lossless.demo.trajectory import file_id_for
from lossless.errors import InvalidInputError
from lossless.parts import FileRefPart, TextPart, ToolPart

LARGE_MIN = 2048
LARGE_MAX = 8192
PRINTABLE = frozenset(string.printable)


@pytest.fixture(scope="module")
def default() -> list[Turn]:
    """The trajectory the demo uses: 520 turns, seed 7."""
    return generate_trajectory()


def strings_of(turn: Turn) -> Iterator[str]:
    """Every piece of text in a turn: texts, tool names, inputs, outputs, errors, refs."""
    for part in turn.parts:
        if isinstance(part, TextPart):
            yield part.text
        elif isinstance(part, ToolPart):
            yield part.name
            yield part.call_id
            yield part.input if isinstance(part.input, str) else json.dumps(dict(part.input))
            yield part.output or ""
            yield part.error or ""
        else:
            yield from (part.file_id, part.path, part.file_type, part.summary)


def tool_parts(turns: list[Turn]) -> list[ToolPart]:
    return [part for turn in turns for part in turn.parts if isinstance(part, ToolPart)]


def has_large_output(turn: Turn) -> bool:
    return any(
        isinstance(part, ToolPart)
        and part.output is not None
        and LARGE_MIN <= len(part.output) <= LARGE_MAX
        for part in turn.parts
    )


def test_same_seed_gives_equal_trajectories(default: list[Turn]) -> None:
    assert generate_trajectory(turns=520, seed=7) == default


def test_different_seeds_give_different_trajectories(default: list[Turn]) -> None:
    assert generate_trajectory(turns=520, seed=8) != default


def test_a_prefix_is_the_start_of_a_longer_trajectory(default: list[Turn]) -> None:
    assert generate_trajectory(turns=100) == default[:100]


@pytest.mark.parametrize("turns", [0, 1, 2, 3, 4, 51, 520])
def test_exact_length_and_alternation_starting_with_user(turns: int) -> None:
    trajectory = generate_trajectory(turns=turns, seed=3)
    assert len(trajectory) == turns
    for position, turn in enumerate(trajectory, 1):
        assert turn.index == position
        assert turn.role == ("user" if position % 2 else "assistant")
        assert turn.parts, "every message has at least one part"


@pytest.mark.parametrize("turns", [-1, True, 2.0, "10"])
def test_invalid_turn_counts_are_rejected(turns: object) -> None:
    with pytest.raises(InvalidInputError):
        generate_trajectory(turns=turns)  # type: ignore[arg-type]


def test_turns_are_frozen(default: list[Turn]) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        default[0].index = 5  # type: ignore[misc]


def test_users_only_speak_text_and_attach_files(default: list[Turn]) -> None:
    for turn in default:
        if turn.role == "user":
            assert all(isinstance(part, TextPart | FileRefPart) for part in turn.parts)
            assert isinstance(turn.parts[0], TextPart)


@pytest.mark.parametrize("seed", [7, 1, 99])
def test_recall_fact_is_stated_once_at_the_recall_turn(seed: int) -> None:
    trajectory = generate_trajectory(turns=520, seed=seed)
    recall = trajectory[RECALL_TURN - 1]
    assert recall.role == "user"
    assert recall.index == RECALL_TURN
    counts = {
        turn.index: sum(text.count(RECALL_FACT) for text in strings_of(turn)) for turn in trajectory
    }
    assert counts[RECALL_TURN] == 1
    assert sum(counts.values()) == 1


@pytest.mark.parametrize("seed", [7, 2, 42])
def test_recall_query_words_occur_only_at_the_recall_turn(seed: int) -> None:
    trajectory = generate_trajectory(turns=1000, seed=seed)
    words = RECALL_QUERY.lower().split()
    assert words
    for turn in trajectory:
        text = "\n".join(strings_of(turn)).lower()
        for word in words:
            if turn.index == RECALL_TURN:
                assert re.search(rf"\b{re.escape(word)}\b", text)
            else:
                assert word not in text, f"{word!r} leaks into turn {turn.index}"


def test_recall_fact_contains_the_query_words() -> None:
    fact_words = set(re.findall(r"[a-z0-9]+", RECALL_FACT.lower()))
    assert set(RECALL_QUERY.lower().split()) <= fact_words


def test_file_references_have_path_derived_ids(default: list[Turn]) -> None:
    refs = [part for turn in default for part in turn.parts if isinstance(part, FileRefPart)]
    assert len(refs) >= 3
    for ref in refs:
        assert re.fullmatch(r"file_[0-9a-f]{16}", ref.file_id)
        assert ref.file_id == file_id_for(ref.path)
        assert ref.token_count > 0
        assert ref.summary


def test_file_ids_are_mentioned_in_later_assistant_texts(default: list[Turn]) -> None:
    first_seen: dict[str, int] = {}
    mentioned: set[str] = set()
    for turn in default:
        for part in turn.parts:
            if isinstance(part, FileRefPart):
                first_seen.setdefault(part.file_id, turn.index)
            elif isinstance(part, TextPart) and turn.role == "assistant":
                for file_id in re.findall(r"file_[0-9a-f]{16}", part.text):
                    assert file_id in first_seen, "a text cites a file before it was seen"
                    if turn.index > first_seen[file_id]:
                        mentioned.add(file_id)
    assert mentioned


def test_some_tool_calls_fail(default: list[Turn]) -> None:
    failed = [part for part in tool_parts(default) if part.status == "error"]
    assert failed
    for part in failed:
        assert part.output is None
        assert part.error


@pytest.mark.parametrize("seed", [7, 0, 13, 2024])
def test_about_a_third_of_assistant_messages_carry_a_large_output(seed: int) -> None:
    trajectory = generate_trajectory(turns=520, seed=seed)
    assistant = [turn for turn in trajectory if turn.role == "assistant"]
    share = sum(map(has_large_output, assistant)) / len(assistant)
    assert 0.25 <= share <= 0.40


def test_no_tool_output_exceeds_8_kb(default: list[Turn]) -> None:
    for part in tool_parts(default):
        assert part.output is None or len(part.output) <= LARGE_MAX


def test_call_ids_are_unique_and_numbered(default: list[Turn]) -> None:
    ids = [part.call_id for part in tool_parts(default)]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"call_[0-9]+", call_id) for call_id in ids)


def test_tool_inputs_are_json_objects(default: list[Turn]) -> None:
    for part in tool_parts(default):
        assert isinstance(part.input, dict)
        assert json.loads(json.dumps(part.input)) == part.input


def test_the_story_uses_the_expected_tools(default: list[Turn]) -> None:
    parts = tool_parts(default)
    names = {part.name for part in parts}
    assert {"read_file", "run_tests", "apply_patch", "grep"} <= names
    patches = [part for part in parts if part.name == "apply_patch" and part.status != "error"]
    assert all(str(part.input["patch"]).startswith("--- a/") for part in patches)  # type: ignore[index]
    outputs = [part.output or "" for part in parts if part.name == "run_tests"]
    assert any("FAILED" in output for output in outputs)
    assert any(re.search(r"=+ \d+ passed in", output) for output in outputs)


def test_content_varies_instead_of_repeating_one_template(default: list[Turn]) -> None:
    parts = tool_parts(default)
    read_paths = {str(p.input["path"]) for p in parts if p.name == "read_file"}  # type: ignore[index]
    assert len(read_paths) >= 10
    outputs = [part.output for part in parts if part.output]
    assert len(set(outputs)) >= 0.8 * len(outputs)
    user_texts = {turn.parts[0].text for turn in default if turn.role == "user"}  # type: ignore[union-attr]
    assert len(user_texts) >= 40


def test_all_text_is_printable_ascii(default: list[Turn]) -> None:
    for turn in default:
        for text in strings_of(turn):
            assert set(text) <= PRINTABLE, f"turn {turn.index} has unprintable text"


def test_ten_thousand_turns_generate() -> None:
    trajectory = generate_trajectory(turns=10_000, seed=11)
    assert len(trajectory) == 10_000
    assert trajectory[-1].role == "assistant"
    ids = [part.call_id for part in tool_parts(trajectory)]
    assert len(ids) == len(set(ids))
