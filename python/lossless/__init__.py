"""lossless: bounded context windows for long-running LLM agent sessions,
without ever losing what was said."""

from lossless import errors
from lossless._native import __version__
from lossless.errors import LosslessError
from lossless.parts import FileRefPart, Part, TextPart, ToolPart
from lossless.store import Store
from lossless.tokens import TokenCounter, count_tokens, extract_file_ids, merge_file_id_footer

__all__ = [
    "FileRefPart",
    "LosslessError",
    "Part",
    "Store",
    "TextPart",
    "TokenCounter",
    "ToolPart",
    "__version__",
    "count_tokens",
    "errors",
    "extract_file_ids",
    "merge_file_id_footer",
]
