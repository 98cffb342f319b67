"""The demo's second act: a reply cut off by a timeout is kept.

A reply streams from the local OpenAI-compatible server (on 127.0.0.1, started
here) into a second session of the demo's file; the caller gives up half a second
after the first text arrived, as agent loops do with a timeout. What reached the
caller is stored, flagged incomplete, and reads back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
from rich.markup import escape

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["StreamReport", "show_cancelled_stream"]

# About 3 s of streaming at 10 ms a chunk of three words: the timeout cuts it.
_REPLY = " ".join(
    f"step {index}: move the ledger writes behind the payout queue, then verify."
    for index in range(60)
)


@dataclass
class StreamReport:
    """What the cut-off reply left behind."""

    received_chars: int = 0
    stored_chars: int = 0
    status: str = ""
    kept: bool = False


async def show_cancelled_stream(db_path: str, console: Console) -> StreamReport:
    from lossless.config import Config, LLMConfig, ModelConfig
    from lossless.parts import Part, TextPart
    from lossless.session import Session
    from lossless.testing import LocalLLMServer, Reply

    console.rule("a reply cut off by a timeout is kept")
    report = StreamReport()
    with LocalLLMServer() as server:
        server.responder = lambda request: Reply(text=_REPLY, chunk_delay_s=0.01)
        config = Config(
            model=ModelConfig(context_limit=32_000, max_output_tokens=4_000),
            llm=LLMConfig(api_base=server.base_url, api_key="unused", num_retries=0),
        )
        received: list[str] = []
        async with Session.open(model="openai/demo-local", db=db_path, config=config) as session:
            with anyio.CancelScope() as scope:

                def collect(part: Part) -> None:
                    if isinstance(part, TextPart):
                        if not received:
                            scope.deadline = anyio.current_time() + 0.5
                        received.append(part.text)

                await session.send("Walk me through the migration plan.", on_part=collect)
            reply = session.history()[-1]
    seen = "".join(received)
    report.received_chars, report.stored_chars = len(seen), len(reply.text)
    report.status = reply.status
    report.kept = reply.status == "incomplete" and reply.text.startswith(seen) and bool(seen)
    console.print(
        f"  the caller gave up after {len(seen):,} of {len(_REPLY):,} characters; stored: "
        f"{len(reply.text):,} characters, {reply.status} "
        f"({reply.usage.get('finish_reason')})"
    )
    console.print(f"  [green]kept[/]: {escape(reply.text[:120])}…")
    return report
