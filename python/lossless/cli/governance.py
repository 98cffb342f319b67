"""``lossless erase``, ``lossless retention`` and ``lossless maintain``: the owner's
commands (see docs/GOVERNANCE.md). Each opens the database for writing, since each
changes it."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Annotated

import typer

from lossless.cli._common import fail, plural, require_database, settings, stdout_console
from lossless.store import Store

__all__ = ["erase", "maintain", "retention"]

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def parse_duration(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m``, ``1w2d``: a time to live."""
    compact = text.replace(" ", "").lower()
    found = _DURATION.findall(compact)
    if not found or "".join(number + unit for number, unit in found) != compact:
        fail(f"--ttl: expected a duration such as 30d, 12h or 90m, got {text!r}")
    return timedelta(seconds=sum(float(n) * _UNIT_SECONDS[unit] for n, unit in found))


def _store(ctx: typer.Context) -> Store:
    db = settings(ctx).db
    require_database(db)
    return Store(db)


def erase(
    ctx: typer.Context,
    session: Annotated[str | None, typer.Option(help="Erase this session and its forks.")] = None,
    message: Annotated[str | None, typer.Option(help="Erase this one message.")] = None,
    subject: Annotated[
        str | None, typer.Option(help="Erase every session attached to this subject.")
    ] = None,
    by: Annotated[str, typer.Option(help="Who asked, for the receipt.")] = "lossless-cli",
    reason: Annotated[str, typer.Option(help="Why, for the receipt.")] = "",
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask to confirm.")] = False,
) -> None:
    """Erase a session, a message or a subject's sessions for good, with a receipt."""
    from lossless.governance import erase as erase_target

    target = session or message or subject
    if sum(value is not None for value in (session, message, subject)) != 1 or not target:
        fail("erase: give exactly one of --session, --message or --subject")
    store = _store(ctx)
    if not yes and not typer.confirm(f"Erase {target} for good?", default=False):
        raise typer.Exit(1)
    receipt = erase_target(
        store, session=session, message=message, subject=subject, by=by, reason=reason
    )
    counts = json.loads(receipt.counts)
    console = stdout_console()
    console.print(
        f"erased {receipt.target_kind} {receipt.target}: "
        f"{plural(len(counts['sessions']), 'session')}, {plural(counts['messages'], 'message')}, "
        f"{plural(counts['summaries_replaced'], 'summary')} marked; receipt {receipt.id}"
    )
    if not receipt.scrubbed:
        console.print(
            "the write-ahead log was busy: its bytes leave the disk at the next checkpoint"
        )


def retention(
    ctx: typer.Context,
    ttl: Annotated[
        str | None, typer.Option(help="Keep for this long after the newest message: 30d, 12h.")
    ] = None,
    session: Annotated[str | None, typer.Option(help="The session the rule is for.")] = None,
    subject: Annotated[str | None, typer.Option(help="The subject the rule is for.")] = None,
    lift: Annotated[bool, typer.Option("--lift", help="Lift the rule instead.")] = False,
) -> None:
    """Set or lift a time to live; without a target, list the rules in force."""
    from lossless.governance import retention_rules, set_retention

    store = _store(ctx)
    if session is None and subject is None:
        for rule in retention_rules(store):
            stdout_console().print(
                f"{rule.target_kind} {rule.target}: {timedelta(milliseconds=rule.ttl_ms)}"
            )
        return
    if lift == (ttl is not None):
        fail("retention: give --ttl DURATION or --lift")
    span = None if lift or ttl is None else parse_duration(ttl)
    set_retention(store, session=session, subject=subject, ttl=span)
    stdout_console().print(
        "rule lifted" if span is None else f"kept for {span} after the newest message"
    )


def maintain(ctx: typer.Context) -> None:
    """Erase every session past its time to live, in short transactions."""
    from lossless.governance import maintain as run_maintenance

    report = run_maintenance(_store(ctx))
    stdout_console().print(
        f"erased {plural(len(report.erased_sessions), 'expired session')} in {report.seconds:.2f} s"
    )
