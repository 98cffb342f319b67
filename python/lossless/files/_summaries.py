"""Exploration summaries: what a model needs to know of a file it cannot see whole.

Each kind of file is read by a parser made for it: tree-sitter for source code,
``json``, PyYAML, ``tomllib``, markdown-it for the heading tree of Markdown,
``csv`` for tables, puremagic for the kind of a binary file. A file a parser
refuses (invalid JSON, say) is summarised as text, with the parser's complaint.
Every summary is bounded (:data:`SUMMARY_CHARS`), whatever the file's size.
"""

from __future__ import annotations

import csv
import io
import json
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from lossless.files._code import CODE_LANGUAGES, outline

__all__ = ["SUMMARY_CHARS", "Exploration", "explore_binary", "explore_text", "type_of_name"]

SUMMARY_CHARS = 6_000
"""Most characters of one summary: about 1,500 tokens, a small share of any window."""

_ENTRIES = 120
_HEAD_LINES = 8
_LINE_CHARS = 160

_EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".tsx": "tsx",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".md": "markdown",
    ".markdown": "markdown",
    ".csv": "csv",
    ".tsv": "tsv",
}


@dataclass(frozen=True, slots=True)
class Exploration:
    """A file's type (``python``, ``json``, ``text``, ``binary``...) and its summary."""

    file_type: str
    summary: str


def type_of_name(name: str) -> str:
    """The type a file's name (its extension) suggests; ``text`` when none does."""
    return _EXTENSIONS.get(PurePath(name).suffix.lower(), "text")


def explore_text(
    name: str,
    text: str,
    *,
    byte_count: int,
    line_count: int,
    partial: bool,
    outline_chars: int = 1 << 20,
) -> Exploration:
    """The summary of a text file. ``text`` is the whole file, or with ``partial``
    its head (a file too large to parse whole: its structure is read from the head).
    Source code is outlined over its first ``outline_chars`` characters at most."""
    file_type = type_of_name(name)
    header = f"{file_type} file, {line_count:,} lines, {byte_count:,} bytes."
    if partial:
        header += f" Structure read from the first {len(text):,} characters."
    body: list[str]
    if file_type in CODE_LANGUAGES:
        body = _code(file_type, text, outline_chars)
    elif file_type in _STRUCTURED and not partial:
        try:
            body = _STRUCTURED[file_type](text)
        except Exception as err:
            reason = " ".join(str(err).split())[:200]
            header += f" Not valid {file_type.upper()} ({reason}); read as text."
            file_type = "text"
            body = _plain(text)
    elif file_type == "markdown":
        body = _markdown(text)
    elif file_type in ("csv", "tsv"):
        body = _table(text, "\t" if file_type == "tsv" else ",", partial)
    else:
        body = _plain(text)
    return Exploration(file_type, _bounded([header, *body]))


def explore_binary(head: bytes, *, byte_count: int, utf8: bool, has_nul: bool) -> Exploration:
    """The summary of a binary file (or of text in no encoding UTF-8 reads): its
    kind, from its leading bytes, and its size."""
    import puremagic

    try:
        matches = puremagic.magic_string(head)
    except Exception:
        matches = []
    kind = matches[0].name if matches else ""
    extension = matches[0].extension if matches else ""
    described = kind or ("text in an encoding other than UTF-8" if not has_nul else "unknown")
    lines = [
        f"binary file, {byte_count:,} bytes: {described}" + (f" ({extension})" if extension else "")
    ]
    if not utf8 and not has_nul:
        lines.append("Not valid UTF-8 text; its bytes are kept exactly and can be exported.")
    else:
        lines.append("Its bytes are kept exactly and can be exported.")
    return Exploration("binary", _bounded(lines))


def _top_level_cut(text: str, limit: int) -> str:
    """``text`` cut before ``limit`` at the start of a line that is not indented
    (a top-level statement in most languages), so the parser sees whole definitions."""
    if len(text) <= limit:
        return text
    at = limit
    while (at := text.rfind("\n", 0, at)) > 0:
        following = text[at + 1 : at + 2]
        if following and not following.isspace():
            return text[: at + 1]
    return text[:limit]


