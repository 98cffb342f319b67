"""The ``lossless_read_file`` agent tool: a model reads a file it was handed by
reference, a page of lines at a time, within the recall tools' answer budget."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from lossless import _native
from lossless.errors import InvalidInputError, NotFoundError
from lossless.tokens import count_tokens

if TYPE_CHECKING:
    from lossless.ports import SessionView

__all__ = ["READ_FILE_TOOL", "answer_read_file"]

PAGE_LINES = 400
"""Most lines one call reads before the answer is fitted to its token budget."""

READ_FILE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "lossless_read_file",
        "description": "Read a file handed over by reference (an id file_...): the "
        "original text, whole, kept by the store. Gives a page of lines from start_line; "
        "pass next_line back as start_line to read on.",
        "parameters": {
            "type": "object",
            "properties": {
                "file_id": {"type": "string", "description": "The file's id (file_...)."},
                "start_line": {"type": "integer", "minimum": 1, "default": 1},
                "end_line": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Last line wanted (default: a page from start_line).",
                },
            },
            "required": ["file_id"],
        },
    },
}


def answer_read_file(session: SessionView, args: dict[str, Any], budget: int) -> str:
    """A page of the file's lines as JSON, within ``budget`` tokens. Only files that
    entered this session are read."""
    file_id = args.get("file_id")
    if not isinstance(file_id, str) or not file_id:
        raise InvalidInputError("file_id: expected a non-empty string")
    first = _line(args, "start_line", 1)
    last = _line(args, "end_line", first + PAGE_LINES - 1)
    if last < first:
        raise InvalidInputError("end_line: must not be before start_line")
    last = min(last, first + PAGE_LINES - 1)
    if file_id not in session.store.session_file_ids(session.id):
        raise NotFoundError(f"no file with id {file_id!r} in this conversation")
    record = _native.file_record(session.store, file_id)
    if record is None:
        raise NotFoundError(f"no stored file with id {file_id!r}")
    if not record.is_text:
        raise InvalidInputError(f"file_id: {file_id} is a binary file; it has no lines to read")
    lines = _native.read_file(session.store, file_id, first, last).decode().splitlines(True)

    def answer(count: int) -> str:
        shown_last = first + count - 1
        more = shown_last < record.line_count
        return json.dumps(
            {
                "file_id": file_id,
                "path": record.path,
                "total_lines": record.line_count,
                "first_line": first,
                "last_line": shown_last,
                "text": "".join(lines[:count]),
                "next_line": shown_last + 1 if more else None,
            }
        )

    low, high = 0, len(lines)
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens(answer(middle), model=session.model) <= budget:
            low = middle
        else:
            high = middle - 1
    return answer(low)


def _line(args: dict[str, Any], key: str, default: int) -> int:
    value = args.get(key, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{key}: expected an integer of at least 1")
    return value
