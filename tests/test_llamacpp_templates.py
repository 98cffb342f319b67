"""Strict chat templates accept what a session sends by default.

llama.cpp serves SmolLM2 here with the chat templates of real models (Gemma 2,
Mistral Nemo, Llama 3.3; see ``chat_templates/README.md``), each of which refuses
requests hosted APIs take: turns of one role in a row, tool-call ids not of nine
characters, two tool calls in one message. The model is addressed as a generic
server (``openai/local`` with an ``api_base``), so its name says nothing of its
template. Each request is first shown refused as the default profile renders it,
then accepted as the session sends it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from lossless import Session, ToolPart
from lossless.config import CompactionConfig, Config, LLMConfig, ModelConfig
from lossless.events import Event, EventName
from test_llamacpp import MODEL_FILE, _read_line, _stop

pytestmark = pytest.mark.anyio

TEMPLATES = Path(__file__).parent / "chat_templates"
GEMMA_2 = "google-gemma-2-2b-it.jinja"
MISTRAL_NEMO = "mistralai-Mistral-Nemo-Instruct-2407.jinja"
LLAMA_3_3 = "meta-llama-Llama-3.3-70B-Instruct.jinja"
# A name that says nothing of the template, as a local server is usually addressed.
MODEL = "openai/local"
SERVER_CTX = 1024
STARTUP_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 120.0

# Runs in the child (see test_llamacpp): llama.cpp's server with the given template.
_SERVE = """
import json, sys
import xllamacpp

model, template = sys.argv[1], sys.argv[2]
params = xllamacpp.CommonParams()
params.model.path = model
params.n_ctx = int(sys.argv[3])
params.n_parallel = 1
params.cpuparams.n_threads = 2
params.cpuparams_batch.n_threads = 2
params.use_jinja = True
params.chat_template = open(template, encoding="utf-8").read()
params.hostnames = ["127.0.0.1"]
params.port = 0
params.ui = False
params.warmup = False
server = xllamacpp.Server(params)
print(json.dumps({"address": server.listening_address}), flush=True)
sys.stdin.read()
del server
"""


def _serve(template: str, log: Path) -> Iterator[str]:
    """The address of a llama.cpp server running SmolLM2 with ``template``."""
    assert MODEL_FILE is not None
    env = {**os.environ, "OMP_WAIT_POLICY": "passive"}
    with log.open("wb") as log_file:
        arguments = [str(MODEL_FILE), str(TEMPLATES / template), str(SERVER_CTX)]
        process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, *arguments],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_file,
            env=env,
        )
    try:
        line = _read_line(process, time.monotonic() + STARTUP_TIMEOUT_S)
        if not line:
            pytest.fail(f"llama.cpp did not start:\n{log.read_text(errors='replace')[-3000:]}")
        url = json.loads(line)["address"]
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _healthy(url):
            if time.monotonic() > deadline:
                pytest.fail(f"llama.cpp server at {url} never became healthy")
            time.sleep(0.1)
        yield url
    finally:
        _stop(process)


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url + "/health", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


@pytest.fixture(scope="module")
def gemma_2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _serve(GEMMA_2, tmp_path_factory.mktemp("gemma") / "server.log")


@pytest.fixture(scope="module")
def mistral_nemo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _serve(MISTRAL_NEMO, tmp_path_factory.mktemp("nemo") / "server.log")


@pytest.fixture(scope="module")
def llama_3_3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _serve(LLAMA_3_3, tmp_path_factory.mktemp("llama") / "server.log")


def _config(url: str, profile: str = "auto") -> Config:
    return Config(
        model=ModelConfig(
            context_limit=SERVER_CTX,
            max_output_tokens=8,
            token_correction=1.2,
            profile=profile,  # type: ignore[arg-type]
        ),
        llm=LLMConfig(
            api_base=url + "/v1", api_key="x", timeout_s=REQUEST_TIMEOUT_S, num_retries=0
        ),
        compaction=CompactionConfig(output_budget=128),
    )


def _refusal(url: str, messages: list[dict[str, Any]]) -> str:
    """What the server says to ``messages`` sent without lossless: "" when it accepts
    them (only the template is applied: nothing is generated)."""
    response = httpx.post(url + "/apply-template", json={"messages": messages}, timeout=60)
    return "" if response.status_code == 200 else f"{response.status_code} {response.text}"


@asynccontextmanager
async def _session(url: str, tmp_path: Path, profile: str = "auto") -> AsyncIterator[Session]:
    async with Session.open(model=MODEL, db=tmp_path / "t.db", config=_config(url, profile)) as s:
        yield s


def _escalations(session: Session) -> list[Event]:
    seen: list[Event] = []
    session.events.subscribe(seen.append, EventName.PROFILE_ESCALATED)
    return seen


async def _compacted(session: Session) -> None:
    """A session whose view starts with a summary: a user message, then the turns."""
    # Turns long enough that a summary of them costs less than they do: a summary's
    # header and framing alone take about 48 tokens.
    for turn in range(6):
        await session.record(
            "user",
            f"Step {turn}: rename module m{turn} to the new API, update every call site "
            "and its imports, and run the module's tests before you go on.",
        )
        await session.record(
            "assistant",
            f"Renamed m{turn}: the imports, the four call sites in the payout client and "
            "the fixtures of its tests now use the new API; the tests pass.",
        )
    await session.record("user", "Never touch legacy_billing/.")
    result = await session.compact()
    assert result.summary_ids, result


async def _tool_turns(session: Session, calls: int) -> None:
    await session.record("user", "Read the two files.")
    await session.record(
        "assistant",
        [
            ToolPart("read", f"call_{index}", {"path": f"f{index}.py"}, output=f"body {index}")
            for index in range(calls)
        ],
    )


async def _default_refused(url: str, tmp_path: Path, session_id: str, expected: str) -> None:
    """The stored session as the default profile renders it is refused with
    ``expected`` in the server's message."""
    async with Session.open(
        model=MODEL, db=tmp_path / "t.db", session_id=session_id, config=_config(url, "default")
    ) as default:
        messages = default.build_context().messages
    assert expected in _refusal(url, messages)


