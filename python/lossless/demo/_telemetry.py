"""The demo's telemetry act: what a traced session reports to OpenTelemetry.

A session opened with ``Config.telemetry`` sends two questions through the project's
local server on 127.0.0.1, then runs as an own loop (tool results recorded, each
request taken with ``context()``) until compaction starts. The SDK's in-memory
exporter collects the spans, which are printed as a backend would list them: a
``chat`` span per model call with its token counts, a ``lossless.context`` span per
request handed out, and the compaction under the span that set it off.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["TelemetryReport", "show_telemetry"]

MODEL = "openai/demo-traced"
TOOL_OUTPUT = "payout batch settled; rows checked: " + "ok " * 120


@dataclass
class TelemetryReport:
    """What the traced session reported."""

    spans: Counter[str] = field(default_factory=Counter)
    chat_input_tokens: int = 0
    compaction: dict[str, Any] = field(default_factory=dict)
    #: The OpenTelemetry SDK is not installed (only the API is a dependency).
    skipped: bool = False

    @property
    def ok(self) -> bool:
        if self.skipped:
            return True
        chats = sum(count for name, count in self.spans.items() if name.startswith("chat "))
        return (
            chats >= 2
            and self.chat_input_tokens > 0
            and self.spans["lossless.context"] > 0
            and bool(self.compaction)
        )


async def show_telemetry(db_path: str, console: Console) -> TelemetryReport:
    console.rule("telemetry: spans and metrics through OpenTelemetry (lossless\\[otel])")
    report = TelemetryReport()
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        report.skipped = True
        console.print("  the OpenTelemetry SDK is not installed: pip install opentelemetry-sdk")
        return report
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        await _traced_session(db_path, provider)
    finally:
        provider.shutdown()
    _read_spans(exporter.get_finished_spans(), report)
    _print(report, console)
    return report


async def _traced_session(db_path: str, provider: Any) -> None:
    from lossless import Session, ToolPart
    from lossless.config import (
        CompactionConfig,
        Config,
        LLMConfig,
        ModelConfig,
        TelemetryConfig,
    )
    from lossless.testing import LocalLLMServer, Reply

    with LocalLLMServer(report_cached_tokens=True) as server:
        config = Config(
            model=ModelConfig(context_limit=4_000, max_output_tokens=300),
            llm=LLMConfig(api_base=server.base_url, api_key="unused"),
            compaction=CompactionConfig(output_budget=0),
            telemetry=TelemetryConfig(tracer_provider=provider),
        )
        async with Session.open(model=MODEL, db=db_path, config=config) as session:
            for answer in ("Payouts retry from the queue.", "Every five minutes, five times."):
                server.enqueue(Reply(text=answer))
                await session.send("Where do payouts retry, and how often?")
            for n in range(16):
                call = ToolPart(
                    "bash", f"t{n}", {"command": f"check batch {n}"}, output=TOOL_OUTPUT
                )
                await session.record("assistant", [call])
                await session.context()
            await session.compaction.wait_for_pending()


def _read_spans(spans: Any, report: TelemetryReport) -> None:
    for span in spans:
        report.spans[span.name] += 1
        attributes = dict(span.attributes or {})
        if span.name.startswith("chat "):
            report.chat_input_tokens += int(attributes.get("gen_ai.usage.input_tokens", 0))
        if span.name == "lossless.compaction" and not report.compaction:
            report.compaction = {
                key.removeprefix("lossless.compaction."): value
                for key, value in attributes.items()
                if key.startswith("lossless.compaction.")
            }


def _print(report: TelemetryReport, console: Console) -> None:
    listed = ", ".join(f"{name} × {count}" for name, count in sorted(report.spans.items()))
    console.print(f"  spans: {listed}")
    console.print(
        f"  the chat spans' input tokens, as the provider reported them: {report.chat_input_tokens}"
    )
    if report.compaction:
        found = report.compaction
        console.print(
            f"  a compaction span: level {found.get('level')}, view "
            f"{found.get('tokens_before')} → {found.get('tokens_after')} tokens, "
            f"{found.get('invalidated_tokens')} cached tokens invalidated"
        )
