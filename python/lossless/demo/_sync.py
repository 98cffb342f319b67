"""The demo's drop-in act: an agent that keeps its whole history itself.

The loop holds the conversation as Chat Completions messages, as most agents and
frameworks do, and hands all of it to ``session.sync`` before every model call; it
sends what comes back to the project's local server on 127.0.0.1. Each message is
stored once however often the list is handed over. Then the user edits an earlier
instruction and the loop goes on from there: the session forks at the edit, sharing
what came before without a copy, and the original branch stays as it was.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lossless.demo._dropin_more import ProxyImportReport, show_proxy_and_import

if TYPE_CHECKING:
    from rich.console import Console

    from lossless.session import Session

__all__ = ["SyncReport", "show_sync"]

STEPS = 30
EDIT_AT = 12
KEY = "demo-drop-in"
INSTRUCTION = "Audit the payout service: read every module, note each risk."
EDITED = "Audit only the refunds module, and note each risk with its line."


@dataclass
class SyncReport:
    """What the drop-in loop showed."""

    requests: int = 0
    #: Requests that held the newest instruction within the budget.
    kept: int = 0
    handed_over: int = 0
    stored: int = 0
    parent_id: str = ""
    fork_id: str = ""
    shared: int = 0
    parent_unchanged: bool = False
    more: ProxyImportReport = field(default_factory=ProxyImportReport)

    @property
    def ok(self) -> bool:
        return (
            self.requests > 0
            and self.kept == self.requests
            and bool(self.fork_id)
            and self.shared > 0
            and self.parent_unchanged
            and self.more.ok
        )


async def show_sync(db_path: str, console: Console) -> SyncReport:
    from lossless.demo._config import SYSTEM_PROMPT, demo_config
    from lossless.session import Session
    from lossless.testing import LocalLLMServer

    console.rule("drop-in: the whole history every turn, a fork at an edit")
    report = SyncReport()
    with LocalLLMServer() as server:
        config = demo_config(None, server.base_url)
        async with Session.open(
            model="openai/demo-local",
            db=db_path,
            config=config,
            system_prompt=SYSTEM_PROMPT,
            key=KEY,
        ) as session:
            messages: list[dict[str, Any]] = [{"role": "user", "content": INSTRUCTION}]
            await _run(session, server, messages, INSTRUCTION, STEPS, report)
            report.parent_id = session.id
            before = [m.id for m in session.history()]
            report.stored = len(before)
            edited = [*messages[: EDIT_AT * 2 + 1], {"role": "user", "content": EDITED}]
            await _run(session, server, edited, EDITED, STEPS // 3, report)
            report.fork_id = session.id
            report.shared = sum(m.session_id != session.id for m in session.history())
        async with Session.open(
            model="openai/demo-local", db=db_path, config=config, session_id=report.parent_id
        ) as parent:
            report.parent_unchanged = [m.id for m in parent.history()] == before
    console.print(
        f"  {report.requests} requests from {report.handed_over} messages handed over; "
        f"{report.stored} stored once each; {report.kept} held the newest instruction "
        "within the budget"
    )
    console.print(
        f"  the edit forked {report.parent_id} as {report.fork_id}: {report.shared} messages "
        f"shared without a copy; the original branch "
        f"{'is unchanged' if report.parent_unchanged else 'CHANGED'} "
        f"(lossless tree {report.fork_id})"
    )
    report.more = await show_proxy_and_import(db_path, console)
    return report


async def _run(
    session: Session,
    server: Any,
    messages: list[dict[str, Any]],
    instruction: str,
    steps: int,
    report: SyncReport,
) -> None:
    """``steps`` tool rounds of the loop on ``messages``, which it extends."""
    import litellm

    from lossless.testing import Reply, ToolCallSpec

    for step in range(steps):
        module = f"payout/module_{step}.py"
        server.enqueue(Reply(tool_calls=[ToolCallSpec("read_file", json.dumps({"path": module}))]))
        request = await session.sync(messages, format="openai")
        report.requests += 1
        report.handed_over += len(messages)
        texts = [str(m.get("content")) for m in request.messages]
        report.kept += any(instruction in text for text in texts) and (
            request.tokens <= request.budget
        )
        response = await litellm.acompletion(
            model="openai/demo-local",
            messages=request.messages,
            api_base=server.base_url,
            api_key="unused",
        )
        reply = response.choices[0].message
        call = reply.tool_calls[0]
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.function.name,
                            "arguments": call.function.arguments,
                        },
                    }
                ],
            }
        )
        output = f"{module}: 180 lines; risk: rounding in line {40 + step}. " * 12
        messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
