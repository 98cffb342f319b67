"""OpenTelemetry spans and metrics (``Config.telemetry``), read back through the SDK's
in-memory exporter and metric reader: the send path, the own loop (``context``,
``report_usage``, ``sync``), compaction, recall, errors, and what stays out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from conftest import make_config
from lossless import Session, ToolPart
from lossless.config import CompactionConfig, Config, ModelConfig, TelemetryConfig
from lossless.errors import LLMError
from lossless.recall import describe, expand, grep
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

pytestmark = pytest.mark.anyio

MODEL = "openai/lossless-test"
SECRET_WORDS = "the vault combination is 4417"


@dataclass
class Otel:
    """An SDK tracer and meter provider, each reporting to memory."""

    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        finished = self.exporter.get_finished_spans()
        return [span for span in finished if name is None or span.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.spans(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r}: {self.names()}"
        return found[0]

    def names(self) -> list[str]:
        return [span.name for span in self.spans()]

    def points(self, metric: str) -> list[Any]:
        """The data points of ``metric`` (empty when it was never recorded)."""
        data = self.reader.get_metrics_data()
        points: list[Any] = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for found in scope.metrics:
                    if found.name == metric:
                        points.extend(found.data.data_points)
        return points

    def telemetry(self, **fields: Any) -> TelemetryConfig:
        return TelemetryConfig(
            tracer_provider=self.tracer_provider, meter_provider=self.meter_provider, **fields
        )


@pytest.fixture
def otel() -> Iterator[Otel]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield Otel(tracer_provider, meter_provider, exporter, reader)
    tracer_provider.shutdown()
    meter_provider.shutdown()


def traced(server: LocalLLMServer, otel: Otel, **sections: Any) -> Config:
    capture = sections.pop("capture_content", False)
    return make_config(server, telemetry=otel.telemetry(capture_content=capture), **sections)


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def points_where(points: Sequence[Any], **wanted: Any) -> list[Any]:
    names = {key.replace("__", "."): value for key, value in wanted.items()}
    return [
        point
        for point in points
        if all(point.attributes.get(key) == value for key, value in names.items())
    ]


# -- the send path ---------------------------------------------------------------------


async def test_each_model_call_is_a_client_span_with_the_request_and_its_usage(
    otel: Otel, tmp_path: Path
) -> None:
    with LocalLLMServer(report_cached_tokens=True) as server:
        port = server.port
        config = traced(server, otel)
        async with Session.open(model=MODEL, db=tmp_path / "s.db", config=config) as session:
            first = await session.send("Where do payouts retry?")
            second = await session.send("And how often do they retry?")
    chats = otel.spans("chat lossless-test")
    assert len(chats) == 2, otel.names()
    for span, result in zip(chats, (first, second), strict=True):
        found = attrs(span)
        assert span.kind is SpanKind.CLIENT
        assert span.status.status_code is StatusCode.UNSET
        assert found["gen_ai.operation.name"] == "chat"
        assert found["gen_ai.provider.name"] == "openai"
        assert found["gen_ai.request.model"] == "lossless-test"
        assert found["gen_ai.conversation.id"] == session.id
        assert found["server.address"] == "127.0.0.1"
        assert found["server.port"] == port
        assert found["gen_ai.usage.input_tokens"] == result.input_tokens
        assert found["gen_ai.usage.output_tokens"] == result.output_tokens
        assert found["gen_ai.response.finish_reasons"] == ("stop",)
        assert found["lossless.request.tokens"] == result.context_tokens
        assert (
            found["lossless.request.budget"] == session.budget.usable + session.budget.system_tokens
        )
        assert found["lossless.request.stable_prefix_tokens"] == result.stable_prefix_tokens
    # The second request repeats the first: the cache figures are the provider's.
    assert second.stable_prefix_tokens > 0
    assert second.cached_input_tokens
    assert attrs(chats[1])["gen_ai.usage.cache_read.input_tokens"] == second.cached_input_tokens

    usage = otel.points("gen_ai.client.token.usage")
    inputs = points_where(usage, gen_ai__token__type="input", gen_ai__operation__name="chat")
    outputs = points_where(usage, gen_ai__token__type="output")
    assert [point.count for point in inputs] == [2]
    assert inputs[0].sum == first.input_tokens + second.input_tokens
    assert outputs[0].sum == first.output_tokens + second.output_tokens
    assert inputs[0].explicit_bounds[:3] == (1, 4, 16), "the conventions' buckets"
    durations = otel.points("gen_ai.client.operation.duration")
    assert [point.count for point in durations] == [2]
    requests = points_where(otel.points("lossless.request.tokens"), lossless__request__path="turn")
    assert requests[0].sum == first.context_tokens + second.context_tokens
    reuse = otel.points("lossless.request.prefix_reuse")
    assert reuse[0].count == 2
    assert reuse[0].sum == pytest.approx(second.stable_prefix_tokens / second.context_tokens)


async def test_a_failed_model_call_is_an_error_span_with_its_retry(
    server: LocalLLMServer, otel: Otel, tmp_path: Path
) -> None:
    server.enqueue(Reply(text="overloaded", status=500), Reply(text="overloaded", status=500))
    config = traced(server, otel)
    async with Session.open(model=MODEL, db=tmp_path / "s.db", config=config) as session:
        with pytest.raises(LLMError):
            await session.send("Where do payouts retry?")
        await session.send("Try again, please.")
    failed, recovered = otel.spans("chat lossless-test")
    assert failed.status.status_code is StatusCode.ERROR
    assert attrs(failed)["error.type"].startswith("litellm."), attrs(failed)["error.type"]
    assert [event.name for event in failed.events] == ["lossless.llm.retry"]
    assert "gen_ai.usage.input_tokens" not in attrs(failed)
    assert recovered.status.status_code is StatusCode.UNSET
    assert "error.type" not in attrs(recovered)
    durations = otel.points("gen_ai.client.operation.duration")
    assert len(points_where(durations, error__type=attrs(failed)["error.type"])) == 1
    assert sum(point.count for point in durations) == 2


async def test_a_figure_that_cannot_be_recorded_never_fails_the_turn(
    server: LocalLLMServer, otel: Otel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lossless.telemetry import SessionTelemetry

    def broken(*args: object) -> None:
        raise RuntimeError("an exporter's bug")

    monkeypatch.setattr(SessionTelemetry, "_record_reply", broken)
    monkeypatch.setattr(SessionTelemetry, "_record_request", broken)
    config = traced(server, otel)
    async with Session.open(model=MODEL, db=tmp_path / "s.db", config=config) as session:
        result = await session.send("Where do payouts retry?")
        await session.context()
    assert result.text
    chat = otel.one("chat lossless-test")
    assert chat.status.status_code is StatusCode.UNSET
    assert otel.one("lossless.context").status.status_code is StatusCode.UNSET


# -- the own loop ----------------------------------------------------------------------


async def test_context_and_report_usage_are_spans_linked_to_each_other(
    server: LocalLLMServer, otel: Otel, tmp_path: Path
) -> None:
    config = traced(server, otel)
    tracer = otel.tracer_provider.get_tracer("agent")
    async with Session.open(model=MODEL, db=tmp_path / "s.db", config=config) as session:
        await session.record("user", "Migrate the payouts module.")
        with tracer.start_as_current_span("agent step") as step:
            request = await session.context()
            await session.report_usage(
                {
                    "prompt_tokens": 120,
                    "completion_tokens": 30,
                    "prompt_tokens_details": {"cached_tokens": 64},
                }
            )
    context = otel.one("lossless.context")
    found = attrs(context)
    assert context.kind is SpanKind.INTERNAL
    assert context.parent is not None and context.parent.span_id == step.get_span_context().span_id
    assert found["gen_ai.conversation.id"] == session.id
    assert "gen_ai.operation.name" not in found, "not a model call of its own"
    assert found["lossless.request.tokens"] == request.tokens
    assert found["lossless.request.budget"] == request.budget
    assert found["lossless.request.stable_prefix_tokens"] == 0
    assert found["lossless.request.items"] == len(request.item_ids)

    usage = otel.one("lossless.report_usage")
    reported = attrs(usage)
    assert reported["gen_ai.usage.input_tokens"] == 120
    assert reported["gen_ai.usage.output_tokens"] == 30
    assert reported["gen_ai.usage.cache_read.input_tokens"] == 64
    assert reported["lossless.request.tokens"] == request.tokens
    assert [link.context.span_id for link in usage.links] == [context.context.span_id]
    assert usage.links[0].attributes == {"lossless.link": "request"}

    requests = otel.points("lossless.request.tokens")
    assert [point.sum for point in points_where(requests, lossless__request__path="context")] == [
        request.tokens
    ]
    utilization = otel.points("lossless.request.budget.utilization")
    assert utilization[0].sum == pytest.approx(request.tokens / request.budget)
    # The agent's own call is its client's to measure: reported usage is no model
    # call of lossless's, and counting it would count the call twice.
    assert otel.points("gen_ai.client.token.usage") == []


async def test_sync_is_one_span_with_what_it_stored_and_the_fork_it_made(
    server: LocalLLMServer, otel: Otel, tmp_path: Path
) -> None:
    config = traced(server, otel)
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Rename the payouts module."},
        {"role": "assistant", "content": "Renamed it to settlements."},
        {"role": "user", "content": "Now update the imports."},
    ]
    async with Session.open(model=MODEL, db=tmp_path / "s.db", config=config) as session:
        first = await session.sync(history)
        started_as = session.id
        edited = [{"role": "user", "content": "Rename the refunds module."}, *history[1:]]
        await session.sync(edited)
    grown, forked = otel.spans("lossless.sync")
    assert otel.spans("lossless.context") == [], "sync's request is on its own span"
    assert attrs(grown)["lossless.sync.messages"] == 3
    assert attrs(grown)["lossless.sync.stored_messages"] == 3
    assert attrs(grown)["lossless.request.tokens"] == first.tokens
    assert attrs(grown)["gen_ai.conversation.id"] == started_as
    assert "lossless.sync.forked_from" not in attrs(grown)
    assert session.id != started_as
    assert attrs(forked)["lossless.sync.forked_from"] == started_as
    assert attrs(forked)["gen_ai.conversation.id"] == session.id
    assert attrs(forked)["lossless.sync.stored_messages"] == 3


# -- compaction ------------------------------------------------------------------------


def _small_window(server: LocalLLMServer, otel: Otel) -> Config:
    # usable = 6,000 - 500 (reply) - 500 (compaction reserve) = 5,000; soft limit 3,000.
    return traced(
        server,
        otel,
        model=ModelConfig(context_limit=6_000, max_output_tokens=500, token_correction=1.0),
        compaction=CompactionConfig(output_budget=500),
    )


def _long_turn(turn: int) -> str:
    words = ("payout", "ledger", "refund", "merchant", "retry", "webhook", "batch", "invoice")
    return f"turn {turn}: " + " ".join(words[(turn + i) % len(words)] for i in range(220))


async def test_a_compaction_a_reply_starts_is_a_child_of_that_model_turn(
    server: LocalLLMServer, otel: Otel, tmp_path: Path
) -> None:
    """Short questions, long answers: the replies cross the soft limit, inside their
    model turn's span."""
    server.responder = lambda request: Reply(text=_long_turn(len(request["messages"])))
    config = _small_window(server, otel)
    async with Session.open(model=MODEL, db=tmp_path / "s.db", config=config) as session:
        results = [await session.send(f"Question {turn}?") for turn in range(16)]
        await session.compaction.wait_for_pending()
    assert any(result.compaction_triggered for result in results)
    chats = {span.context.span_id for span in otel.spans("chat lossless-test")}
    compactions = otel.spans("lossless.compaction")
    completed = [
        span for span in compactions if attrs(span)["lossless.compaction.status"] == "completed"
    ]
    assert completed, [attrs(span) for span in compactions]
    for span in completed:
        found = attrs(span)
        assert found["lossless.compaction.trigger"] == "soft_limit"
        assert span.parent is not None and span.parent.span_id in chats, "a turn's child"
        assert found["gen_ai.conversation.id"] == session.id
        assert found["lossless.compaction.rounds"] >= 1
        assert found["lossless.compaction.level"] in (1, 2, 3)
        assert (
            found["lossless.compaction.tokens_after"] < found["lossless.compaction.tokens_before"]
        )
        assert found["lossless.compaction.summaries"] >= 1
        # What the view's change cost the last request (0 when a request made after
        # the round's commit was already the last one).
        assert found["lossless.compaction.invalidated_tokens"] >= 0
        # Linked to the request whose cached prefix it invalidated.
        assert [dict(link.attributes or {}) for link in span.links] == [
            {"lossless.link": "last_request"}
        ]
        assert span.links[0].context.span_id in chats
    rounds = otel.points("lossless.compaction.rounds")
    assert sum(point.value for point in rounds) == sum(
        attrs(span).get("lossless.compaction.rounds", 0) for span in compactions
    )
    durations = otel.points("lossless.compaction.duration")
    assert sum(point.count for point in durations) == len(compactions)
    invalidated = otel.points("lossless.compaction.invalidated_tokens")
    assert sum(point.sum for point in invalidated) == sum(
        attrs(span).get("lossless.compaction.invalidated_tokens", 0) for span in compactions
    )


