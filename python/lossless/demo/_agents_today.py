"""The demo's act on what agents send today: a browser agent on Claude with extended
thinking, whose every step thinks, calls a tool and gets a screenshot back.

The agent holds its history as Anthropic Messages and runs its own loop: it asks
the session for each request with ``context(format="anthropic")``, posts it to the
local server's Messages endpoint (which checks it as Anthropic would: a tool loop
whose last turn lost its signed thinking is refused), and hands the reply and the
tool's result (text and a 1280×800 PNG) back with ``record_messages``. The window is
small, so the run compacts. Afterwards the same history goes out in the Responses
and Chat Completions formats as well, each to its endpoint, and one screenshot is
read back byte for byte.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from lossless.session import Session

__all__ = ["AgentsTodayReport", "show_agents_today"]

STEPS = 24
MODEL = "claude-sonnet-4-5"
INSTRUCTION = "Check every page of the docs site for broken layouts; list the bad ones."
SYSTEM = "You are a browser agent. Look at each page before you judge it."
THINKING = {"type": "enabled", "budget_tokens": 1024}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "open_page",
            "description": "Open a URL and return its text and a screenshot.",
            "parameters": {"type": "object", "properties": {"url": {"type": "string"}}},
        },
    }
]
# A page's text as the tool returns it beside the screenshot.
PAGE_TEXT = "Heading, navigation, two columns of body text and a footer. " * 40


@dataclass
class AgentsTodayReport:
    """What the act measured."""

    steps: int = 0
    #: Requests each endpoint accepted, by format.
    accepted: dict[str, int] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    compactions: int = 0
    #: In the last Anthropic request: the thinking blocks sent back, and the
    #: screenshots sent inline and as a reference line.
    thinking_sent: int = 0
    images_inline: int = 0
    images_referenced: int = 0
    stored_image_bytes: int = 0
    read_back_exact: bool = False

    @property
    def ok(self) -> bool:
        formats = ("anthropic", "responses", "openai")
        return (
            not self.refused
            and all(self.accepted.get(name, 0) > 0 for name in formats)
            and self.thinking_sent > 0
            and self.images_inline > 0
            and self.images_referenced > 0
            and self.read_back_exact
        )


async def show_agents_today(db_path: str, console: Console) -> AgentsTodayReport:
    from lossless.config import CompactionConfig, Config, ModelConfig
    from lossless.session import Session
    from lossless.testing import LocalLLMServer

    console.rule("what agents send today: thinking and screenshots, in three formats")
    report = AgentsTodayReport()
    config = Config(
        model=ModelConfig(context_limit=14_000, max_output_tokens=2_000, profile="default"),
        compaction=CompactionConfig(output_budget=1_000),
    )
    with LocalLLMServer() as server:
        async with Session.open(
            model=MODEL, db=db_path, config=config, system_prompt=SYSTEM
        ) as session:
            first = await _run_loop(session, server, report)
            await _send_other_formats(session, server, report)
            shot = await session.read_media(first)
            report.read_back_exact = shot == _screenshot(0)
            names = [row["name"] for row in session.store.events(session.id)]
            report.compactions = names.count("compaction_completed")
    _print(report, console)
    return report


async def _run_loop(session: Session, server: Any, report: AgentsTodayReport) -> str:
    """The agent's own loop in Anthropic's format; returns the first screenshot's id."""
    import httpx

    from lossless.parts import MediaPart
    from lossless.testing import Reply, ToolCallSpec

    await session.record_messages(
        [{"role": "user", "content": [{"type": "text", "text": INSTRUCTION}]}], system=SYSTEM
    )
    async with httpx.AsyncClient(timeout=30) as http:
        for step in range(STEPS):
            url = f"https://docs.example.com/page/{step}"
            server.enqueue(
                Reply(
                    tool_calls=[ToolCallSpec("open_page", {"url": url})],
                    reasoning=f"Page {step} next; compare its layout with the last one.",
                )
            )
            request = await session.context(format="anthropic", tools=TOOLS)
            body = await _post_messages(http, server, dict(request), report)
            report.thinking_sent, report.images_inline = _sent_in(request["messages"])
            use = next(block for block in body["content"] if block["type"] == "tool_use")
            await session.record_messages(
                [
                    {"role": "assistant", "content": body["content"]},
                    {"role": "user", "content": [_tool_result(use["id"], url, step)]},
                ],
                format="anthropic",
            )
            report.steps += 1
        await session.compaction.wait_for_pending()
    media = [
        part
        for message in session.history()
        for part in message.parts
        if isinstance(part, MediaPart)
    ]
    report.stored_image_bytes = sum(part.byte_size or 0 for part in media)
    text = str(session.build_context(format="anthropic")["messages"])
    report.images_referenced = text.count("[image image_")
    return str(media[0].media_id)


