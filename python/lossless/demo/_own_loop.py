"""The demo's own-loop act: an agent that calls its model itself.

The trajectory's opening is run again, this time as most agents run: the loop asks
the session for each request with ``await session.context()``, sends it to the
project's local server on 127.0.0.1 with its own litellm call, records the reply
and the tool results, and reports the usage back. Every request is checked for the
instruction it works on, the pinned fact and the system prompt, and against the
budget; the share of its input that repeats the previous request's opening is told
as for ``send``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lossless.demo.trajectory import generate_trajectory

if TYPE_CHECKING:
    from rich.console import Console

    from lossless.session import BuiltContext, Session

__all__ = ["OwnLoopReport", "show_own_loop"]

# The trajectory's opening, as the prompt-cache act sends it.
LOOP_TURNS = 360
PIN = "Never touch legacy_billing/; amounts are integers in cents."


@dataclass
class OwnLoopReport:
    """What the own loop measured."""

    requests: int = 0
    input_tokens: int = 0
    stable_tokens: int = 0
    #: Requests that held the newest instruction, the pin and the system prompt
    #: within the budget.
    kept: int = 0
    #: Requests that left older history out (compaction behind the loop).
    trimmed: int = 0

    @property
    def stable_share(self) -> float:
        return self.stable_tokens / max(self.input_tokens, 1)


async def show_own_loop(db_path: str, console: Console) -> OwnLoopReport:
    from lossless.demo._config import SYSTEM_PROMPT, demo_config
    from lossless.session import Session
    from lossless.testing import LocalLLMServer

    console.rule("own loop: the agent calls its model, lossless gives each request")
    report = OwnLoopReport()
    with LocalLLMServer(report_cached_tokens=True) as server:
        config = demo_config(None, server.base_url)
        async with Session.open(
            model="openai/demo-local", db=db_path, config=config, system_prompt=SYSTEM_PROMPT
        ) as session:
            await session.pin(PIN)
            await _loop(session, server, report)
    console.print(
        f"  {report.requests} requests: {report.kept} held the instruction, the pin and the "
        f"system prompt within the budget; {report.trimmed} left older history out while "
        f"compaction caught up; {report.stable_share:.1%} of input tokens repeated the "
        "previous request's opening"
    )
    return report


async def _loop(session: Session, server: Any, report: OwnLoopReport) -> None:
    import litellm

    from lossless.parts import ToolPart
    from lossless.testing import Reply, ToolCallSpec

    instruction = ""
    for turn in generate_trajectory(turns=LOOP_TURNS):
        text = turn.text
        if turn.role == "user":
            if text:
                instruction = text
                await session.record("user", text)
            continue
        tools = turn.answered_tools
        server.enqueue(
            Reply(text=text, tool_calls=[ToolCallSpec(tool.name, tool.input) for tool in tools])
        )
        request = await session.context()
        _observe(request, instruction, report)
        response = await litellm.acompletion(
            model="openai/demo-local",
            messages=request.messages,
            api_base=server.base_url,
            api_key="unused",
        )
        await session.report_usage(response.usage)
        message = response.choices[0].message
        calls = message.tool_calls or []
        parts: list[Any] = [message.content] if message.content else []
        for call, tool in zip(calls, tools, strict=True):
            failed = tool.status == "error"
            parts.append(
                ToolPart(
                    call.function.name,
                    call.id,
                    call.function.arguments,
                    output=tool.output,
                    status="error" if failed else "completed",
                    error=tool.error if failed else None,
                )
            )
        if parts:
            await session.record("assistant", parts)


def _observe(request: BuiltContext, instruction: str, report: OwnLoopReport) -> None:
    report.requests += 1
    report.input_tokens += request.tokens
    report.stable_tokens += request.stable_prefix_tokens
    report.trimmed += request.omitted > 0
    texts = [m["content"] for m in request.messages if isinstance(m.get("content"), str)]
    system = texts[0] if texts else ""
    holds = (
        (not instruction or any(instruction in text for text in texts))
        and PIN in system
        and request.tokens <= request.budget
    )
    report.kept += holds
