"""The offline demo: a long agent trajectory replayed through a Session on a SQLite
file, compacted as it goes, then recalled: a fact from turn 3 found and expanded."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from lossless.demo._agents_today import AgentsTodayReport, show_agents_today
from lossless.demo._cache import CacheReport, show_prompt_cache
from lossless.demo._config import SYSTEM_PROMPT, demo_config
from lossless.demo._frameworks import FrameworksReport, show_frameworks
from lossless.demo._governance import GovernanceReport, show_governance
from lossless.demo._ledger import LedgerReport, show_ledger
from lossless.demo._mcp import McpReport, show_mcp_recall
from lossless.demo._operators import OperatorsReport, show_files_and_maps
from lossless.demo._own_loop import OwnLoopReport, show_own_loop
from lossless.demo._stream import StreamReport, show_cancelled_stream
from lossless.demo._sync import SyncReport, show_sync
from lossless.demo._telemetry import TelemetryReport, show_telemetry
from lossless.demo.trajectory import (
    RECALL_FACT,
    RECALL_MESSAGE,
    RECALL_QUERY,
    RECALL_TURN,
    generate_trajectory,
)

if TYPE_CHECKING:
    from lossless.events import Event
    from lossless.session import Session

__all__ = ["DemoReport", "demo_config", "run_demo"]

# The trajectory is replayed into a deliberately small window so that a run of a few
# hundred turns compacts many times; the tokenizer is gpt-4o's.
DEMO_MODEL = "gpt-4o"
MIN_COMPACTIONS = 5
# Every this many turns, the request the session would send is run through the
# provider conformance check (the `openai` types and litellm's transformations).
CHECK_EVERY = 20


@dataclass
class DemoReport:
    """What a demo run did; the numbers the closing table shows."""

    session_id: str = ""
    turns: int = 0
    compactions: int = 0
    levels: list[int] = field(default_factory=list)
    pruned_parts: int = 0
    recall_found: bool = False
    recall_expanded: bool = False
    recall_summary_id: str | None = None
    file_ids_total: int = 0
    file_ids_in_context: int = 0
    context_tokens: int = 0
    budget: int = 0
    seconds: float = 0.0
    requests_checked: int = 0
    requests_failed: int = 0
    request_violations: list[str] = field(default_factory=list)
    worst_view: float = 0.0
    stream: StreamReport = field(default_factory=StreamReport)
    mcp: McpReport = field(default_factory=McpReport)
    operators: OperatorsReport = field(default_factory=OperatorsReport)
    cache: CacheReport = field(default_factory=CacheReport)
    own_loop: OwnLoopReport = field(default_factory=OwnLoopReport)
    agents_today: AgentsTodayReport = field(default_factory=AgentsTodayReport)
    sync: SyncReport = field(default_factory=SyncReport)
    frameworks: FrameworksReport = field(default_factory=FrameworksReport)
    governance: GovernanceReport = field(default_factory=GovernanceReport)
    ledger: LedgerReport = field(default_factory=LedgerReport)
    telemetry: TelemetryReport = field(default_factory=TelemetryReport)
    pinned_in_system: bool = False
    #: Per arena zone: (tokens injected, cap), in the request after the run.
    zones: dict[str, tuple[int, int]] = field(default_factory=dict)


def run_demo(
    db_path: str, *, turns: int, model: str | None, console: Console, api_base: str | None = None
) -> int:
    """Run the demo into ``db_path``; returns the process exit code (0 when recall worked).

    ``model`` summarises with that litellm model (at ``api_base`` when given) instead of
    the built-in extractive summariser.
    """
    report = anyio.run(_replay, db_path, turns, model, api_base, console)
    _print_report(report, db_path, console)
    console.print(
        "See what the model saw at every turn, and what was compacted away: "
        f"[bold]lossless --db {escape(db_path)} ui[/], then open http://127.0.0.1:8766/"
    )
    ok = (
        report.recall_found
        and report.recall_expanded
        and report.file_ids_in_context == report.file_ids_total
        and not report.request_violations
        and report.stream.kept
        and report.pinned_in_system
        # Without the mcp package (a plain install) the third act is skipped, said so.
        and (report.mcp.expanded or bool(report.mcp.error))
        and report.operators.read_back
        and report.operators.agent_read_cutoff
        and report.operators.classified == 6
        and report.operators.agents_ok == 3
        and report.cache.requests > 0
        and report.own_loop.requests > 0
        and report.own_loop.kept == report.own_loop.requests
        and report.agents_today.ok
        and report.sync.ok
        and report.frameworks.ok
        and report.governance.ok
        and report.ledger.ok
        and report.telemetry.ok
    )
    for violation in report.request_violations[:5]:
        console.print(f"[red]{escape(violation)}[/]")
    if report.compactions < MIN_COMPACTIONS:
        console.print(
            f"[yellow]only {report.compactions} compactions; use more --turns to see more[/]"
        )
    return 0 if ok else 1


async def _replay(
    db_path: str, turns: int, model: str | None, api_base: str | None, console: Console
) -> DemoReport:
    from lossless.events import EventName
    from lossless.session import Session

    report = DemoReport()
    trajectory = generate_trajectory(turns=turns)
    started = time.perf_counter()
    async with await Session.create(
        model=DEMO_MODEL,
        db=db_path,
        config=demo_config(model, api_base),
        system_prompt=SYSTEM_PROMPT,
    ) as session:
        report.session_id, report.budget = session.id, session.budget.usable

        def on_compaction(event: Event) -> None:
            if event.payload.get("summary_ids"):
                report.compactions += 1
                report.levels.extend(event.payload.get("levels", []))
            report.pruned_parts += int(event.payload.get("pruned_parts", 0))

        session.events.subscribe(on_compaction, EventName.COMPACTION_COMPLETED)
        with _progress(console) as progress:
            task = progress.add_task("replay", total=len(trajectory), tokens="", compactions="")
            for index, turn in enumerate(trajectory):
                await session.record(turn.role, list(turn.parts))
                report.turns += 1
                if index == RECALL_TURN:
                    # The constraint must hold at every later turn: pin it, whatever
                    # compaction does to the message that stated it.
                    await session.pin(RECALL_MESSAGE, key="turn-3-constraint")
                    await session.set_task("Refactor the payhub payout client; keep tests green.")
                view = session.view_tokens() / max(report.budget, 1)
                report.worst_view = max(report.worst_view, view)
                if report.turns % CHECK_EVERY == 0:
                    _check_request(session, report)
                if report.turns % 5 == 0 or report.turns == len(trajectory):
                    progress.update(
                        task,
                        completed=report.turns,
                        tokens=f"{session.view_tokens():>6,} / {report.budget:,} tokens",
                        compactions=f"{report.compactions} compactions {_levels(report.levels)}",
                    )
            await session.compaction.wait_for_pending()
        report.seconds = time.perf_counter() - started
        _check_request(session, report)
        _check_context(session, report)
        _show_recall(session, report, console)
    report.cache = await show_prompt_cache(db_path, console)
    report.own_loop = await show_own_loop(db_path, console)
    report.agents_today = await show_agents_today(db_path, console)
    report.sync = await show_sync(db_path, console)
    report.frameworks = await show_frameworks(db_path, console)
    report.stream = await show_cancelled_stream(db_path, console)
    report.mcp = await show_mcp_recall(db_path, console)
    report.operators = await show_files_and_maps(db_path, console)
    report.governance = await show_governance(db_path, console)
    report.ledger = await show_ledger(db_path, console)
    report.telemetry = await show_telemetry(db_path, console)
    return report


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("turn {task.completed:>4.0f}/{task.total:.0f}"),
        BarColumn(),
        TextColumn("{task.fields[tokens]}"),
        TextColumn("{task.fields[compactions]}"),
        TimeElapsedColumn(),
        console=console,
    )


def _levels(levels: list[int]) -> str:
    if not levels:
        return ""
    counts = {level: levels.count(level) for level in sorted(set(levels))}
    return "(" + ", ".join(f"L{level}×{count}" for level, count in counts.items()) + ")"


def _check_request(session: Session, report: DemoReport) -> None:
    """Would OpenAI, Anthropic, Bedrock and Gemini accept the next request?"""
    from lossless.testing.conformance import violations

    found = violations(session.build_context().messages)
    report.requests_checked += 1
    report.requests_failed += bool(found)
    report.request_violations.extend(found)


def _check_context(session: Session, report: DemoReport) -> None:
    """Every file id the session ever saw must still be in what the model would read."""
    context = session.build_context()
    text = "\n".join(str(message.get("content") or "") for message in context.messages)
    file_ids = session.store.session_file_ids(session.id)
    report.file_ids_total = len(file_ids)
    report.file_ids_in_context = sum(1 for file_id in file_ids if file_id in text)
    report.context_tokens = context.tokens
    system = str(context.messages[0].get("content") or "") if context.messages else ""
    report.pinned_in_system = RECALL_FACT in system
    if context.injection is not None:
        report.zones = {
            name: (zone.accepted, zone.cap)
            for name, zone in context.injection.zones.items()
            if zone.demand or zone.accepted
        }


def _show_recall(session: Session, report: DemoReport, console: Console) -> None:
    from lossless.recall import expand, grep

    console.rule(f"recall: the constraint stated at turn {RECALL_TURN}")
    console.print(f"grep [bold]{RECALL_QUERY!r}[/] over every stored message and summary")
    hits = grep(RECALL_QUERY, session=session, limit=5)
    message_hits = [hit for hit in hits if hit.owner_kind == "message"]
    if not message_hits:
        console.print("[red]no hit: the fact was lost[/]")
        return
    hit = message_hits[0]
    report.recall_found = True
    report.recall_summary_id = hit.covering_summary_id
    console.print(f"  found in {hit.owner_id}: {escape(hit.snippet)}")
    if hit.covering_summary_id is None:
        console.print("  the message is still in the raw view (not compacted yet)")
        report.recall_expanded = True
        return
    console.print(
        f"  now covered by summary {hit.covering_summary_id}; expanding it around the hit"
    )
    expansion = expand(hit.covering_summary_id, db=session, around=hit.owner_id, max_tokens=4_000)
    for message in expansion.messages:
        if RECALL_FACT in message.text:
            report.recall_expanded = True
            console.print(f"  [green]recovered verbatim[/] (seq {message.seq}, {message.role}):")
            console.print(f"  {escape(message.text[:400])}")
    console.print(f"  {escape(expansion.note)}")


def _print_report(report: DemoReport, db_path: str, console: Console) -> None:
    table = Table(title="lossless demo", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    size = sum(path.stat().st_size for path in Path(db_path).parent.glob(Path(db_path).name + "*"))
    rows = [
        ("database", f"{db_path} ({size / 1e6:.1f} MB)"),
        ("session", report.session_id),
        ("turns replayed", f"{report.turns} in {report.seconds:.1f} s"),
        ("compactions", f"{report.compactions} {_levels(report.levels)}"),
        ("tool outputs pruned", str(report.pruned_parts)),
        ("context now", f"{report.context_tokens:,} of {report.budget:,} usable tokens"),
        ("largest view during the run", f"{report.worst_view:.0%} of the usable budget"),
        (
            "requests accepted by OpenAI, Anthropic, Bedrock, Gemini",
            f"{report.requests_checked - report.requests_failed} of {report.requests_checked}",
        ),
        ("file ids kept in context", f"{report.file_ids_in_context} of {report.file_ids_total}"),
        ("turn-3 fact found / expanded", f"{report.recall_found} / {report.recall_expanded}"),
        ("turn-3 constraint pinned in the system message", str(report.pinned_in_system)),
        (
            "arena zones: tokens injected / cap",
            ", ".join(f"{name} {used} / {cap}" for name, (used, cap) in report.zones.items())
            or "none",
        ),
        (
            "sent requests: input repeating the previous request / cached (server)",
            f"{report.cache.stable_share:.1%} / {report.cache.cached_share:.1%} of "
            f"{report.cache.input_tokens:,} tokens in {report.cache.requests} requests",
        ),
        (
            "their compactions: cached tokens invalidated, median",
            f"{report.cache.invalidated_median:,} in each of {len(report.cache.invalidated)}",
        ),
        (
            "own loop (context() + its own model call): requests keeping every promise",
            f"{report.own_loop.kept} of {report.own_loop.requests} "
            f"({report.own_loop.trimmed} trimmed while compaction caught up; "
            f"{report.own_loop.stable_share:.1%} of input repeated)",
        ),
        (
            "thinking + screenshots (Anthropic own loop): requests accepted by format",
            ", ".join(f"{name} {count}" for name, count in report.agents_today.accepted.items())
            + f"; {report.agents_today.images_inline} inline, "
            f"{report.agents_today.images_referenced} referenced, read back "
            f"{report.agents_today.read_back_exact}",
        ),
        (
            "drop-in (sync of the whole history): requests keeping the instruction",
            f"{report.sync.kept} of {report.sync.requests}; {report.sync.handed_over:,} "
            f"messages handed over, {report.sync.stored} stored; an edit forked it, "
            f"{report.sync.shared} shared; through the proxy "
            f"{report.sync.more.upstream_messages} of {report.sync.more.client_messages} "
            f"went upstream; an imported transcript holds {report.sync.more.imported}",
        ),
        (
            "frameworks on lossless: requests holding the pin",
            ", ".join(
                f"{name} {kept}/{total}"
                for name, (kept, total, _) in report.frameworks.runs.items()
            )
            + "".join(f", {name} skipped" for name in report.frameworks.skipped),
        ),
        (
            "reply cut off by a timeout: received / kept",
            f"{report.stream.received_chars:,} / {report.stream.stored_chars:,} characters "
            f"({report.stream.status})",
        ),
        (
            "over MCP (lossless mcp): fact found / read back",
            f"{report.mcp.found} / {report.mcp.expanded}, grep in {report.mcp.grep_ms:.1f} ms",
        ),
        (
            "large file: stored / read back / agent read it by lines",
            f"{report.operators.file_bytes:,} bytes as {report.operators.stored_bytes:,} / "
            f"{report.operators.read_back} / {report.operators.agent_read_cutoff}",
        ),
        (
            "LLMMap tickets labelled / AgenticMap agents finished",
            f"{report.operators.classified} of 6 / {report.operators.agents_ok} of 3",
        ),
        (
            "governance: token redacted / file encrypted / planted text fenced / "
            "secret erased from request, search, disk",
            f"{report.governance.redacted} / {report.governance.encrypted} / "
            f"{report.governance.fenced} / {report.governance.erased_from_request}, "
            f"{report.governance.erased_from_search}, {report.governance.erased_from_disk}; "
            f"{report.governance.expired} session expired, {report.governance.receipts} receipts",
        ),
        (
            "ledger: compactions / every rule kept / only the newest values / "
            "earlier values stored / commands and exit codes",
            f"{report.ledger.compactions} / {report.ledger.rules_kept} / "
            f"{report.ledger.latest_only} / {report.ledger.history_kept} / "
            f"{report.ledger.records}; {report.ledger.tokens} tokens",
        ),
        (
            "telemetry: spans / chat input tokens / a compaction span",
            "not run: no OpenTelemetry SDK"
            if report.telemetry.skipped
            else f"{sum(report.telemetry.spans.values())} / {report.telemetry.chat_input_tokens} / "
            f"{bool(report.telemetry.compaction)}",
        ),
    ]
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