async def test_a_compaction_a_recorded_message_starts_is_a_child_of_the_callers_span(
    server: LocalLLMServer, otel: Otel, tmp_path: Path
) -> None:
    """The own loop: a message recorded past the soft limit starts a compaction under
    the agent's span around its step, linked to the last request it handed over."""
    config = _small_window(server, otel)
    tracer = otel.tracer_provider.get_tracer("agent")
    steps: dict[int, int] = {}
    async with Session.open(model=MODEL, db=tmp_path / "s.db", config=config) as session:
        for turn in range(16):
            with tracer.start_as_current_span(f"agent step {turn}") as step:
                recorded = await session.record("user", _long_turn(turn))
                await session.context()
                await session.record("assistant", "On it.")
            if recorded.compaction_triggered:
                steps[step.get_span_context().span_id] = turn
        await session.compaction.wait_for_pending()
    assert steps, "the run crossed the soft limit"
    started = [
        span
        for span in otel.spans("lossless.compaction")
        if attrs(span)["lossless.compaction.trigger"] == "soft_limit"
    ]
    assert started
    contexts = {span.context.span_id for span in otel.spans("lossless.context")}
    for span in started:
        assert span.parent is not None and span.parent.span_id in steps
        assert span.links[0].context.span_id in contexts


async def test_compact_is_a_child_of_the_callers_span_with_its_prune_and_ledger(
    server: LocalLLMServer, otel: Otel, tmp_path: Path
) -> None:
    config = traced(
        server,
        otel,
        compaction=CompactionConfig(
            output_budget=1_000, prune_protect_tokens=0, prune_minimum_tokens=0
        ),
    )
    tracer = otel.tracer_provider.get_tracer("agent")
    async with Session.open(model=MODEL, db=tmp_path / "s.db", config=config) as session:
        await session.record("user", "Never touch legacy_billing/. Read the payout modules.")
        for turn in range(30):
            output = _long_turn(turn)
            part = ToolPart("read_file", f"call_{turn}", {"path": f"m{turn}.py"}, output=output)
            await session.record("assistant", [part])
            await session.record("user", f"Go on with module {turn + 1}.")
        await session.context()
        with tracer.start_as_current_span("maintenance") as outer:
            # A prune that writes is a round's one change; the next one summarises.
            pruned = await session.compact()
            summarised = await session.compact()
    first, second = otel.spans("lossless.compaction")
    assert pruned.pruned_parts and summarised.summary_ids
    for span, result in ((first, pruned), (second, summarised)):
        found = attrs(span)
        assert span.parent is not None
        assert span.parent.span_id == outer.get_span_context().span_id
        assert found["lossless.compaction.trigger"] == "inline"
        assert found["lossless.compaction.status"] == result.status
        assert found["lossless.compaction.tokens_before"] == result.tokens_before
        assert found["lossless.compaction.tokens_after"] == result.tokens_after
        assert found["lossless.compaction.invalidated_tokens"] == result.invalidated_tokens
        assert [link.context.span_id for link in span.links] == [
            otel.one("lossless.context").context.span_id
        ]
    (prune,) = first.events
    assert prune.name == "lossless.compaction.prune"
    assert dict(prune.attributes or {})["pruned_parts"] == pruned.pruned_parts
    assert attrs(first)["lossless.compaction.pruned_parts"] == pruned.pruned_parts
    assert "lossless.compaction.level" not in attrs(first)
    ledger = [event for event in second.events if event.name == "lossless.ledger.updated"]
    assert ledger and dict(ledger[0].attributes or {})["added"] >= 1
    assert attrs(second)["lossless.compaction.summaries"] == len(summarised.summary_ids)