def _code(language: str, text: str, limit: int) -> list[str]:
    # Parsing costs about 70 ms per MB and holds the interpreter: a bounded head
    # keeps a summary fast, and already holds more definitions than it can list.
    head = _top_level_cut(text, limit)
    definitions, has_errors = outline(language, head.encode())
    imports = [d for d in definitions if d.kind == "import"]
    others = [d for d in definitions if d.kind != "import"]
    lines: list[str] = []
    if len(head) < len(text):
        lines.append(f"Outline of lines 1-{head.count(chr(10)):,}; read later lines by range.")
    if has_errors:
        lines.append("The parser met syntax errors; the outline lists what it could read.")
    if imports:
        lines.append(f"imports ({len(imports)}):")
        lines.extend(f"  L{d.line} {d.name}" for d in imports[: _ENTRIES // 4])
        lines.extend(_more(len(imports) - _ENTRIES // 4, "imports"))
    lines.append(f"definitions ({len(others)}):")
    for d in others[:_ENTRIES]:
        word = "class" if d.kind == "class" else "def"
        lines.append(f"  {'  ' * d.depth}L{d.line}-{d.end_line} {word} {d.name}")
    lines.extend(_more(len(others) - _ENTRIES, "definitions"))
    return lines


def _more(count: int, what: str) -> list[str]:
    return [f"  ... and {count:,} more {what}"] if count > 0 else []


def _shape(value: Any) -> str:
    """A value's JSON type, with its size for containers."""
    if isinstance(value, dict):
        return f"object ({len(value)} keys)"
    if isinstance(value, list):
        return f"array ({len(value)} items)"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else type(value).__name__


def _keys(mapping: dict[Any, Any], indent: str = "  ") -> list[str]:
    lines = [f"{indent}{key}: {_shape(value)}" for key, value in list(mapping.items())[:_ENTRIES]]
    return lines + _more(len(mapping) - _ENTRIES, "keys")


def _document(value: Any) -> list[str]:
    """The top level of a parsed JSON or YAML document."""
    if isinstance(value, dict):
        return [f"top-level object, {len(value)} keys:", *_keys(value)]
    if isinstance(value, list):
        lines = [f"top-level array of {len(value):,} items"]
        records = [item for item in value[:1_000] if isinstance(item, dict)]
        if records:
            fields: dict[str, Any] = {}
            for record in records:
                for key, item in record.items():
                    fields.setdefault(str(key), item)
            lines.append(f"fields of its objects (from the first {len(records):,}):")
            lines.extend(_keys(fields))
        return lines
    return [f"a single {_shape(value)}: {str(value)[:_LINE_CHARS]}"]


def _json(text: str) -> list[str]:
    return _document(json.loads(text))


def _yaml(text: str) -> list[str]:
    import yaml

    documents = list(yaml.safe_load_all(text))
    if len(documents) == 1:
        return _document(documents[0])
    lines = [f"{len(documents)} YAML documents; the first:"]
    return lines + _document(documents[0])


def _toml(text: str) -> list[str]:
    data = tomllib.loads(text)
    lines = [f"{len(data)} top-level keys and tables:"]
    for key, value in list(data.items())[:_ENTRIES]:
        if isinstance(value, dict):
            lines.append(f"  [{key}] ({len(value)} keys)")
            lines.extend(
                f"    [{key}.{inner}] ({len(sub)} keys)"
                for inner, sub in list(value.items())[:20]
                if isinstance(sub, dict)
            )
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines.append(f"  [[{key}]] ({len(value)} entries)")
        else:
            lines.append(f"  {key}: {_shape(value)}")
    return lines + _more(len(data) - _ENTRIES, "keys")


_STRUCTURED: dict[str, Callable[[str], list[str]]] = {
    "json": _json,
    "yaml": _yaml,
    "toml": _toml,
}


def _markdown(text: str) -> list[str]:
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(text)
    headings: list[str] = []
    for index, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        level = int(token.tag[1:])
        title = tokens[index + 1].content if index + 1 < len(tokens) else ""
        line = token.map[0] + 1 if token.map else 0
        headings.append(f"  {'  ' * (level - 1)}L{line} {title[:_LINE_CHARS]}")
    if not headings:
        return ["no headings", *_plain(text)[1:]]
    return [
        f"headings ({len(headings)}):",
        *headings[:_ENTRIES],
        *_more(len(headings) - _ENTRIES, "headings"),
    ]


def _table(text: str, delimiter: str, partial: bool) -> list[str]:
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        header = next(reader, [])
        rows = sum(1 for _ in reader)
    except csv.Error as err:
        return [f"not a well-formed table ({err}); read as text", *_plain(text)[1:]]
    counted = "rows in the part read" if partial else "data rows"
    return [
        f"{len(header)} columns, {rows:,} {counted} after the header:",
        *(f"  {column[:_LINE_CHARS]}" for column in header[:_ENTRIES]),
        *_more(len(header) - _ENTRIES, "columns"),
    ]


def _plain(text: str) -> list[str]:
    head = text.splitlines()[:_HEAD_LINES]
    return ["first lines:", *(f"  {line[:_LINE_CHARS]}" for line in head)]


def _bounded(lines: Iterable[str]) -> str:
    summary = "\n".join(lines)
    if len(summary) <= SUMMARY_CHARS:
        return summary
    cut = summary.rfind("\n", 0, SUMMARY_CHARS - 40)
    return summary[: cut if cut > 0 else SUMMARY_CHARS - 40] + "\n  ... (summary cut)"
