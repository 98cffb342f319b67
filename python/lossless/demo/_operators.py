"""The demo's fourth act: a large file handed to an agent, and a small batch mapped.

The local OpenAI-compatible server (127.0.0.1, started here) plays the model. A
generated source file of some 150 KB is too large to inline: the session stores it
whole and hands the model a reference with an outline; the model reads the lines
it needs through ``lossless_read_file``. Then a batch of tickets is classified by
an LLMMap with an output schema, and three agents look tickets up in sub-sessions
linked to the demo's session.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["OperatorsReport", "show_files_and_maps"]

_CUTOFF_LINE = 'SETTLEMENT_CUTOFF = "17:30 UTC"  # payouts after this settle the next day'
_TICKETS = [
    "The refund never arrived.",
    "Love the new dashboard!",
    "Invoices show the wrong currency.",
    "Thanks, all sorted now.",
    "Payout failed twice today.",
    "Great support, quick answer.",
]


@dataclass
class OperatorsReport:
    """What the fourth act showed."""

    file_id: str = ""
    file_bytes: int = 0
    stored_bytes: int = 0
    read_back: bool = False
    agent_read_cutoff: bool = False
    classified: int = 0
    agents_ok: int = 0
    sub_sessions: int = 0


def _source() -> str:
    """A module of 1,500 small functions with the constant the agent looks for."""
    parts = ['"""Settlement rules of the payhub ledger."""\n\nfrom decimal import Decimal\n']
    for n in range(1_500):
        if n == 1_000:
            parts.append(f"\n{_CUTOFF_LINE}\n")
        parts.append(
            f"\n\ndef settle_batch_{n}(amount: Decimal) -> Decimal:\n"
            f'    """Settle batch {n}: fee of {n % 7} basis points."""\n'
            f"    return amount * (Decimal(10_000) - {n % 7}) / Decimal(10_000)\n"
        )
    return "".join(parts)


def _model(request: dict[str, Any]) -> Any:
    """The scripted model: reads the file by lines, labels tickets, looks tickets up."""
    from lossless.testing import Reply, ToolCallSpec, content_text

    messages = request["messages"]
    last = messages[-1]
    text = content_text(last.get("content"))
    tools = {tool["function"]["name"] for tool in request.get("tools") or []}
    if "lossless_read_file" in tools:
        if last["role"] == "tool":
            found = re.search(r"SETTLEMENT_CUTOFF = .*?(\d\d:\d\d UTC)", text)
            cutoff = found.group(1) if found else "an unknown time"
            return Reply(text=f"Payouts settle the same day until {cutoff}.")
        file_id = re.findall(r"file_[0-9a-f]{32}", json.dumps(messages))[-1]
        call = {"file_id": file_id, "start_line": 5_003, "end_line": 5_007}
        return Reply(tool_calls=[ToolCallSpec("lossless_read_file", call)])
    if "lookup" in tools:
        if last["role"] == "tool":
            return Reply(text=f"status: {text}")
        return Reply(tool_calls=[ToolCallSpec("lookup", {"ticket": text[-2:].strip(" .")})])
    negative = any(word in text for word in ("never", "wrong", "failed"))
    return Reply(text=json.dumps({"label": "complaint" if negative else "praise"}))


async def show_files_and_maps(db_path: str, console: Console) -> OperatorsReport:
    from pydantic import BaseModel

    from lossless.config import Config, LLMConfig, ModelConfig
    from lossless.operators import AgenticMap, AgentTool, LLMMap
    from lossless.session import Session
    from lossless.testing import LocalLLMServer

    class Label(BaseModel):
        label: str

    report = OperatorsReport()
    console.rule("a large file handed to the agent, and a batch mapped")
    with LocalLLMServer() as server, tempfile.TemporaryDirectory() as folder:
        server.responder = _model
        config = Config(
            model=ModelConfig(context_limit=32_000, max_output_tokens=4_000),
            llm=LLMConfig(api_base=server.base_url, api_key="unused", num_retries=0),
        )
        path = Path(folder) / "settlement.py"
        path.write_text(_source())
        async with Session.open(model="openai/demo-local", db=db_path, config=config) as session:
            added = await session.add_file(path)
            stored = added.file
            assert stored is not None
            report.file_id, report.file_bytes = stored.file_id, stored.byte_count
            report.stored_bytes = stored.stored_bytes
            outline = stored.summary.splitlines()
            console.print(
                f"  {path.name}: {stored.byte_count:,} bytes, {added.token_count:,} tokens "
                f"-> reference {stored.file_id} ({stored.stored_bytes:,} bytes stored)"
            )
            console.print(f"  outline: {escape(' | '.join(outline[:4]))} ...")
            answer = await session.send("When do payouts settle?", tools="recall")
            report.agent_read_cutoff = "17:30 UTC" in answer.text
            console.print(f"  the agent read lines by id and answered: {escape(answer.text)}")
            report.read_back = (
                await session.read_file(stored.file_id)
            ).encode() == path.read_bytes()

            labels = await LLMMap(
                model="openai/demo-local",
                template="Label this support ticket: {{ item }}",
                output_schema=Label,
                concurrency=4,
                db=db_path,
                config=config,
            ).run_all(_TICKETS)
            report.classified = sum(result.ok for result in labels)
            shown = ", ".join(f"{r.output.label}" for r in labels if r.ok)
            console.print(f"  LLMMap over {len(_TICKETS)} tickets: {escape(shown)}")

            lookup = AgentTool(
                name="lookup",
                handler=lambda args: f"ticket {args.get('ticket', '?')} is open",
                parameters={"type": "object", "properties": {"ticket": {"type": "string"}}},
            )
            agents = await AgenticMap(
                model="openai/demo-local",
                template="Look up ticket {{ item }}.",
                tools=[lookup],
                db=db_path,
                config=config,
                parent=session,
            ).run_all(["T1", "T2", "T3"])
            report.agents_ok = sum(result.ok for result in agents)
            report.sub_sessions = len({r.session_id for r in agents if r.session_id})
            console.print(
                f"  AgenticMap: {report.agents_ok} of 3 agents finished, in sub-sessions of "
                f"{session.id} (lossless sessions --parent {session.id})"
            )
    return report