# -- recall ----------------------------------------------------------------------------


async def test_recall_calls_on_a_traced_session_are_spans_with_their_counts(
    server: LocalLLMServer, otel: Otel, tmp_path: Path
) -> None:
    config = _small_window(server, otel)
    db = tmp_path / "s.db"
    async with Session.open(model=MODEL, db=db, config=config) as session:
        await session.record("user", f"Remember: {SECRET_WORDS}.")
        for turn in range(12):
            await session.record("user", _long_turn(turn))
        await session.compact()
        hits = grep("vault combination", session=session)
        nodes = describe(session)
        expansion = expand(nodes[0].id, db=session)
        untraced = grep("vault combination", db=db)
    assert hits and nodes and expansion.messages and untraced
    search = otel.one("search_memory")
    assert attrs(search)["gen_ai.operation.name"] == "search_memory"
    assert attrs(search)["gen_ai.memory.record.count"] == len(hits)
    assert attrs(search)["lossless.recall.operation"] == "grep"
    assert attrs(search)["gen_ai.conversation.id"] == session.id
    assert "gen_ai.memory.query.text" not in attrs(search), "content stays out"
    assert attrs(otel.one("lossless.recall.describe"))["lossless.recall.results"] == len(nodes)
    expanded = otel.one("lossless.recall.expand")
    assert attrs(expanded)["lossless.recall.results"] == len(expansion.messages)


