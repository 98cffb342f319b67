"""The large files users attach in the demo's trajectory: CI logs, trace and CSV
exports, specs and screenshots, each a path, a file type, a token count and a
one-line summary made from the task's slots."""

from __future__ import annotations

import random
from collections.abc import Callable

# An attachment: (path, file type, token count, one-line summary).
Attachment = tuple[str, str, int, str]


def _ci_log(rng: random.Random, slots: dict[str, str]) -> Attachment:
    run = rng.randint(10_000, 99_999)
    summary = (
        f"CI run {run}, {rng.randint(1, 4)} failed and {rng.randint(800, 1900)} passed, "
        f"first failure {slots['test']}"
    )
    return f"ci/logs/run-{run}.log", "log", rng.randint(20_000, 180_000), summary


def _trace_export(rng: random.Random, slots: dict[str, str]) -> Attachment:
    domain = slots["domain"]
    day = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    summary = f"production traces for {domain}, {rng.randint(2_000, 90_000)} spans"
    return f"exports/traces/{domain}-{day}.jsonl", "jsonl", rng.randint(40_000, 300_000), summary


def _csv_export(rng: random.Random, slots: dict[str, str]) -> Attachment:
    path = f"exports/{slots['domain']}/{slots['nouns']}-2024-{rng.randint(1, 12):02d}.csv"
    summary = (
        f"monthly {slots['noun']} export, {rng.randint(10_000, 900_000)} rows with id, "
        "account_id, amount, currency, status"
    )
    return path, "csv", rng.randint(50_000, 400_000), summary


def _spec(rng: random.Random, slots: dict[str, str]) -> Attachment:
    path = f"docs/specs/{slots['domain']}-v{rng.randint(2, 9)}.md"
    summary = f"{slots['Noun']} API spec with endpoints, error codes and idempotency rules"
    return path, "markdown", rng.randint(8_000, 30_000), summary


def _screenshot(rng: random.Random, slots: dict[str, str]) -> Attachment:
    path = f"screenshots/{slots['domain']}-errors-{rng.randint(10_000, 99_999)}.png"
    summary = f"dashboard panel of {slots['noun']} errors by status code over 24h"
    return path, "image", rng.randint(900, 1_600), summary


ATTACHMENTS: tuple[Callable[[random.Random, dict[str, str]], Attachment], ...] = (
    _ci_log,
    _trace_export,
    _csv_export,
    _spec,
    _screenshot,
)