async def test_gemma_2_accepts_a_compacted_turn_by_default(gemma_2: str, tmp_path: Path) -> None:
    async with _session(gemma_2, tmp_path) as session:
        escalated = _escalations(session)
        await _compacted(session)
        await session.record("user", "Now the tests.")
        await _default_refused(gemma_2, tmp_path, session.id, "roles must alternate")
        assert session.profile == "strict"
        assert _refusal(gemma_2, session.build_context().messages) == ""
        result = await session.send("Go on.")
        assert result.message_id and escalated == []


async def test_mistral_nemo_accepts_compacted_and_tool_turns(
    mistral_nemo: str, tmp_path: Path
) -> None:
    async with _session(mistral_nemo, tmp_path) as session:
        escalated = _escalations(session)
        await _compacted(session)
        await session.record("user", "Now the tests.")
        await _default_refused(mistral_nemo, tmp_path, session.id, "roles must alternate")
        await session.send("Go on.")
        assert escalated == [] and session.profile == "strict"
        # Nemo's ids are nine characters: refused as ``strict`` sends them, the turn
        # is sent again as ``strictest`` does, which the session then keeps.
        await _tool_turns(session, 1)
        await session.send("And now?")
        assert [(e.payload["old"], e.payload["new"]) for e in escalated] == [
            ("strict", "strictest")
        ]
        assert "length 9" in escalated[0].payload["error"]
        assert session.profile == "strictest"
        await session.send("Once more.")
        assert len(escalated) == 1


async def test_llama_3_3_accepts_two_calls_in_one_message(llama_3_3: str, tmp_path: Path) -> None:
    async with _session(llama_3_3, tmp_path) as session:
        escalated = _escalations(session)
        await _tool_turns(session, 2)
        await session.record("user", "Summarise them.")
        await _default_refused(llama_3_3, tmp_path, session.id, "single tool-calls")
        result = await session.send("Go on.")
        assert result.message_id
        assert [e.payload["new"] for e in escalated] == ["strictest"]
        assert _refusal(llama_3_3, session.build_context().messages) == ""


async def test_a_forced_default_profile_is_sent_again_once_as_strictest(
    gemma_2: str, tmp_path: Path
) -> None:
    async with _session(gemma_2, tmp_path, profile="default") as session:
        escalated = _escalations(session)
        await session.record("user", "First.")
        result = await session.send("Second, right after.")
        assert result.message_id
        assert [(e.payload["old"], e.payload["new"]) for e in escalated] == [
            ("default", "strictest")
        ]
        assert "roles must alternate" in escalated[0].payload["error"]
        stored = [row["name"] for row in session.store.events(session.id)]
        assert stored.count(EventName.PROFILE_ESCALATED.value) == 1
        assert EventName.LLM_FAILED.value not in stored
        assert [m.role for m in session.history()] == ["user", "user", "assistant"]


async def test_gemma_2_accepts_tool_turns_as_text(gemma_2: str, tmp_path: Path) -> None:
    """Gemma 2's template takes no tool message at all: a tool turn is refused as
    ``strict`` and ``strictest`` render it, and accepted once the session sends tool
    exchanges as text (``plain``), which it then keeps."""
    async with _session(gemma_2, tmp_path) as session:
        escalated = _escalations(session)
        await _tool_turns(session, 2)
        await session.record("user", "Summarise them.")
        assert _refusal(gemma_2, session.build_context().messages) != ""
        result = await session.send("Go on.")
        assert result.message_id
        assert [(e.payload["old"], e.payload["new"]) for e in escalated] == [
            ("strict", "strictest"),
            ("strictest", "plain"),
        ]
        assert session.profile == "plain"
        sent = session.build_context().messages
        assert _refusal(gemma_2, sent) == ""
        assert any("[result of tool call" in str(m.get("content")) for m in sent)
