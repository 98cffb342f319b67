"""The demo's prompt-cache act: the opening of the trajectory, sent.

The main replay records turns, so no request goes out. Here the trajectory's first
turns are sent to the project's local OpenAI-compatible server (on 127.0.0.1,
started here) through litellm, as an agent loop would: each user turn is a question,
the model asks for the tool calls the trajectory made, each result is stored, and
the model is asked again. The server answers with the cached tokens a caching
provider would report; the session tells, every turn, how much of its request
repeats the previous one, and every compaction, what it invalidated.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lossless.demo.trajectory import generate_trajectory

if TYPE_CHECKING:
    from rich.console import Console

    from lossless.events import Event
    from lossless.session import Session

__all__ = ["CacheReport", "show_prompt_cache"]

# The opening of the trajectory, enough for several compactions in the demo's window.
SENT_TURNS = 360


@dataclass
class CacheReport:
    """What the sent segment measured."""

    requests: int = 0
    input_tokens: int = 0
    stable_tokens: int = 0
    cached_tokens: int = 0
    server_chars: int = 0
    server_shared_chars: int = 0
    invalidated: list[int] = field(default_factory=list)
    error: str = ""

    @property
    def stable_share(self) -> float:
        return self.stable_tokens / max(self.input_tokens, 1)

    @property
    def server_share(self) -> float:
        return self.server_shared_chars / max(self.server_chars, 1)

    @property
    def cached_share(self) -> float:
        return self.cached_tokens / max(self.input_tokens, 1)

    @property
    def invalidated_median(self) -> int:
        return int(statistics.median(self.invalidated)) if self.invalidated else 0


async def show_prompt_cache(db_path: str, console: Console) -> CacheReport:
    from lossless.demo._config import SYSTEM_PROMPT, demo_config
    from lossless.events import EventName
    from lossless.session import Session
    from lossless.testing import LocalLLMServer

    console.rule("prompt cache: the opening of the trajectory, sent")
    report = CacheReport()

    def on_compaction(event: Event) -> None:
        if event.payload.get("invalidated_tokens"):
            report.invalidated.append(int(event.payload["invalidated_tokens"]))

    with LocalLLMServer(report_cached_tokens=True) as server:
        async with Session.open(
            model="openai/demo-local",
            db=db_path,
            config=demo_config(None, server.base_url),
            system_prompt=SYSTEM_PROMPT,
        ) as session:
            session.events.subscribe(on_compaction, EventName.COMPACTION_COMPLETED)
            await session.set_task("Refactor the payhub payout client; keep tests green.")
            await _send_turns(session, server, report)
            await session.compaction.wait_for_pending()
        for prefix in server.prefixes:
            report.server_chars += prefix.chars
            report.server_shared_chars += prefix.shared_chars
    console.print(
        f"  {report.requests} requests, {report.input_tokens:,} input tokens: "
        f"{report.stable_share:.1%} repeat the previous request's opening "
        f"(the server's own count: {report.server_share:.1%}; cached tokens it reported: "
        f"{report.cached_share:.1%})"
    )
    console.print(
        f"  {len(report.invalidated)} compactions, each invalidating a median of "
        f"{report.invalidated_median:,} cached tokens"
    )
    return report


async def _send_turns(session: Session, server: Any, report: CacheReport) -> None:
    from lossless.testing import Reply, ToolCallSpec

    question: str | None = None
    for turn in generate_trajectory(turns=SENT_TURNS):
        text = turn.text
        if turn.role == "user":
            question = text or None
            continue
        tools = turn.answered_tools
        calls = [ToolCallSpec(tool.name, tool.input) for tool in tools]
        server.enqueue(Reply(text=text, tool_calls=calls))
        result = await (session.send(question) if question else session.respond())
        question = None
        report.requests += 1
        report.input_tokens += result.context_tokens
        report.stable_tokens += result.stable_prefix_tokens
        report.cached_tokens += result.cached_input_tokens or 0
        for call, tool in zip(result.tool_calls, tools, strict=True):
            failed = tool.status == "error"
            await session.update_tool(
                call.call_id,
                status="error" if failed else "completed",
                output=tool.output,
                error=tool.error if failed else None,
            )