async def test_a_recall_tool_call_is_an_execute_tool_span_around_its_search(
    server: LocalLLMServer, otel: Otel, tmp_path: Path
) -> None:
    config = traced(server, otel)
    async with Session.open(model=MODEL, db=tmp_path / "s.db", config=config) as session:
        await session.record("user", f"Remember: {SECRET_WORDS}.")
        call = ToolCallSpec("lossless_grep", {"query": "vault combination"}, id="call_vault")
        server.enqueue(Reply(tool_calls=[call]), Reply(text="It is 4417."))
        await session.send("What is the vault combination?", tools="recall")
    tool = otel.one("execute_tool lossless_grep")
    found = attrs(tool)
    assert found["gen_ai.operation.name"] == "execute_tool"
    assert found["gen_ai.tool.name"] == "lossless_grep"
    assert found["gen_ai.tool.call.id"] == "call_vault"
    assert "gen_ai.tool.call.arguments" not in found
    search = otel.one("search_memory")
    assert search.parent is not None and search.parent.span_id == tool.context.span_id
    assert len(otel.spans("chat lossless-test")) == 2


# -- what stays out --------------------------------------------------------------------


async def test_content_is_recorded_only_when_asked(
    server: LocalLLMServer, otel: Otel, tmp_path: Path
) -> None:
    async def run(config: Config, db: Path) -> None:
        async with Session.open(model=MODEL, db=db, config=config) as session:
            await session.send(f"Note that {SECRET_WORDS}.")
            await session.context()
            grep("vault", session=session)

    await run(traced(server, otel), tmp_path / "plain.db")
    for span in otel.spans():
        shown = json.dumps(attrs(span), default=str)
        assert "4417" not in shown, span.name
    otel.exporter.clear()

    await run(traced(server, otel, capture_content=True), tmp_path / "captured.db")
    chat = attrs(otel.one("chat lossless-test"))
    sent = json.loads(chat["gen_ai.input.messages"])
    assert sent[-1]["role"] == "user"
    assert sent[-1]["parts"] == [{"type": "text", "content": f"Note that {SECRET_WORDS}."}]
    replied = json.loads(chat["gen_ai.output.messages"])
    assert replied[0]["role"] == "assistant" and replied[0]["finish_reason"] == "stop"
    assert replied[0]["parts"][0]["type"] == "text"
    context = attrs(otel.one("lossless.context"))
    assert SECRET_WORDS in context["gen_ai.input.messages"]
    assert attrs(otel.one("search_memory"))["gen_ai.memory.query.text"] == "vault"


