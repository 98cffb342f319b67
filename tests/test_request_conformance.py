"""Every context a session assembles is a request every provider accepts, at every step.

Generated sessions mix what agent loops really produce: empty and blank texts, parallel
tool calls with large, failed or missing outputs, calls finished later (or never), call
ids that repeat across and within turns, arguments cut off or not a JSON object, file
references, conversations opened by the assistant or a system turn, OpenAI-format lists
through ``record_messages``, model turns against the local server (empty replies, calls
cut off by the output limit and sent without an id), and windows small enough that
compaction runs all the time, with the built-in summariser or a summarising model.

After every step:

1. ``check_request`` accepts the assembled context (openai types, litellm's Anthropic,
   Bedrock and Gemini transformations, the structural rules);
2. the context fits its budget;
3. once background compaction finished, the view is within the hard budget unless the
   last compaction stalled, and says why in terms the session's state bears out;
4. what the caller does to a returned context never shows in the next one.

Besides: every request the local server receives from ``send`` passes ``check_request``
too, no background compaction fails, and a session closed and loaded again assembles
the same context (unless its budget changed: token calibration starts over on load).

Run with ``-s`` to see the coverage counters and any stall reasons.
"""

from __future__ import annotations

import copy
import json
import random
import re
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from conftest import TEST_MODEL, make_config
from lossless import FileRefPart, TextPart, ToolPart
from lossless.compaction.engine import SUMMARY_FRAMING_TOKENS, CompactionResult
from lossless.compaction.levels import MIN_SUMMARY_TOKENS
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.events import Event, EventName
from lossless.openai_format import open_call_ids
from lossless.session import Session
from lossless.testing import LocalLLMServer, Reply, ScriptedResponder, SummaryResponder
from lossless.testing import ToolCallSpec as Spec
from lossless.testing.conformance import check_request

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SUMMARY_MODEL = "openai/lossless-summariser"
_WORDS_TEXT = (
    "payout ledger refund invoice settle retry webhook merchant balance charge dispute "
    "config handler request timeout error module fixture src/payout/client.py tests passed"
)
WORDS = _WORDS_TEXT.split()
FILE_IDS = [f"file_{n * 2654435761 % 16**8:08x}" for n in range(1, 9)] + ["file_0123abcd"]
BLANKS = ["", " ", "  \n", "\t", "\n\n", " \n\t "]
MUTATED = "<changed by the caller>"
TOOLS = ["read_file", "grep", "bash", "skill", "edit"]

# What every example saw, printed at the end of the module (``pytest -s``).
COVERAGE: Counter[str] = Counter()
STALLS: list[str] = []


