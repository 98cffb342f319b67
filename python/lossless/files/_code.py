"""Outlines of source code, parsed with tree-sitter: classes, functions and imports
with their line numbers.

One tree-sitter query per language names what to list; matching runs in the
parser's C code, so a file of megabytes yields its outline without a Python walk
over every node.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

__all__ = ["CODE_LANGUAGES", "Definition", "outline"]

# The extension each grammar package serves, and the function of that package that
# returns the language (tree-sitter-typescript ships two grammars).
_GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "rust": ("tree_sitter_rust", "language"),
    "go": ("tree_sitter_go", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
}

CODE_LANGUAGES: frozenset[str] = frozenset(_GRAMMARS)

_JS_LIKE = """
(class_declaration name: (_) @name) @class
(function_declaration name: (_) @name) @function
(method_definition name: (_) @name) @function
(import_statement) @import
"""

# Each pattern captures the definition as @class, @function or @import, and its
# name as @name where it has one.
_QUERIES: dict[str, str] = {
    "python": """
(class_definition name: (identifier) @name) @class
(function_definition name: (identifier) @name) @function
(import_statement) @import
(import_from_statement) @import
""",
    "javascript": _JS_LIKE,
    "typescript": _JS_LIKE
    + """
(interface_declaration name: (_) @name) @class
(type_alias_declaration name: (_) @name) @class
(abstract_class_declaration name: (_) @name) @class
""",
    "rust": """
(struct_item name: (_) @name) @class
(enum_item name: (_) @name) @class
(trait_item name: (_) @name) @class
(impl_item type: (_) @name) @class
(mod_item name: (_) @name) @class
(function_item name: (_) @name) @function
(use_declaration) @import
""",
    "go": """
(type_spec name: (_) @name) @class
(function_declaration name: (_) @name) @function
(method_declaration name: (_) @name) @function
(import_spec) @import
""",
    "java": """
(class_declaration name: (_) @name) @class
(interface_declaration name: (_) @name) @class
(enum_declaration name: (_) @name) @class
(record_declaration name: (_) @name) @class
(method_declaration name: (_) @name) @function
(constructor_declaration name: (_) @name) @function
(import_declaration) @import
""",
    "c": """
(struct_specifier name: (_) @name body: (_)) @class
(enum_specifier name: (_) @name body: (_)) @class
(function_definition declarator: (function_declarator declarator: (_) @name)) @function
(preproc_include) @import
""",
    "cpp": """
(class_specifier name: (_) @name body: (_)) @class
(struct_specifier name: (_) @name body: (_)) @class
(namespace_definition name: (_) @name) @class
(function_definition declarator: (function_declarator declarator: (_) @name)) @function
(preproc_include) @import
""",
}
_QUERIES["tsx"] = _QUERIES["typescript"]


@dataclass(frozen=True, slots=True)
class Definition:
    """One entry of an outline."""

    kind: str  # "class", "function" or "import"
    name: str
    line: int  # from 1
    end_line: int
    depth: int  # how many listed classes or functions enclose it


@cache
def _parser_and_query(language: str) -> tuple[Any, Any]:
    import tree_sitter

    module_name, function = _GRAMMARS[language]
    grammar: Callable[[], object] = getattr(importlib.import_module(module_name), function)
    lang = tree_sitter.Language(grammar())
    return tree_sitter.Parser(lang), tree_sitter.Query(lang, _QUERIES[language])


def outline(language: str, source: bytes) -> tuple[list[Definition], bool]:
    """The definitions of ``source`` in ``language``, in file order, and whether the
    parser met syntax errors (the outline then lists what it could still read)."""
    import tree_sitter

    parser, query = _parser_and_query(language)
    tree = parser.parse(source)
    found: list[tuple[int, int, str, str]] = []
    for _, captures in tree_sitter.QueryCursor(query).matches(tree.root_node):
        for kind in ("class", "function", "import"):
            nodes = captures.get(kind)
            if not nodes:
                continue
            node = nodes[0]
            names = captures.get("name")
            name = _text(names[0]) if names else _first_line(node)
            found.append((node.start_point[0] + 1, node.end_point[0] + 1, kind, name))
    found.sort(key=lambda entry: (entry[0], -entry[1]))
    return _nested(found), tree.root_node.has_error


def _nested(found: list[tuple[int, int, str, str]]) -> list[Definition]:
    """Definitions with their depth: how many listed classes or functions, opened
    earlier and not yet closed, enclose each."""
    open_ends: list[int] = []
    result: list[Definition] = []
    seen: set[tuple[int, str, str]] = set()
    for line, end, kind, name in found:
        if (line, kind, name) in seen:
            continue
        seen.add((line, kind, name))
        while open_ends and open_ends[-1] < line:
            open_ends.pop()
        result.append(Definition(kind, name, line, end, len(open_ends)))
        if kind != "import":
            open_ends.append(end)
    return result


def _text(node: Any) -> str:
    raw: bytes = node.text or b""
    return " ".join(raw.decode(errors="replace").split())[:120]


def _first_line(node: Any) -> str:
    raw: bytes = node.text or b""
    return " ".join(raw.decode(errors="replace").splitlines()[0].split())[:120] if raw else ""
