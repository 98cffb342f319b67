"""The demo's ledger act: what survives every compaction.

One instruction states rules, a hard constraint and a specific value; a long tool
run follows, compacted round after round; the user then restates the value and the
cap. The request keeps every rule, shows only the newest value of each subject (the
older one stays stored, in the subject's history), and lists the commands the tools
ran and the errors still open.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["LedgerReport", "show_ledger"]

INSTRUCTION = (
    "Migrate the billing service to the new queue. "
    "If the error rate goes above five percent, stop and escalate to the on-call engineer. "
    "Under no circumstances run migrations against prod-db-1. "
    "Budget cap is $500 total. Never exceed it. "
    "The vault code is QX7-4411-ZB."
)
RESTATED = "Update: the vault code changed to MM2-9031-KT. The budget cap is now $750."
RULES = ("stop and escalate to the on-call engineer", "Under no circumstances")


@dataclass
class LedgerReport:
    """What the ledger act showed."""

    compactions: int = 0
    rules_kept: bool = False
    latest_only: bool = False
    history_kept: bool = False
    records: bool = False
    tokens: int = 0

    @property
    def ok(self) -> bool:
        return (
            self.compactions >= 2
            and self.rules_kept
            and self.latest_only
            and (self.history_kept and self.records)
        )


async def show_ledger(db_path: str, console: Console) -> LedgerReport:
    from lossless import Session, ToolPart
    from lossless.ledger import ledger_subject
    from lossless.testing import small_window

    console.rule("ledger: rules, limits and values kept through every compaction")
    report = LedgerReport()
    async with Session.open(model="openai/demo-ledger", db=db_path, config=small_window()) as s:
        await s.record("user", INSTRUCTION)
        for n in range(40):
            if n == 20:
                await s.record("user", RESTATED)
            command = f"python migrate.py --table t{n}"
            output = f"migrated rows of t{n}: " + "ok " * 80 + f"\nexit code: {int(n % 9 == 4)}"
            part = ToolPart("bash", f"m{n}", {"command": command}, output=output)
            await s.record("assistant", [part])
            if n % 10 == 9:
                result = await s.compact()
                report.compactions += int(bool(result.summary_ids))
        request = await s.context()
        system = request.messages[0]["content"]
        stable, work = await s.ledger.render()
        report.rules_kept = all(rule in system for rule in RULES)
        report.latest_only = ("MM2-9031-KT" in stable and "$750" in stable) and not (
            "QX7-4411-ZB" in stable or "$500" in stable
        )
        history = await s.ledger.history(ledger_subject("The vault code is QX7-4411-ZB."))
        report.history_kept = [row.text for row in history] == [
            "The vault code is QX7-4411-ZB.",
            "Update: the vault code changed to MM2-9031-KT. (replaces: The vault code is ….)",
        ]
        report.records = "python migrate.py" in json.dumps(request.messages) and "exit 1" in work
        report.tokens = (await s.ledger.tokens()).tokens
        console.print(stable)
        console.print(work)
        console.print(
            f"{report.compactions} compactions; the vault code's history: "
            f"{[row.text for row in history]}; the ledger takes {report.tokens} tokens"
        )
    return report
