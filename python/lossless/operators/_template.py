"""Prompt templates: Jinja2, checked through their syntax tree before a map runs."""

from __future__ import annotations

from typing import Any

import jinja2
import jinja2.meta

from lossless.errors import InvalidInputError

__all__ = ["compile_template"]

# StrictUndefined: a template that reads a field the item lacks fails that item,
# rather than sending the model a prompt with a hole in it.
_ENV = jinja2.Environment(
    undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True
)


def compile_template(template: object) -> jinja2.Template:
    """The compiled template. Refuses one that is not text, does not parse
    (:class:`InvalidInputError` naming the line) or never reads ``item``
    (:class:`InvalidInputError`, a ``ValueError``): every item would get the same prompt."""
    if not isinstance(template, str):
        raise InvalidInputError(f"template: expected str, got {type(template).__name__}")
    try:
        tree = _ENV.parse(template)
    except jinja2.TemplateSyntaxError as err:
        raise InvalidInputError(
            f"template: syntax error on line {err.lineno}: {err.message}"
        ) from None
    if "item" not in jinja2.meta.find_undeclared_variables(tree):
        raise InvalidInputError(
            "template: never uses {{ item }}: every item would get the same prompt"
        )
    return _ENV.from_string(template)


def render(template: jinja2.Template, item: Any) -> str:
    """The prompt for ``item``."""
    return template.render(item=item)
