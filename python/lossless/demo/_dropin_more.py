"""The drop-in act's second half: a client through ``lossless proxy``, unchanged but
for its base URL, and a coding agent's transcript imported as a session."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["ProxyImportReport", "show_proxy_and_import"]

SESSION_ID = "3f6c2a10-7b4e-4d2a-9c1e-5a8b7d6e4f21"
PROJECT = "/srv/payhub"


@dataclass
class ProxyImportReport:
    """What the proxy and the import showed."""

    client_messages: int = 0
    upstream_messages: int = 0
    imported: int = 0
    reimported: int = 0
    found: bool = False

    @property
    def ok(self) -> bool:
        return (
            0 < self.upstream_messages < self.client_messages
            and self.imported > 0
            and self.reimported == 0
            and self.found
        )


async def show_proxy_and_import(db_path: str, console: Console) -> ProxyImportReport:
    report = ProxyImportReport()
    await _through_proxy(db_path, report)
    console.print(
        f"  through lossless proxy: the client sent its {report.client_messages} messages, "
        f"the upstream got {report.upstream_messages}"
    )
    await _import_transcript(db_path, report)
    console.print(
        f"  lossless import claude-code: the session holds {report.imported} messages, "
        f"{report.reimported} stored again by a second import; grep finds its tool output: "
        f"{report.found}"
    )
    return report


async def _through_proxy(db_path: str, report: ProxyImportReport) -> None:
    import openai

    from lossless.proxy import LosslessProxy
    from lossless.testing import LocalLLMServer, Reply, ToolCallSpec, small_window

    config = small_window()
    with LocalLLMServer() as upstream:
        async with (
            LosslessProxy(upstream=upstream.base_url, db=db_path, config=config, port=0) as proxy,
            openai.AsyncOpenAI(base_url=proxy.url, api_key="local") as client,
        ):
            messages: list[Any] = [{"role": "user", "content": "Run the payout tests."}]
            for step in range(20):
                arguments = json.dumps({"suite": f"payout_{step}"})
                upstream.enqueue(Reply(tool_calls=[ToolCallSpec("run_tests", arguments)]))
                reply = await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
                message = reply.choices[0].message
                assert message.tool_calls, "the local server answers with the call queued"
                messages.append(message.model_dump(exclude_none=True))
                output = f"payout_{step}: 12 passed " + "trace " * 200
                messages.append(
                    {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": output}
                )
            report.client_messages = len(messages) - 2
            report.upstream_messages = len(upstream.requests[-1]["messages"])


async def _import_transcript(db_path: str, report: ProxyImportReport) -> None:
    from lossless.imports import import_claude_code
    from lossless.recall import grep

    folder = Path(tempfile.mkdtemp())
    transcript = folder / f"{SESSION_ID}.jsonl"
    transcript.write_text("".join(json.dumps(line) + "\n" for line in _transcript()))
    first = await import_claude_code(transcript, db=db_path)
    again = await import_claude_code(transcript, db=db_path)
    report.imported = sum(result.stored + result.already for result in first)
    report.reimported = sum(result.stored for result in again)
    session = first[0].session_id
    report.found = session is not None and bool(
        grep("ledger_rounding", db=db_path, session=session)
    )


def _transcript() -> list[dict[str, Any]]:
    """A short Claude Code session: a prompt, a tool call and its result, an answer."""
    common = {"sessionId": SESSION_ID, "cwd": PROJECT, "version": "2.0.31", "isSidechain": False}
    model = "claude-sonnet-4-5-20250929"
    lines: list[dict[str, Any]] = [
        {"type": "user", "message": {"role": "user", "content": "Why do payouts round down?"}},
        {
            "type": "assistant",
            "message": {
                "id": "msg_demo_1",
                "model": model,
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_demo_1",
                        "name": "Grep",
                        "input": {"pattern": "round"},
                    },
                ],
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_demo_1",
                        "content": "payhub/ledger.py:88: ledger_rounding = ROUND_DOWN",
                    },
                ],
            },
        },
        {
            "type": "assistant",
            "message": {
                "id": "msg_demo_2",
                "model": model,
                "role": "assistant",
                "content": [{"type": "text", "text": "ledger.py:88 sets ROUND_DOWN."}],
            },
        },
    ]
    parent = None
    for n, line in enumerate(lines):
        uuid = f"00000000-0000-4000-8000-{n:012d}"
        line.update(common, uuid=uuid, parentUuid=parent, timestamp=f"2026-11-20T10:00:0{n}Z")
        parent = uuid
    return lines
