"""File-id extraction (``file_`` + 8 to 32 hex digits on word boundaries) and footers."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lossless import extract_file_ids, merge_file_id_footer
from lossless.errors import InvalidInputError

FOOTER = "[LCM File IDs: "


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see file_0123abcd now", ["file_0123abcd"]),
        ("file_0123abcd", ["file_0123abcd"]),
        ("(file_0123abcd)", ["file_0123abcd"]),
        ("ids: file_0123abcd, file_89ABCDEF.", ["file_0123abcd", "file_89ABCDEF"]),
        ("path /data/file_0123abcd.txt", ["file_0123abcd"]),
        ("line\nfile_0123abcd\n", ["file_0123abcd"]),
        ('{"id":"file_0123abcd"}', ["file_0123abcd"]),
        ("file_" + "f" * 32, ["file_" + "f" * 32]),
        ("file_" + "0" * 8, ["file_" + "0" * 8]),
        # Too short, too long, or glued to other word characters: not an id.
        ("file_0123abc", []),
        ("file_" + "a" * 33, []),
        ("file_" + "a" * 40 + " end", []),
        ("xfile_0123abcd", []),
        ("file_0123abcdg", []),
        ("file_0123abcd_more", []),
        ("my_file_0123abcd", []),
        ("2file_0123abcd", []),
        ("file_0123-abcd", []),
        ("FILE_0123abcd", []),
        ("file-0123abcd", []),
        ("", []),
    ],
)
def test_extraction_on_word_boundaries(text: str, expected: list[str]) -> None:
    assert extract_file_ids(text) == expected


def test_ids_are_unique_in_first_seen_order() -> None:
    text = "file_bbbbbbbb then file_aaaaaaaa then file_bbbbbbbb and file_cccccccc file_aaaaaaaa"
    assert extract_file_ids(text) == ["file_bbbbbbbb", "file_aaaaaaaa", "file_cccccccc"]


def test_case_differs_means_a_different_id() -> None:
    assert extract_file_ids("file_abcdef12 file_ABCDEF12") == ["file_abcdef12", "file_ABCDEF12"]


def test_a_megabyte_on_one_line() -> None:
    rng = random.Random(1)
    ids = [f"file_{rng.getrandbits(64):016x}" for _ in range(1000)]
    filler = "x" * 1000
    text = " ".join(f"{filler} {file_id}" for file_id in ids)
    assert "\n" not in text
    assert len(text) > 1_000_000
    assert extract_file_ids(text) == ids


def test_a_megabyte_without_ids() -> None:
    text = ("file_ " + "word " * 200) * 1000
    assert len(text) > 1_000_000
    assert extract_file_ids(text) == []


def test_lone_surrogates_are_invalid_input() -> None:
    with pytest.raises(InvalidInputError):
        extract_file_ids("file_0123abcd \ud800")
    with pytest.raises(InvalidInputError):
        merge_file_id_footer("\ud800", [])


# --- footers ---------------------------------------------------------------------


def test_footer_lists_own_and_extra_ids() -> None:
    merged = merge_file_id_footer("summary about file_11111111", ["file_22222222"])
    assert merged == "summary about file_11111111\n\n[LCM File IDs: file_11111111, file_22222222]"


def test_no_ids_means_no_footer() -> None:
    assert merge_file_id_footer("plain summary", []) == "plain summary"


def test_footer_is_replaced_not_stacked() -> None:
    once = merge_file_id_footer("text", ["file_11111111"])
    twice = merge_file_id_footer(once, ["file_22222222"])
    assert twice == "text\n\n[LCM File IDs: file_11111111, file_22222222]"
    assert twice.count(FOOTER) == 1


def test_text_after_a_footer_like_block_is_kept() -> None:
    # Only a footer that ends the text is ours to replace; a block in the middle is content.
    text = "before\n\n[LCM File IDs: file_11111111]\nafter that, more [notes]"
    merged = merge_file_id_footer(text, ["file_22222222"])
    assert merged.startswith(text)
    assert merged.endswith("[LCM File IDs: file_11111111, file_22222222]")


file_ids = st.from_regex(r"\Afile_[0-9a-fA-F]{8,32}\Z")
words = st.one_of(
    file_ids,
    st.sampled_from(["the", "and", "[", "]", "\n", "\n\n", ", ", FOOTER, "file_", "x"]),
    st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=8),
)
texts = st.lists(words, max_size=30).map(" ".join)


@settings(max_examples=50, deadline=None)
@given(text=texts, extra=st.lists(file_ids, max_size=5))
def test_footer_merge_is_idempotent_and_keeps_every_id(text: str, extra: list[str]) -> None:
    merged = merge_file_id_footer(text, extra)
    assert merge_file_id_footer(merged, extra) == merged
    assert merge_file_id_footer(merged, []) == merged
    found = extract_file_ids(merged)
    for file_id in extract_file_ids(text) + extra:
        assert file_id in found
    if extract_file_ids(text) or extra:
        assert merged.endswith("]")
        assert FOOTER in merged


@settings(max_examples=50, deadline=None)
@given(text=texts, first=st.lists(file_ids, max_size=4), second=st.lists(file_ids, max_size=4))
def test_merging_twice_carries_the_union(text: str, first: list[str], second: list[str]) -> None:
    merged = merge_file_id_footer(merge_file_id_footer(text, first), second)
    found = set(extract_file_ids(merged))
    assert set(extract_file_ids(text)) | set(first) | set(second) <= found


@settings(max_examples=50, deadline=None)
@given(text=texts)
def test_extraction_finds_exactly_the_planted_ids(text: str) -> None:
    ids = extract_file_ids(text)
    assert len(ids) == len(set(ids))
    for file_id in ids:
        assert file_id in text
        assert 8 <= len(file_id) - len("file_") <= 32
    # Every id is found again when the text is split around it.
    assert extract_file_ids(" ".join(ids)) == ids