# -- steps -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    """``kind``: prose of ``chars`` characters (naming a file id when ``file`` is set),
    an empty string or white space only."""

    kind: str  # "prose" | "empty" | "blank"
    chars: int = 0
    file: int | None = None
    blank: int = 0


@dataclass(frozen=True)
class Call:
    name: str
    id_kind: str  # "call_0" (every turn), "fresh", "same" (as the call before it)
    arguments: str  # "object" | "cut" | "array" | "empty" | "file" | "string"
    output_chars: int
    status: str  # completed | error | pending | running
    error: bool


@dataclass(frozen=True)
class Say:
    """``record(role, parts)``: one or two texts, maybe a file reference."""

    role: str
    texts: tuple[Text, ...]
    file_ref: int | None = None


@dataclass(frozen=True)
class Calls:
    """``record("assistant", [text?, ToolPart, ...])`` with 1-4 parallel calls."""

    text: Text | None
    calls: tuple[Call, ...]


@dataclass(frozen=True)
class Finish:
    """``update_tool`` on one of the calls still open, if any."""

    pick: int
    status: str  # completed | error | running
    output_chars: int
    error: bool


@dataclass(frozen=True)
class Messages:
    """``record_messages`` with an OpenAI-format list."""

    lead: Text | None  # a user message first
    system: Text | None  # a system message before it
    prompt_first: bool  # the list opens with the session's own system prompt
    answer_open: bool  # a tool message answering a call an earlier step left open
    content: str  # "none" | "empty" | "text"
    calls: tuple[Call, ...]
    answered: tuple[bool, ...]
    trailing: Text | None  # an assistant text after the results


@dataclass(frozen=True)
class Send:
    """``send(text)`` against the local server with one scripted reply."""

    chars: int
    reply: str  # "empty" | "text" | "cut" | "calls" | "repeat" | "blank"
    reply_chars: int


@dataclass(frozen=True)
class Wait:
    pass


@dataclass(frozen=True)
class Compact:
    pass


@dataclass(frozen=True)
class Reopen:
    pass


Step = Say | Calls | Finish | Messages | Send | Wait | Compact | Reopen


@dataclass(frozen=True)
class Scenario:
    context_limit: int
    max_output: int
    output_budget: int
    model_summariser: bool
    system_prompt: str | None
    seed: int
    steps: tuple[Step, ...]


# -- strategies ------------------------------------------------------------------------

file_index = st.one_of(st.none(), st.integers(0, len(FILE_IDS) - 1))
sizes = st.one_of(st.just(0), st.integers(1, 300), st.integers(300, 6_000))
# A finished call's output: often large, so that finishing a call can overflow the window.
finished_sizes = st.one_of(sizes, st.integers(3_000, 6_000))


@st.composite
def texts(draw: st.DrawFn, max_chars: int = 1_200) -> Text:
    kind = draw(st.sampled_from(["prose"] * 4 + ["empty", "blank"]))
    if kind != "prose":
        return Text(kind, blank=draw(st.integers(0, len(BLANKS) - 1)))
    return Text("prose", draw(st.integers(1, max_chars)), draw(file_index))


@st.composite
def calls(draw: st.DrawFn) -> Call:
    status = draw(st.sampled_from(["completed"] * 4 + ["error", "pending", "running"]))
    return Call(
        name=draw(st.sampled_from(TOOLS)),
        id_kind=draw(st.sampled_from(["call_0", "fresh", "fresh", "same"])),
        arguments=draw(
            st.sampled_from(["object", "object", "cut", "array", "empty", "file", "string"])
        ),
        output_chars=draw(sizes),
        status=status,
        error=draw(st.booleans()) if status in ("completed", "error") else False,
    )


@st.composite
def steps(draw: st.DrawFn) -> Step:
    kind = draw(
        st.sampled_from(
            ["user"] * 4
            + ["assistant"] * 3
            + ["system", "calls", "calls", "calls", "calls"]
            + ["finish", "finish", "messages", "messages", "send", "send"]
            + ["wait", "compact", "reopen"]
        )
    )
    if kind in ("user", "assistant", "system"):
        parts = tuple(draw(st.lists(texts(), min_size=1, max_size=2)))
        file_ref = draw(file_index) if kind != "system" else None
        return Say(kind, parts, file_ref)
    if kind == "calls":
        return Calls(
            draw(st.one_of(st.none(), texts(300))),
            tuple(draw(st.lists(calls(), min_size=1, max_size=4))),
        )
    if kind == "finish":
        return Finish(
            draw(st.integers(0, 7)),
            draw(st.sampled_from(["completed", "completed", "error", "running"])),
            draw(finished_sizes),
            draw(st.booleans()),
        )
    if kind == "messages":
        listed = tuple(draw(st.lists(calls(), min_size=1, max_size=4)))
        return Messages(
            lead=draw(st.one_of(st.none(), texts(400))),
            system=draw(st.one_of(st.none(), st.none(), texts(200))),
            prompt_first=draw(st.booleans()),
            answer_open=draw(st.booleans()),
            content=draw(st.sampled_from(["none", "empty", "text"])),
            calls=listed,
            answered=tuple(
                draw(st.lists(st.booleans(), min_size=len(listed), max_size=len(listed)))
            ),
            trailing=draw(st.one_of(st.none(), texts(300))),
        )
    if kind == "send":
        return Send(
            draw(st.integers(1, 600)),
            draw(st.sampled_from(["empty", "text", "cut", "calls", "repeat", "blank"])),
            draw(st.integers(0, 2_000)),
        )
    simple: dict[str, Step] = {"wait": Wait(), "compact": Compact(), "reopen": Reopen()}
    return simple[kind]


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    context_limit = draw(st.integers(3_000, 12_000))
    max_output = draw(st.sampled_from([256, 512, 1_000]))
    output_budget = draw(st.sampled_from([0, 256, 1_000]))
    opening = draw(st.sampled_from(["user", "user", "assistant", "system", "calls"]))
    first: Step = (
        Calls(None, (draw(calls()),)) if opening == "calls" else Say(opening, (draw(texts()),))
    )
    return Scenario(
        context_limit=context_limit,
        max_output=max_output,
        output_budget=output_budget,
        model_summariser=draw(st.booleans()),
        system_prompt=draw(st.sampled_from([None, "You are a careful coding agent."])),
        seed=draw(st.integers(0, 2**32 - 1)),
        steps=(first, *draw(st.lists(steps(), min_size=12, max_size=60))),
    )


# -- the local model ---------------------------------------------------------------------


class Router:
    """Summaries for the summarising model; scripted replies for the conversation model."""

    def __init__(self) -> None:
        self.summary = SummaryResponder()
        self.chat = ScriptedResponder([], then=lambda request: Reply(text="ok"))

    def __call__(self, request: dict[str, Any]) -> Reply:
        if request.get("model") == SUMMARY_MODEL.split("/", 1)[1]:
            return self.summary(request)
        return self.chat(request)


@pytest.fixture(scope="module")
def llm_server() -> Iterator[LocalLLMServer]:
    with LocalLLMServer() as server:
        yield server
    print(f"\ncoverage: {dict(sorted(COVERAGE.items()))}")
    print(f"{len(STALLS)} checks found the view over the hard budget after a stall")
    for stall in STALLS[:30]:
        print(f"stall: {stall}")


# -- the driver --------------------------------------------------------------------------


class Runner:
    def __init__(self, scenario: Scenario, server: LocalLLMServer, db: Path) -> None:
        self.scenario = scenario
        self.server = server
        self.router = Router()
        server.reset()
        server.responder = self.router
        self.db = db
        self.rng = random.Random(scenario.seed)
        self.fresh = 0
        self.config = self.make_config()
        self.counts: Counter[str] = Counter()
        self.earlier_result: CompactionResult | None = None
        # Compactions that ended in an unexpected error ("never raises" hides them).
        self.failures: list[str] = []

    def make_config(self) -> Config:
        base = make_config(self.server)
        s = self.scenario
        compaction = CompactionConfig(
            output_budget=s.output_budget,
            model=SUMMARY_MODEL if s.model_summariser else None,
            model_context_limit=100_000 if s.model_summariser else None,
        )
        return base.model_copy(
            update={
                "model": ModelConfig(context_limit=s.context_limit, max_output_tokens=s.max_output),
                "compaction": compaction,
                "llm": base.llm.model_copy(update={"num_retries": 0}),
            }
        )

    # -- content --

    def prose(self, chars: int) -> str:
        words: list[str] = []
        size = 0
        while size < chars:
            word = self.rng.choice(WORDS)
            words.append(word)
            size += len(word) + 1
        return " ".join(words)[:chars] or "x"

    def text(self, spec: Text) -> str:
        if spec.kind == "empty":
            return ""
        if spec.kind == "blank":
            return BLANKS[spec.blank]
        body = self.prose(spec.chars)
        return body if spec.file is None else f"{body} see {FILE_IDS[spec.file]}"

    def arguments(self, kind: str) -> str | dict[str, Any]:
        choices: dict[str, str | dict[str, Any]] = {
            "object": {"path": f"src/m{self.rng.randint(0, 99)}.py"},
            "cut": '{"path": "src/ma',
            "array": "[1, 2]",
            "empty": "",
            "file": f'{{"id": "{self.rng.choice(FILE_IDS)}"}}',
            "string": '"just text"',
        }
        return choices[kind]

    def call_ids(self, specs: tuple[Call, ...], *, repeats: bool = True) -> list[str]:
        """Ids for one turn's calls. ``call_0`` comes back every turn; without
        ``repeats`` (``record_messages`` refuses an id twice in one message) an id
        appears once in the turn."""
        ids: list[str] = []
        for spec in specs:
            if spec.id_kind == "same" and ids and repeats:
                ids.append(ids[-1])
            elif spec.id_kind == "call_0" and (repeats or "call_0" not in ids):
                ids.append("call_0")
            else:
                self.fresh += 1
                ids.append(f"call_{self.fresh}")
        if len(ids) != len(set(ids)):
            self.counts["turns with a call id twice"] += 1
        if "call_0" in ids:
            self.counts["turns using call_0"] += 1
        return ids

    def output(self, chars: int) -> str:
        if chars == 0:
            return ""
        text = self.prose(chars)
        if self.rng.random() < 0.3:
            text += f" wrote {self.rng.choice(FILE_IDS)}"
        return text

    def tool_part(self, spec: Call, call_id: str) -> ToolPart:
        open_ = spec.status in ("pending", "running")
        return ToolPart(
            spec.name,
            call_id,
            self.arguments(spec.arguments),
            output=None if open_ else self.output(spec.output_chars),
            status=spec.status,  # type: ignore[arg-type]
            error="it broke: exit 1" if spec.error or spec.status == "error" else None,
        )

    # -- steps --

    async def run(self) -> None:
        s = self.scenario
        self.session = await Session.create(
            model=TEST_MODEL, db=self.db, config=self.config, system_prompt=s.system_prompt
        )
        self.watch()
        try:
            for index, step in enumerate(s.steps):
                self.counts[type(step).__name__] += 1
                await self.play(step)
                await self.check(f"step {index}: {step}")
                if not self.session.compaction.pending:
                    # wait_for_pending() would return at once: the view must fit now.
                    await self.check_hard_budget(f"step {index} (no compaction pending): {step}")
            await self.session.compaction.wait_for_pending()
            await self.check_hard_budget("end of the session")
            await self.check("end of the session")
            self.counts["summaries written"] += self.session.store.stats()["summaries"]
        finally:
            await self.session.close()
        self.summarise()

    def watch(self) -> None:
        """Count what compaction did, from the session's events."""

        def seen(found: Event) -> None:
            if found.name == EventName.COMPACTION_TRIGGERED:
                self.counts["compactions triggered"] += 1
            elif found.name == EventName.PRUNE_COMPLETED:
                self.counts["prunes"] += 1
            elif found.name in (
                EventName.COMPACTION_COMPLETED,
                EventName.COMPACTION_STALLED,
                EventName.COMPACTION_FAILED,
            ):
                self.counts[f"compaction {found.payload['status']}"] += 1
                if found.name == EventName.COMPACTION_FAILED:
                    self.failures.append(f"{found.payload['reason']}: {found.payload['error']}")
                for level in found.payload.get("levels") or ():
                    self.counts[f"summaries at level {level}"] += 1

        self.session.events.subscribe(seen)

    async def play(self, step: Step) -> None:
        session = self.session
        if isinstance(step, Say):
            parts: list[Any] = [TextPart(self.text(text)) for text in step.texts]
            if step.file_ref is not None:
                file_id = FILE_IDS[step.file_ref]
                parts.append(
                    FileRefPart(file_id, f"logs/{file_id}.log", "text", 40_000, "a large log")
                )
            await session.record(step.role, parts)
        elif isinstance(step, Calls):
            parts = [] if step.text is None else [TextPart(self.text(step.text))]
            ids = self.call_ids(step.calls)
            parts += [self.tool_part(spec, id_) for spec, id_ in zip(step.calls, ids, strict=True)]
            await session.record("assistant", parts)
        elif isinstance(step, Finish):
            open_ids = self.open_ids()
            if not open_ids:
                self.counts["finish with nothing open"] += 1
                return
            call_id = open_ids[step.pick % len(open_ids)]
            if step.status == "running":
                await session.update_tool(call_id, status="running")
            else:
                await session.update_tool(
                    call_id,
                    status=step.status,  # type: ignore[arg-type]
                    output=self.output(step.output_chars),
                    error="failed: no such file" if step.error or step.status == "error" else None,
                )
            self.counts[f"finish {step.status}"] += 1
        elif isinstance(step, Messages):
            await session.record_messages(self.openai_messages(step))
        elif isinstance(step, Send):
            await self.send(step)
        elif isinstance(step, Wait):
            await session.compaction.wait_for_pending()
            await self.check_hard_budget("after wait_for_pending")
        elif isinstance(step, Compact):
            result = await session.compact()
            self.counts[f"compact: {result.status}"] += 1
            assert result.status != "failed", result
            await self.check_hard_budget("after compact()")
        else:
            await self.reopen()

    def open_ids(self) -> list[str]:
        parts = (part for message in self.session.history() for part in message.parts)
        return list(open_call_ids(parts))

    def openai_messages(self, step: Messages) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        if step.prompt_first and self.scenario.system_prompt is not None:
            # Skipped: the session sends its prompt first anyway.
            messages.append({"role": "system", "content": self.scenario.system_prompt})
            self.counts["record_messages opening with the session's prompt"] += 1
        if step.answer_open:
            open_ids = self.open_ids()
            if open_ids:
                # A result for a call an earlier step left open: set through update_tool.
                messages.append(
                    {"role": "tool", "tool_call_id": open_ids[-1], "content": self.output(200)}
                )
                self.counts["record_messages answering an earlier call"] += 1
        if step.system is not None:
            messages.append({"role": "system", "content": self.text(step.system)})
        if step.lead is not None:
            messages.append({"role": "user", "content": self.text(step.lead)})
        ids = self.call_ids(step.calls, repeats=False)
        assistant: dict[str, Any] = {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": spec.name, "arguments": self.json_arguments(spec)},
                }
                for spec, call_id in zip(step.calls, ids, strict=True)
            ],
        }
        if step.content != "none":
            assistant["content"] = "" if step.content == "empty" else self.prose(80)
        messages.append(assistant)
        for spec, call_id, answered in zip(step.calls, ids, step.answered, strict=True):
            if answered:
                content = self.output(spec.output_chars)
                messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
        if step.trailing is not None:
            messages.append({"role": "assistant", "content": self.text(step.trailing)})
        return messages

    def json_arguments(self, spec: Call) -> str:
        arguments = self.arguments(spec.arguments)
        return arguments if isinstance(arguments, str) else json.dumps(arguments)

    async def send(self, step: Send) -> None:
        reply = {
            "empty": lambda: Reply(text=""),
            "blank": lambda: Reply(text="  \n"),
            "text": lambda: Reply(text=self.prose(max(step.reply_chars, 1))),
            "cut": lambda: Reply(
                tool_calls=[Spec("read", '{"path": "src/ma', id="")], finish_reason="length"
            ),
            "calls": lambda: Reply(
                text=self.prose(step.reply_chars) if step.reply_chars % 2 else "",
                tool_calls=[Spec("read_file", {"path": "a.py"}), Spec("grep", {"q": "payout"})],
            ),
            "repeat": lambda: Reply(
                tool_calls=[
                    Spec("read_file", {"path": "b.py"}, id="call_0"),
                    Spec("grep", "[1, 2]", id="call_0"),
                ]
            ),
        }[step.reply]()
        self.router.chat = ScriptedResponder([reply], then=lambda request: Reply(text="ok"))
        seen = len(self.server.requests)
        result = await self.session.send(self.prose(step.chars))
        self.counts[f"send {step.reply}"] += 1
        if result.compaction_triggered:
            self.counts["send triggered compaction"] += 1
        # What the server received is what the context said: providers would accept it.
        chat = TEST_MODEL.split("/", 1)[1]
        sent = [r for r in self.server.requests[seen:] if r.get("model") == chat]
        assert len(sent) == 1, sent
        check_request(sent[0]["messages"])

    async def reopen(self) -> None:
        session = self.session
        await session.compaction.wait_for_pending()
        before = session.build_context()
        await session.close()
        # The new session's engine has run nothing yet: the last compaction of this
        # session is the one the closed object ran.
        self.earlier_result = session.compaction.last_result or self.earlier_result
        # The stored snapshot leaves the API key out: hand the config over again.
        self.session = await Session.load(session.id, db=self.db, config=self.config)
        self.watch()
        after = self.session.build_context()
        if after.budget != before.budget:
            # The token calibration a session learnt from the provider's reports lives
            # in the session object: a loaded one starts over. The checks after this
            # step judge the view against the budget it has now.
            self.counts["reopened with another budget"] += 1
            return
        # The context is a function of what is stored: reopening changes nothing in it.
        assert after.messages == before.messages, (
            "the context changed across close and load:\n"
            f"before: {[m for m in before.messages if m not in after.messages]}\n"
            f"after:  {[m for m in after.messages if m not in before.messages]}"
        )
        assert after.tokens == before.tokens

    # -- invariants --

    async def check(self, where: str) -> None:
        assert not self.failures, f"{where}: a compaction failed: {self.failures}"
        version = self.view_version()
        context = self.session.build_context()
        if context.omitted:
            self.counts["contexts with omitted messages"] += 1
        # 2. within its budget
        assert context.tokens <= context.budget, (where, context.tokens, context.budget)
        # 1. a request every provider accepts
        if context.messages:
            try:
                check_request(context.messages)
            except AssertionError as err:
                raise AssertionError(
                    f"{where}\n{err}\nmessages: {json.dumps(context.messages)[:4_000]}"
                ) from None
        # 4. the caller's changes never show up in the next context
        kept = copy.deepcopy(context.messages)
        for message in context.messages:
            if "content" in message:
                message["content"] = MUTATED
            if message.get("tool_calls"):
                first = message["tool_calls"][0]
                first["function"]["arguments"] = MUTATED
                first["function"]["name"] = MUTATED
                first["id"] = MUTATED
                message["tool_calls"].append({"id": MUTATED})
            message["role"] = MUTATED
        context.messages.append({"role": "user", "content": MUTATED})
        again = self.session.build_context()
        assert MUTATED not in json.dumps(again.messages), (
            f"{where}: a caller's change leaked into the next context: "
            f"{[m for m in again.messages if MUTATED in json.dumps(m)]}"
        )
        # A background round commits from a worker thread: compare when none did.
        if self.view_version() == version:
            assert again.messages == kept, f"{where}: the next context differs"

    def view_version(self) -> tuple[int, tuple[tuple[str, str, int], ...]]:
        """What a background round changes: the view, then the arena's entries (the
        ledger's text is written after the round's commit, in its own transaction)."""
        session = self.session
        entries = tuple((entry.zone, entry.key, entry.seq) for entry in session.arena.entries())
        return int(session.store.view_stats(session.id)["version"]), entries

    async def check_hard_budget(self, where: str) -> None:
        """3. After background compaction finished: within the hard budget, or stalled
        for a reason the session's state bears out."""
        session = self.session
        view, usable = session.view_tokens(), session.budget.usable
        if view <= usable:
            return
        result = session.compaction.last_result or self.earlier_result
        floor = self.floor(result)
        state = (
            f"view {view} > usable {usable} (soft {session.budget.soft_limit}); what no "
            f"compaction can take out: {floor}"
        )
        assert result is not None, f"{where}: {state}; and no compaction ever ran"
        assert result.status == "stalled" and result.reason, (
            f"{where}: {state}; the last compaction says {result.status}: {result.reason!r}"
        )
        STALLS.append(f"{where}: {state}; {result.reason}")
        self.counts["stalls over the hard budget"] += 1
        if "max_rounds" in result.reason:
            self.counts["stalls at max_rounds"] += 1
            return
        # "No progress" explains itself only if no compaction could fit the view: the
        # protected tail, the newest user message and the messages with a call still
        # open stay as they are; the rest shrinks to one summary of the smallest size,
        # unless the last round found it could not shrink it (see floor()).
        assert floor["total"] > usable, (
            f"{where}: stalled although compaction could bring the view within budget; "
            f"{state}; {result.reason}"
        )

    def floor(self, result: CompactionResult | None) -> dict[str, int]:
        """The tokens of the view no compaction can remove, by cause (see the core's
        ``plan::span_indices`` and the engine's rounds)."""
        session = self.session
        compaction = session.config.compaction
        items = session.store.view_items(session.id)
        tail_tokens = compaction.tail_tokens or max(1, session.budget.soft_limit // 4)
        start, tokens, messages, users = len(items), 0, 0, 0
        for index in range(len(items) - 1, -1, -1):
            item = items[index]
            if item["kind"] == "summary":
                break
            full = messages >= compaction.tail_messages or tokens + item["tokens"] > tail_tokens
            if messages > 0 and full:
                break
            tokens, messages, start = tokens + item["tokens"], messages + 1, index
            if item["role"] == "user":
                users += 1
                if users == compaction.protect_user_turns:
                    break
        instruction = max(
            (index for index, item in enumerate(items) if item["role"] == "user"), default=-1
        )
        unfinished = {
            message.seq
            for message in session.history()
            if any(
                isinstance(part, ToolPart) and part.status in ("pending", "running")
                for part in message.parts
            )
        }
        floor = Counter[str]()
        for index, item in enumerate(items):
            if item["kind"] == "summary":
                floor["summaries"] += item["tokens"]
                floor["live summaries"] += 1
            elif index >= start:
                floor["tail"] += item["tokens"]
            elif index == instruction:
                floor["newest user message"] += item["tokens"]
            elif item["seq"] in unfinished:
                floor["calls still open"] += item["tokens"]
            else:
                floor["compactable"] += item["tokens"]
        # The smallest a summary gets in the view, and what the last round said it
        # could not shrink.
        smallest = MIN_SUMMARY_TOKENS + SUMMARY_FRAMING_TOKENS
        # What the last round found holds for the view it judged, not for one changed
        # since (by turns recorded during the round, or calls finished after it).
        judged = re.search(r"the view holds (\d+) tokens", result.reason if result else "")
        fresh = judged is not None and int(judged[1]) == session.view_tokens()
        attempts = " ".join(result.attempts) if fresh and result is not None else ""
        span_stuck = floor["compactable"] <= smallest or "tokens of messages; not committed" in (
            attempts
        )
        leaf = 0 if span_stuck else 1
        condense_stuck = floor["live summaries"] + leaf < 2 or "summaries of" in attempts
        total = floor["tail"] + floor["newest user message"] + floor["calls still open"]
        if span_stuck and condense_stuck:
            total += floor["compactable"] + floor["summaries"]
        elif span_stuck:
            total += floor["compactable"] + min(floor["summaries"], smallest)
        elif condense_stuck:
            total += floor["summaries"] + smallest
        else:
            total += min(floor["summaries"] + floor["compactable"], smallest)
        return {**floor, "total": total}

    def summarise(self) -> None:
        for name, count in self.counts.items():
            COVERAGE[name] += count
        COVERAGE["examples"] += 1
        COVERAGE["examples with a summarising model"] += self.scenario.model_summariser
        COVERAGE["examples with a system prompt"] += self.scenario.system_prompt is not None


@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    # Shrinking these sessions takes minutes; a failure names its step and prints the
    # whole scenario, which replays with Runner (see the test below).
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenario=scenarios())
def test_every_assembled_context_is_a_request_every_provider_accepts(
    scenario: Scenario, llm_server: LocalLLMServer
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        runner = Runner(scenario, llm_server, Path(tmp) / "lossless.db")
        anyio.run(runner.run)
    for name, count in runner.counts.items():
        event(f"{name}: {'1' if count == 1 else '2+'}")


def test_finishing_a_call_never_leaves_the_view_over_the_hard_budget(
    llm_server: LocalLLMServer,
) -> None:
    """The generated sessions' step that overflows the window through ``update_tool``
    alone, pinned: a call recorded running, some turns, then its 6,000-character output
    arrives. After ``wait_for_pending()`` the view must fit the usable budget (or the
    last compaction must have stalled for a reason the state bears out)."""
    steps: tuple[Step, ...] = (
        Say("user", (Text("prose", 200),)),
        Calls(None, (Call("bash", "fresh", "object", 0, "running", False),)),
        *(Say(role, (Text("prose", 600),)) for role in ("user", "assistant") * 2),
        Finish(0, "completed", 6_000, False),
        Wait(),
    )
    scenario = Scenario(3_000, 1_000, 1_000, False, None, 1, steps)
    with tempfile.TemporaryDirectory() as tmp:
        anyio.run(Runner(scenario, llm_server, Path(tmp) / "lossless.db").run)
