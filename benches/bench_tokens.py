"""Token counting and file-id extraction throughput.

Targets: ``extract_file_ids`` >= 300 MB/s. ``count_many`` is compared with the cargo
bench ``rust/core/benches/tokens.rs`` (tiktoken-rs called directly) and, when its
tables are available offline, with OpenAI's Python tiktoken.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import random
from pathlib import Path
from typing import Any

import pytest

from lossless import TokenCounter, extract_file_ids

MODEL = "gpt-4o"
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
FILLER = "the output of the tool mentions a few files and some numbers 12 34 and paths a/b/c.py"


@pytest.fixture(scope="module")
def short_messages(corpus: Any) -> list[str]:
    rng = random.Random(11)
    return [
        corpus.texts[rng.randrange(len(corpus.texts))][: rng.randint(20, 200)]
        for _ in range(10_000)
    ]


@pytest.mark.benchmark(group="tokens")
def test_count_many_short_messages(benchmark: Any, record: Any, short_messages: list[str]) -> None:
    counter = TokenCounter(MODEL)
    counter.count("warm the tables")
    counts = benchmark(counter.count_many, short_messages)
    assert len(counts) == 10_000
    size = sum(len(text.encode()) for text in short_messages)
    extra: dict[str, Any] = {"messages": 10_000, "tokens": sum(counts), "bytes": size}
    if benchmark.enabled:
        median = benchmark.stats.stats.median
        extra["us_per_message"] = round(median / 10_000 * 1e6, 3)
        extra["MB_per_s"] = round(size / median / 1e6, 1)
    record(benchmark, "count_many 10,000 short messages", **extra)


# The corpus of the cargo bench rust/core/benches/tokens.rs (xorshift64 over a word list),
# rebuilt here so the Python figure compares with the Rust one on the same input.
_CARGO_WORD_TEXT = (
    "the file test error function returns value src/lib.rs cargo build failed because missing"
    " import fix it please and run again { } () => let x = 42; Hello world OK TODO"
)
CARGO_WORDS = _CARGO_WORD_TEXT.split(" ")


def cargo_bench_messages(n: int) -> list[str]:
    mask = (1 << 64) - 1
    state = 0x9E37_79B9_7F4A_7C15

    def below(limit: int) -> int:
        nonlocal state
        state ^= (state << 13) & mask
        state ^= state >> 7
        state ^= (state << 17) & mask
        return state % limit

    out = []
    for _ in range(n):
        target = 20 + below(181)
        text = ""
        while len(text) < target:
            if text:
                text += "\n" if below(8) == 0 else " "
            text += CARGO_WORDS[below(len(CARGO_WORDS))]
        out.append(text[:target])
    return out


@pytest.mark.benchmark(group="tokens")
def test_count_many_cargo_bench_corpus(benchmark: Any, record: Any) -> None:
    texts = cargo_bench_messages(10_000)
    assert len(CARGO_WORDS) == 32
    counter = TokenCounter(MODEL)
    counts = benchmark(counter.count_many, texts)
    assert len(counts) == 10_000
    size = sum(len(text.encode()) for text in texts)
    extra: dict[str, Any] = {"tokens": sum(counts), "bytes": size}
    if benchmark.enabled:
        extra["MB_per_s"] = round(size / benchmark.stats.stats.median / 1e6, 1)
    record(benchmark, "count_many 10,000 (cargo bench corpus)", **extra)


@pytest.fixture(scope="module")
def python_tiktoken() -> Any:
    tiktoken = pytest.importorskip("tiktoken")
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        pytest.skip("litellm (which ships the tiktoken tables) is not installed")
    cache = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    if not (cache / hashlib.sha1(O200K_URL.encode()).hexdigest()).exists():
        pytest.skip("no offline copy of the o200k_base table")
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        return tiktoken.get_encoding("o200k_base")
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


@pytest.mark.benchmark(group="tokens")
def test_count_baseline_python_tiktoken(
    benchmark: Any, record: Any, short_messages: list[str], python_tiktoken: Any
) -> None:
    encode = python_tiktoken.encode_ordinary
    counts = benchmark(lambda: [len(encode(text)) for text in short_messages])
    assert counts == TokenCounter(MODEL).count_many(short_messages)
    record(benchmark, "  baseline: Python tiktoken, same 10,000")


def file_id_text(single_line: bool) -> tuple[str, list[str]]:
    """About 1 MB of tool-output-like text holding 1,000 distinct file ids."""
    rng = random.Random(5)
    ids = [
        f"file_{rng.getrandbits(rng.choice([32, 64, 96, 128])):x}".ljust(13, "0")
        for _ in range(1000)
    ]
    ids = list(dict.fromkeys(ids))
    words = FILLER.split()
    chunks = []
    for file_id in ids:
        filler = " ".join(rng.choice(words) for _ in range(170))
        chunks.append(f"{filler} see {file_id}, then")
    text = (" " if single_line else "\n").join(chunks)
    pad = 1_000_000 - len(text)
    if pad > 0:
        text += " " + "x " * (pad // 2)
    return text, ids


@pytest.mark.benchmark(group="fileids")
@pytest.mark.parametrize("single_line", [False, True], ids=["lines", "single-line"])
def test_extract_file_ids_1mb(benchmark: Any, record: Any, single_line: bool) -> None:
    text, ids = file_id_text(single_line)
    assert len(text) >= 1_000_000
    assert ("\n" in text) is not single_line
    found = benchmark(extract_file_ids, text)
    assert found == ids
    extra: dict[str, Any] = {"bytes": len(text), "ids": len(ids)}
    if benchmark.enabled:
        extra["MB_per_s"] = round(len(text) / benchmark.stats.stats.median / 1e6, 1)
    label = "single line" if single_line else "lines"
    record(benchmark, f"extract_file_ids 1 MB, 1,000 ids ({label})", target=">= 300 MB/s", **extra)