async def test_captured_requests_keep_tool_calls_in_every_format(
    server: LocalLLMServer, otel: Otel, tmp_path: Path
) -> None:
    config = traced(server, otel, capture_content=True)
    async with Session.open(model=MODEL, db=tmp_path / "s.db", config=config) as session:
        await session.record("user", "Read the payouts module.")
        call = ToolPart("read_file", "call_1", {"path": "payouts.py"}, output="def retry(): ...")
        await session.record("assistant", ["Reading it.", call])
        for format in ("openai", "anthropic", "responses"):
            await session.context(format=format)  # type: ignore[call-overload]
    for span in otel.spans("lossless.context"):
        sent = json.loads(attrs(span)["gen_ai.input.messages"])
        parts = [part for message in sent for part in message["parts"]]
        calls = [part for part in parts if part["type"] == "tool_call"]
        results = [part for part in parts if part["type"] == "tool_call_response"]
        assert [call["name"] for call in calls] == ["read_file"], sent
        assert calls[0]["id"] == results[0]["id"]
        assert "def retry()" in results[0]["result"]
        assert {"type": "text", "content": "Read the payouts module."} in parts
        assert sent[-1]["role"] in ("user", "tool")


async def test_a_cancelled_turn_ends_its_span_as_cancelled(
    server: LocalLLMServer, otel: Otel, tmp_path: Path
) -> None:
    server.enqueue(Reply(text=" ".join(["word"] * 400), chunk_delay_s=0.01))
    config = traced(server, otel)
    async with Session.open(model=MODEL, db=tmp_path / "s.db", config=config) as session:
        with anyio.CancelScope() as scope:

            def cancel_soon(part: object) -> None:
                # A timeout counted from the first text, as agent loops set one.
                scope.deadline = min(scope.deadline, anyio.current_time() + 0.3)

            await session.send("Write at length.", on_part=cancel_soon)
        assert scope.cancelled_caught
    chat = otel.one("chat lossless-test")
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(chat)["error.type"] == "cancelled"
    assert chat.end_time is not None


