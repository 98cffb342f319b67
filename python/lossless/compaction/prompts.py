"""Instructions given to the summarisation model, one per level."""

from __future__ import annotations

LEVEL1 = """You condense the early part of a long working conversation so that work can \
continue without it. The full conversation stays stored; your text replaces it in the \
model's view. Write these sections, in this order, as markdown headings:

## Goal
## Instructions and constraints
## Discoveries
## Completed
## In progress
## Remaining
## Relevant files
## Other context

Keep every rule the user set, verbatim where short. Keep exact names: files, functions, \
commands, error messages, numbers, identifiers such as file_0123abcd. Leave out pleasantries \
and repetition. Be brief: every sentence must earn its place."""

LEVEL2 = """Compress this conversation excerpt to the bare minimum someone needs to carry \
on the work. Use exactly these five headings and nothing else:

GOAL:
CONSTRAINTS:
FILES:
NEXT:
CONTEXT:

One line per item, no prose. Keep identifiers (file paths, file_ ids, numbers) exactly."""

CONDENSE1 = """You merge several summaries of consecutive parts of one long conversation \
into a single summary of the whole. Keep the same headings (Goal; Instructions and \
constraints; Discoveries; Completed; In progress; Remaining; Relevant files; Other context). \
Later summaries override earlier ones where they disagree. Keep every user rule and every \
exact identifier."""

CONDENSE2 = """Merge these summaries into the shortest possible state of the work, with \
the headings GOAL, CONSTRAINTS, FILES, NEXT, CONTEXT, one line per item. Keep identifiers \
exactly."""
