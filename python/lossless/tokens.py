"""Token counting and file-id helpers, computed in the native core."""

from __future__ import annotations

from lossless import _native
from lossless._native import TokenCounter

__all__ = [
    "TokenCounter",
    "count_tokens",
    "encoding_for_model",
    "extract_file_ids",
    "merge_file_id_footer",
]

DEFAULT_MODEL = "gpt-4o"


def count_tokens(text: str, *, model: str = DEFAULT_MODEL) -> int:
    """Number of tokens in ``text`` under ``model``'s encoding (tiktoken tables, offline)."""
    return _native.count_tokens(text, model)


def encoding_for_model(model: str) -> str:
    """``o200k_base`` for gpt-4o, gpt-4.1, gpt-5 and o-series models, else ``cl100k_base``."""
    return _native.encoding_for_model(model)


def extract_file_ids(text: str) -> list[str]:
    """File ids (``file_`` + 8 to 32 hex digits on word boundaries), unique, in order."""
    return _native.extract_file_ids(text)


def merge_file_id_footer(text: str, file_ids: list[str]) -> str:
    """``text`` ending in one ``[LCM File IDs: ...]`` footer with its ids and ``file_ids``."""
    return _native.merge_file_id_footer(text, file_ids)