async def test_off_by_default_it_emits_nothing(
    server: LocalLLMServer, otel: Otel, tmp_path: Path
) -> None:
    off = TelemetryConfig(
        enabled=False, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    for config in (make_config(server), make_config(server, telemetry=off)):
        async with Session.open(model=MODEL, db=tmp_path / "s.db", config=config) as session:
            assert session.telemetry is None
            assert session.compaction.tracing is None
            await session.send("Where do payouts retry?")
            await session.context()
            await session.compact()
            grep("payouts", session=session)
    assert otel.spans() == []
    assert otel.reader.get_metrics_data() is None or not [
        metric
        for resource in otel.reader.get_metrics_data().resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    ]


def test_the_configuration_turns_on_with_a_provider_and_is_never_stored(otel: Otel) -> None:
    assert TelemetryConfig().enabled is False
    assert TelemetryConfig(tracer_provider=otel.tracer_provider).enabled is True
    assert TelemetryConfig(meter_provider=otel.meter_provider).enabled is True
    assert TelemetryConfig(enabled=False, tracer_provider=otel.tracer_provider).enabled is False
    with pytest.raises(ValueError, match="TracerProvider"):
        TelemetryConfig(tracer_provider=otel.meter_provider)
    with pytest.raises(ValueError, match="MeterProvider"):
        TelemetryConfig(meter_provider=object())
    config = Config(telemetry=otel.telemetry(capture_content=True))
    assert "telemetry" not in json.loads(config.model_dump_json())


async def test_a_session_loaded_later_is_traced_only_when_its_opener_says_so(
    server: LocalLLMServer, otel: Otel, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    async with Session.open(model=MODEL, db=db, config=traced(server, otel)) as session:
        await session.send("Where do payouts retry?")
    loaded = await Session.load(session.id, db=db)
    async with loaded:
        assert loaded.telemetry is None
        assert loaded.config.telemetry.enabled is False
    again = await Session.load(session.id, db=db, config=traced(server, otel))
    async with again:
        assert again.telemetry is not None
        await again.send("And how often?")
    assert len(otel.spans("chat lossless-test")) == 2


# -- installation ----------------------------------------------------------------------


def _run_child(
    code: str, server: LocalLLMServer, tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    script = textwrap.dedent(code).format(base_url=server.base_url, db=str(tmp_path / "c.db"))
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )


_CHILD_SESSION = """
import sys
import anyio
from lossless import Session, ToolPart
from lossless.config import Config, LLMConfig, ModelConfig, TelemetryConfig

def config(telemetry):
    return Config(
        llm=LLMConfig(api_base="{base_url}", api_key="test", num_retries=0),
        model=ModelConfig(context_limit=32_000, max_output_tokens=1_000, profile="default"),
        telemetry=telemetry,
    )
"""


def test_without_telemetry_opentelemetry_is_never_imported(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    child = _run_child(
        _CHILD_SESSION
        + """
async def main():
    async with Session.open(model="openai/x", db=r"{db}", config=config(TelemetryConfig())) as s:
        await s.send("hello")
        await s.context()
        await s.compact()
anyio.run(main)
loaded = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
print("loaded:", loaded)
""",
        server,
        tmp_path,
    )
    assert child.returncode == 0, child.stderr
    assert "loaded: []" in child.stdout, child.stdout


def test_without_opentelemetry_installed_turning_it_on_says_what_to_install(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    child = _run_child(
        """
import sys
sys.modules["opentelemetry"] = None  # as if the package were not installed
"""
        + _CHILD_SESSION
        + """
async def main():
    async with Session.open(model="openai/x", db=r"{db}", config=config(TelemetryConfig())) as s:
        await s.send("hello")
    try:
        on = config(TelemetryConfig(enabled=True))
        await Session.create(model="openai/x", db=r"{db}", config=on)
    except ImportError as err:
        print("refused:", err)
anyio.run(main)
""",
        server,
        tmp_path,
    )
    assert child.returncode == 0, child.stderr
    assert "refused: lossless telemetry needs the OpenTelemetry API" in child.stdout, child.stdout
    assert "lossless[otel]" in child.stdout


def test_enabled_without_a_provider_uses_the_global_ones(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    child = _run_child(
        _CHILD_SESSION
        + """
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

async def main():
    # Sessions made before the application installs its providers follow them.
    early = await Session.create(
        model="openai/x", db=r"{db}", config=config(TelemetryConfig(enabled=True))
    )
    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    async with early:
        await early.send("hello")
    print("spans:", [span.name for span in exporter.get_finished_spans()])
    names = [m.name for r in reader.get_metrics_data().resource_metrics
             for s in r.scope_metrics for m in s.metrics]
    print("metrics:", sorted(set(names)))
anyio.run(main)
""",
        server,
        tmp_path,
    )
    assert child.returncode == 0, child.stderr
    assert "spans: ['chat x']" in child.stdout, child.stdout
    assert "'gen_ai.client.token.usage'" in child.stdout, child.stdout