async def _post_messages(
    http: Any, server: Any, request: dict[str, Any], report: AgentsTodayReport
) -> dict[str, Any]:
    body = {"model": "claude-local", "max_tokens": 2_000, "thinking": THINKING, **request}
    response = await http.post(
        f"{server.anthropic_base_url}/v1/messages",
        json=body,
        headers={"x-api-key": "demo", "anthropic-version": "2023-06-01"},
    )
    _count(report, "anthropic", response.status_code, response.text)
    response.raise_for_status()
    reply: dict[str, Any] = response.json()
    return reply


async def _send_other_formats(session: Session, server: Any, report: AgentsTodayReport) -> None:
    """The same history as Responses input items and as Chat Completions messages,
    each sent to its endpoint."""
    import httpx
    import litellm

    from lossless.testing import Reply

    server.enqueue(Reply(text="Pages 3 and 17 have broken layouts."))
    responses = await session.context(format="responses", tools=TOOLS)
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(
            f"{server.base_url}/responses",
            json={"model": "gpt-local", **dict(responses)},
            headers={"authorization": "Bearer demo"},
        )
    _count(report, "responses", response.status_code, response.text)
    server.enqueue(Reply(text="Pages 3 and 17 have broken layouts."))
    chat = await session.context(tools=TOOLS)
    try:
        await litellm.acompletion(
            model="openai/demo-local",
            messages=chat.messages,
            tools=TOOLS,
            api_base=server.base_url,
            api_key="demo",
        )
        _count(report, "openai", 200, "")
    except litellm.exceptions.APIError as err:  # refused by the server's checks
        _count(report, "openai", 400, str(err))


def _count(report: AgentsTodayReport, name: str, status: int, text: str) -> None:
    if status == 200:
        report.accepted[name] = report.accepted.get(name, 0) + 1
    else:
        report.refused.append(f"{name}: {status} {text[:200]}")


def _sent_in(messages: list[dict[str, Any]]) -> tuple[int, int]:
    """Thinking blocks and inline images in an Anthropic request's messages."""
    thinking = images = 0
    for message in messages:
        content = message["content"]
        blocks = content if isinstance(content, list) else []
        for block in blocks:
            thinking += block.get("type") == "thinking"
            images += block.get("type") == "image"
            inner = block.get("content") if block.get("type") == "tool_result" else None
            for piece in inner if isinstance(inner, list) else []:
                images += piece.get("type") == "image"
    return thinking, images


def _screenshot(step: int) -> bytes:
    from lossless.testing import screenshot

    return screenshot(1280, 800, seed=step)


def _tool_result(call_id: str, url: str, step: int) -> dict[str, Any]:
    data = base64.b64encode(_screenshot(step)).decode()
    return {
        "type": "tool_result",
        "tool_use_id": call_id,
        "content": [
            {"type": "text", "text": f"{url}\n{PAGE_TEXT}"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": data},
            },
        ],
    }


def _print(report: AgentsTodayReport, console: Console) -> None:
    accepted = ", ".join(f"{name} {count}" for name, count in report.accepted.items())
    console.print(
        f"  {report.steps} steps, each with signed thinking and a 1280×800 screenshot; "
        f"{report.compactions} compactions; requests accepted: {accepted}"
    )
    console.print(
        f"  the last Anthropic request sent {report.thinking_sent} thinking blocks of the "
        f"tool loop, {report.images_inline} screenshots inline and "
        f"{report.images_referenced} as a reference line; "
        f"{report.stored_image_bytes / 1e6:.1f} MB of screenshots stored, the first read "
        f"back {'byte for byte' if report.read_back_exact else 'CHANGED'}"
    )
    for refusal in report.refused[:3]:
        console.print(f"  [red]refused: {refusal}[/]")
