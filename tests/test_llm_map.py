"""LLMMap against the local server: order, schemas and their retry, timeouts,
cancellation, durable outcomes and resume (after a SIGKILL too), bad input."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from conftest import TEST_MODEL, sql_rows
from lossless.config import Config
from lossless.errors import InvalidInputError
from lossless.events import Event, EventBus, EventName
from lossless.operators import LLMMap
from lossless.testing import LocalLLMServer, Reply, content_text

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]


class Verdict(BaseModel):
    label: str
    score: int


def item_number(request: dict[str, Any]) -> int:
    """The item a request is for: the first user message says ``item <n>``."""
    first = next(m for m in request["messages"] if m["role"] == "user")
    found = re.search(r"item (\d+)", content_text(first["content"]))
    assert found is not None
    return int(found.group(1))


class Scripted:
    """A responder choosing each reply by item number and how often that item asked."""

    def __init__(self, reply: Any) -> None:
        self.reply = reply
        self.calls: Counter[int] = Counter()
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        n = item_number(request)
        with self.lock:
            self.calls[n] += 1
            call = self.calls[n]
        return self.reply(n, call, request)


def outcomes(db: Path | str) -> list[tuple[int, str]]:
    rows = sql_rows(db, "SELECT idx, status FROM map_outcomes ORDER BY pk")
    return [(int(index), status) for index, status in rows]


def new_map(config: Config, db: Path, **fields: Any) -> LLMMap:
    fields.setdefault("template", "Classify item {{ item }}.")
    return LLMMap(model=TEST_MODEL, db=db, config=config, **fields)


async def test_results_stream_in_completion_order_and_run_all_keeps_input_order(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    server.responder = Scripted(lambda n, call, _: Reply(text=f"out {n}", latency_s=(5 - n) * 0.08))
    mapper = new_map(config, db, concurrency=5)
    streamed = [result async for result in mapper.run(range(5))]
    assert [r.index for r in streamed] == [4, 3, 2, 1, 0]
    assert all(r.ok and r.output == f"out {r.index}" and r.attempts == 1 for r in streamed)
    assert streamed[0].usage["input_tokens"] > 0
    in_order = await mapper.run_all(range(5))
    assert [r.output for r in in_order] == [f"out {n}" for n in range(5)]
    assert len(outcomes(db)) == 10  # two runs, every outcome stored


async def test_a_schema_reply_is_validated_and_an_invalid_one_retried_once_with_the_error(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    def reply(n: int, call: int, request: dict[str, Any]) -> Reply:
        if n == 1 and call == 1:
            return Reply(text='{"label": "spam"}')  # score missing: retried
        if n == 2:
            return Reply(text="I think it is spam.")  # never valid
        return Reply(text=f'```json\n{{"label": "ham", "score": {n}}}\n```')

    responder = Scripted(reply)
    server.responder = responder
    results = await new_map(config, db, output_schema=Verdict).run_all(range(3))
    assert results[0].output == Verdict(label="ham", score=0) and results[0].attempts == 1
    assert results[1].output == Verdict(label="ham", score=1) and results[1].attempts == 2
    assert not results[2].ok and results[2].error_kind == "invalid_output"
    assert results[2].attempts == 2 and "Invalid JSON" in (results[2].error or "")
    retry = [r for r in server.requests if item_number(r) == 1][1]
    assert "score" in content_text(retry["messages"][-1]["content"])
    assert "Field required" in content_text(retry["messages"][-1]["content"])
    # The stored outputs read back as the model's instances.
    stored = await LLMMap.results(results[0].map_id, db=db, output_schema=Verdict)
    assert [r.output for r in stored[:2]] == [results[0].output, results[1].output]


async def test_a_json_schema_dict_checks_replies_too(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    server.responder = Scripted(
        lambda n, call, _: Reply(text=json.dumps({"n": n} if n else {"n": "zero"}))
    )
    results = await new_map(config, db, output_schema=schema).run_all(range(2))
    assert results[1].output == {"n": 1}
    assert results[0].error_kind == "invalid_output" and "n: 'zero'" in (results[0].error or "")
    with pytest.raises(InvalidInputError, match="JSON Schema"):
        new_map(config, db, output_schema={"type": "no such type"})


async def test_timeouts_server_errors_and_cut_replies_are_failures_with_their_reason(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    def reply(n: int, call: int, _: dict[str, Any]) -> Reply:
        if n == 0:
            return Reply(text="slow", latency_s=3.0)
        if n == 1:
            return Reply(status=400, text="bad request")
        if n == 2 and call == 1:
            return Reply(status=500, text="overloaded")
        if n == 3:
            return Reply(text="cut", finish_reason="length")
        return Reply(text=f"fine {n}")

    server.responder = Scripted(reply)
    results = await new_map(config, db, timeout_s=0.3, max_retries=1).run_all(range(5))
    kinds = [(r.error_kind, r.attempts) for r in results]
    assert kinds == [("timeout", 2), ("llm_error", 1), (None, 2), ("length", 1), (None, 1)]
    assert results[2].output == "fine 2"


async def test_closing_the_stream_early_cancels_the_rest_and_resume_finishes_them_once(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    server.responder = Scripted(lambda n, call, _: Reply(text=f"out {n}", latency_s=0.3))
    stream = new_map(config, db, concurrency=2).run(range(8))
    async with stream:
        first = await anext(stream)
    map_id = first.map_id
    asked = len(server.requests)
    await anyio.sleep(0.5)
    assert len(server.requests) == asked, "no item starts after the stream closed"
    done = outcomes(db)
    assert 1 <= len(done) <= 3
    resumed = await LLMMap.resume(map_id, db=db, config=config).collect()
    assert sorted(r.index for r in resumed) == sorted(set(range(8)) - {i for i, _ in done})
    everything = await LLMMap.results(map_id, db=db)
    assert [r.output for r in everything] == [f"out {n}" for n in range(8)]
    assert Counter(i for i, status in outcomes(db) if status == "succeeded") == Counter(range(8))
    # Nothing is left: a second resume runs nothing.
    assert await LLMMap.resume(map_id, db=db, config=config).collect() == []


async def test_bad_templates_are_refused_before_anything_is_stored(
    config: Config, db: Path
) -> None:
    with pytest.raises(ValueError, match=r"never uses \{\{ item \}\}"):
        new_map(config, db, template="Classify {{ thing }}.")
    with pytest.raises(InvalidInputError, match="line 2"):
        new_map(config, db, template="Classify\n{{ item }.")
    with pytest.raises(InvalidInputError, match="items"):
        new_map(config, db).run("abc")
    assert not await anyio.Path(db).exists()


async def test_items_that_cannot_be_stored_or_rendered_fail_and_the_map_goes_on(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    server.responder = Scripted(lambda n, call, _: Reply(text="ok"))
    mapper = new_map(config, db, template="item {{ item.n }} of {{ item.group }}")
    results = await mapper.run_all(
        [{"n": 0, "group": "a"}, {"n": 1}, object(), {"n": 3, "group": "b"}]
    )
    assert [r.error_kind for r in results] == [None, "template_error", "bad_input", None]
    assert "group" in (results[1].error or "") and "JSON" in (results[2].error or "")
    assert len(server.requests) == 2


async def test_events_and_progress_report_the_run(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    server.responder = Scripted(
        lambda n, call, _: Reply(text="x" if n else "", status=200 if n else 400)
    )
    bus = EventBus()
    seen: list[Event] = []
    bus.subscribe(seen.append)
    await new_map(config, db, events=bus, progress=True).run_all(range(3))
    names = [event.name for event in seen]
    assert names[0] == EventName.MAP_STARTED and names[-1] == EventName.MAP_COMPLETED
    assert names.count(EventName.MAP_ITEM_COMPLETED) == 3
    assert seen[-1].payload == {"map_id": seen[0].payload["map_id"], "succeeded": 2, "failed": 1}


def test_a_run_killed_with_sigkill_loses_only_items_in_flight_and_resumes(
    server: LocalLLMServer, database: Path | str
) -> None:
    db = database
    server.responder = Scripted(lambda n, call, _: Reply(text=f"out {n}", latency_s=0.1))
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import anyio
                from lossless.config import Config, LLMConfig
                from lossless.operators import LLMMap

                config = Config(llm=LLMConfig(api_base={server.base_url!r}, api_key="k"))
                mapper = LLMMap(model={TEST_MODEL!r}, template="item {{{{ item }}}}",
                                concurrency=4, db={str(db)!r}, config=config)
                async def main():
                    async for result in mapper.run(range(60)):
                        print(result.map_id, flush=True)
                anyio.run(main)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    assert child.stdout is not None
    map_id = child.stdout.readline().decode().strip()
    deadline = time.monotonic() + 30
    while len(outcomes(db)) < 12 and time.monotonic() < deadline:
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait()
    done = {index for index, _ in outcomes(db)}
    asked = {item_number(r) for r in server.requests}
    assert 12 <= len(done) < 60
    assert len(asked - done) <= 4, "only the items in flight are lost"

    async def resume() -> list[Any]:
        config = Config(llm={"api_base": server.base_url, "api_key": "k"})
        return await LLMMap.resume(map_id, db=db, config=config).collect()

    resumed = anyio.run(resume)
    assert {r.index for r in resumed} == set(range(60)) - done
    succeeded = Counter(index for index, status in outcomes(db) if status == "succeeded")
    assert succeeded == Counter(range(60)), "every item succeeds exactly once"
