"""Token counting: encodings per model, counts, batch counts and bad input."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lossless import TokenCounter, count_tokens
from lossless.errors import InvalidInputError, LosslessError
from lossless.tokens import encoding_for_model

O200K_MODELS = [
    "gpt-4o",
    "gpt-4o-mini",
    "gpt-4o-2024-08-06",
    "chatgpt-4o-latest",
    "gpt-4.1",
    "gpt-4.1-nano",
    "gpt-4.5-preview",
    "gpt-5",
    "gpt-5-mini",
    "o1",
    "o1-mini",
    "o3",
    "o3-mini",
    "o4-mini",
    "openai/gpt-4o",
    "azure/gpt-4.1",
    "GPT-4o",
    "ft:gpt-4o-2024-08-06:acme::abc123",
]
CL100K_MODELS = [
    "gpt-4",
    "gpt-4-turbo",
    "gpt-4-0613",
    "gpt-3.5-turbo",
    "gpt-35-turbo",
    "claude-3-5-sonnet",
    "anthropic/claude-3-5-sonnet-20241022",
    "gemini-1.5-pro",
    "llama-3.1-70b",
    "anything",
    "",
]

# Counts checked against OpenAI's tiktoken (Python) for both encodings.
KNOWN = [
    ("", 0, 0),
    ("hello world", 2, 2),
    ("tiktoken is great!", 6, 6),
    ("人工智能正在改变世界", 11, 5),
    ("Привет, как дела?", 8, 6),
    ("    def f(x):\n        return x", 8, 8),
]

texts = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=300)


@pytest.mark.parametrize("model", O200K_MODELS)
def test_newer_openai_models_use_o200k(model: str) -> None:
    assert encoding_for_model(model) == "o200k_base"
    assert TokenCounter(model).encoding == "o200k_base"


@pytest.mark.parametrize("model", CL100K_MODELS)
def test_other_models_use_cl100k(model: str) -> None:
    assert encoding_for_model(model) == "cl100k_base"
    assert TokenCounter(model).encoding == "cl100k_base"


@pytest.mark.parametrize(("text", "cl100k", "o200k"), KNOWN)
def test_known_counts(text: str, cl100k: int, o200k: int) -> None:
    assert count_tokens(text, model="gpt-4") == cl100k
    assert count_tokens(text, model="gpt-4o") == o200k
    assert TokenCounter("gpt-4").count(text) == cl100k
    assert TokenCounter("gpt-4o").count(text) == o200k


def test_default_model_is_gpt_4o() -> None:
    assert count_tokens("人工智能正在改变世界") == 5


def test_counter_keeps_its_model() -> None:
    counter = TokenCounter("openai/gpt-4o-mini")
    assert counter.model == "openai/gpt-4o-mini"
    assert counter.correction == 1.0


def test_count_many_of_nothing_is_empty() -> None:
    assert TokenCounter("gpt-4o").count_many([]) == []


@settings(max_examples=50, deadline=None)
@given(items=st.lists(texts, max_size=20), model=st.sampled_from(["gpt-4o", "gpt-4"]))
def test_count_many_equals_count_per_item(items: list[str], model: str) -> None:
    counter = TokenCounter(model)
    assert counter.count_many(items) == [counter.count(text) for text in items]
    assert counter.count_many(items) == [count_tokens(text, model=model) for text in items]


@settings(max_examples=50, deadline=None)
@given(left=texts, right=texts)
def test_counts_are_roughly_additive(left: str, right: str) -> None:
    # BPE merges across the seam can only save a few tokens, never add many.
    counter = TokenCounter("gpt-4o")
    joined = counter.count(left + "\n\n" + right)
    separate = counter.count(left) + counter.count(right)
    assert separate - 8 <= joined <= separate + 2


@pytest.mark.parametrize(
    ("items", "field"),
    [
        (["ok", 3], "texts[1]"),
        ([None], "texts[0]"),
        (["ok", "fine", b"bytes"], "texts[2]"),
        (["ok", "lone \ud800"], "texts[1]"),
    ],
)
def test_count_many_refuses_what_is_not_text(items: list[Any], field: str) -> None:
    with pytest.raises(InvalidInputError, match="^" + re.escape(field)):
        TokenCounter("gpt-4o").count_many(items)


def test_lone_surrogates_are_invalid_input() -> None:
    with pytest.raises(InvalidInputError, match="text"):
        count_tokens("lone \udc00")
    with pytest.raises(InvalidInputError, match="text"):
        TokenCounter("gpt-4").count("\ud800")


def test_bad_input_errors_are_value_errors() -> None:
    with pytest.raises(ValueError) as info:
        TokenCounter("gpt-4o").count_many([1])
    assert isinstance(info.value, LosslessError)


def test_nul_and_control_characters_are_counted() -> None:
    assert count_tokens("a\x00b") >= 2
    assert count_tokens("\x00" * 10) >= 1


# --- agreement with OpenAI's own tokenizer ---------------------------------------

ENCODING_URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}


@pytest.fixture(scope="module")
def tiktoken_encodings() -> Iterator[dict[str, Any]]:
    """OpenAI's tiktoken with the BPE tables litellm ships (offline), or a skip."""
    tiktoken = pytest.importorskip("tiktoken")
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        pytest.skip("litellm (which ships the tiktoken tables) is not installed")
    cache = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    for url in ENCODING_URLS.values():
        if not (cache / hashlib.sha1(url.encode()).hexdigest()).exists():
            pytest.skip(f"no offline copy of {url}")
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        yield {name: tiktoken.get_encoding(name) for name in ENCODING_URLS}
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


@settings(max_examples=50, deadline=None)
@given(text=texts)
def test_counts_agree_with_tiktoken(tiktoken_encodings: dict[str, Any], text: str) -> None:
    for model, name in (("gpt-4o", "o200k_base"), ("gpt-4", "cl100k_base")):
        assert count_tokens(text, model=model) == len(
            tiktoken_encodings[name].encode_ordinary(text)
        )


def test_model_mapping_agrees_with_tiktoken(tiktoken_encodings: dict[str, Any]) -> None:
    from tiktoken.model import encoding_name_for_model

    for model in [*O200K_MODELS, "gpt-4", "gpt-4-turbo", "gpt-3.5-turbo", "gpt-35-turbo"]:
        bare = model.rsplit("/", 1)[-1].lower()
        assert encoding_for_model(model) == encoding_name_for_model(bare), model
