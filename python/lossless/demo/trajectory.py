"""A deterministic, realistic long coding-agent trajectory for the demo and benchmarks.

The story: a user hands an agent a series of tasks on ``payhub``, a fictional Python
payments service. For each task the agent explores the code (``read_file``, ``grep``,
``list_dir``), edits it (``apply_patch``), runs the tests (``run_tests``), sometimes
hits a failing tool, and wraps up with a summary. Users attach large files (CI logs,
exports), which appear as :class:`~lossless.parts.FileRefPart` and are cited by id later.

Everything is driven by one ``random.Random(seed)`` (plus per-file streams derived from
the seed), so a seed always yields the same trajectory. That is also why the module is
longer than most: the story's steps are one class drawing from that one stream, and the
order of their draws is what a seed's trajectory is, so they are read together.

At :data:`RECALL_TURN` the user states a constraint containing :data:`RECALL_FACT`; the
words of :data:`RECALL_QUERY` occur nowhere else, so a search for them must find exactly
that turn however much of the trajectory has been compacted away.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Literal

from lossless.demo import _prose as prose
from lossless.demo._attachments import ATTACHMENTS
from lossless.demo._outputs import (
    LARGE_MAX,
    LARGE_MIN,
    SMALL_MAX,
    Failure,
    apply_lines,
    make_failure,
    render_grep,
    render_listing,
    render_pytest,
    render_read,
    unified_diff,
)
from lossless.demo._repo import Repo, SourceFile, camel, new_test_block, plural
from lossless.demo._vocab import (
    CURRENCIES,
    DOMAIN_NOUNS,
    DOMAINS,
    MINOR_UNITS,
    MODULE_KINDS,
    QUALIFIERS,
)
from lossless.errors import InvalidInputError
from lossless.parts import FileRefPart, Part, TextPart, ToolPart

__all__ = [
    "RECALL_FACT",
    "RECALL_MESSAGE",
    "RECALL_QUERY",
    "RECALL_TURN",
    "Turn",
    "file_id_for",
    "generate_trajectory",
]

RECALL_TURN = 3
"""Index of the user message that states the constraint to be recalled."""

RECALL_FACT = "quartz-heron"
"""A distinctive substring of the recall message, found nowhere else."""

RECALL_QUERY = "quartz heron"
"""A full-text query that finds the recall message and nothing else."""

RECALL_MESSAGE = (
    "One constraint before you go further: do not touch payhub/legacy_billing/ at all, "
    "other teams still import it. For anything that needs the staging database: it "
    "listens on port 6543 and must be reached only through the pgbouncer alias "
    f"'{RECALL_FACT}', never the primary host directly."
)
"""The full text of the user message at :data:`RECALL_TURN`."""

# Out of every block of this many assistant messages, this many carry a 2-8 KB tool
# output. Stratifying instead of flipping a coin keeps the share near 30 % even in
# short trajectories.
_HEAVY_BLOCK = 10
_HEAVY_PER_BLOCK = 3
# Share of the remaining assistant messages that make a quick call with a small output.
_LIGHT_SHARE = 0.2

Phase = Literal["explore", "edit", "verify", "wrap"]
Weight = Literal["heavy", "light", "none"]


@dataclass(frozen=True)
class Turn:
    """One message of the trajectory. ``index`` counts messages from 1."""

    role: Literal["user", "assistant"]
    parts: tuple[Part, ...]
    index: int

    @property
    def text(self) -> str:
        """The message's text parts, joined."""
        return " ".join(p.text for p in self.parts if isinstance(p, TextPart)).strip()

    @property
    def answered_tools(self) -> list[ToolPart]:
        """The tool calls the message makes that have an output to replay."""
        return [p for p in self.parts if isinstance(p, ToolPart) and p.output is not None]


def file_id_for(path: str) -> str:
    """The content id of a referenced file: ``file_`` and 16 hex digits of its path hash."""
    return "file_" + hashlib.sha256(path.encode("ascii")).hexdigest()[:16]


def generate_trajectory(*, turns: int = 520, seed: int = 7) -> list[Turn]:
    """Generate ``turns`` messages alternating user/assistant, starting with the user.

    The same ``seed`` always gives an equal list; different seeds give different ones.
    """
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < 0:
        raise InvalidInputError(f"turns: expected a non-negative int, got {turns!r}")
    story = _Story(seed)
    return [story.turn(index) for index in range(1, turns + 1)]


@dataclass(slots=True)
class _Episode:
    """One task from request to wrap-up, and what has happened in it so far."""

    request: prose.Request
    slots: dict[str, str]
    module: SourceFile
    tests: SourceFile
    fn: str
    test: str
    steps: int
    failures: list[Failure]
    step: int = 0
    edits: int = 0
    passed: int = 0
    last_run: str = ""
    green: bool = False
    new_test: str = ""
    read: set[str] = field(default_factory=set)

    @property
    def done(self) -> bool:
        """Whether the wrap-up message has been produced."""
        return self.step >= self.steps

    def phase(self) -> Phase:
        """Where in the task the next assistant message stands."""
        if self.step >= self.steps - 1:
            return "wrap"
        progress = self.step / self.steps
        if progress < 0.4:
            return "explore"
        return "edit" if progress < 0.75 else "verify"


class _Story:
    """Produces the trajectory one message at a time."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.repo = Repo(seed)
        self.calls = 0
        self.refs: list[FileRefPart] = []
        self.observation = ""
        self.last_reflection = ""
        self.assistant_count = 0
        self.heavy_slots: set[int] = set()
        self.episode: _Episode | None = None

    def turn(self, index: int) -> Turn:
        """Message number ``index``: users speak on odd numbers, the agent on even."""
        if index % 2:
            return Turn("user", self._user(index), index)
        return Turn("assistant", self._assistant(index), index)

    # -- user messages -------------------------------------------------------------

    def _user(self, index: int) -> tuple[Part, ...]:
        if index == RECALL_TURN:
            return (TextPart(RECALL_MESSAGE),)
        episode = self.episode
        if episode is None or episode.done:
            return self._new_task(first=episode is None)
        nudges = prose.NUDGES
        if episode.failures and self.rng.random() < 0.3:
            nudges = prose.FAILING_NUDGES
        return (TextPart(prose.pick(self.rng, nudges, episode.slots)),)

    def _new_task(self, *, first: bool) -> tuple[Part, ...]:
        episode = self._start_episode()
        self.observation = ""  # what was seen in the previous task is not news any more
        text = prose.fill(episode.request.text, episode.slots)
        prefix = prose.OPENING if first else self.rng.choice(prose.NEXT_TASK)
        parts: list[Part] = []
        if not first and self.rng.random() < 0.3:
            ref = self._attachment(episode)
            text += " " + self.rng.choice(prose.ATTACHMENT_LINES[ref.file_type])
            parts.append(ref)
            self.observation = f"I went through the attachment ({ref.file_id}): {ref.summary}. "
        return (TextPart(prefix + text), *parts)

    def _start_episode(self) -> _Episode:
        rng = self.rng
        request = rng.choice(prose.REQUESTS)
        domain = rng.choice(DOMAINS)
        kind = request.module_kind or rng.choice(MODULE_KINDS)
        module = self.repo.source(domain, kind)
        tests = self.repo.tests(domain, kind)
        fn = rng.choice(module.functions)[0] if module.functions else f"build_{domain}"
        test = rng.choice(tests.functions)[0]
        slots = _episode_slots(rng, domain, kind, module, tests, fn, test)
        if request.key == "currency":
            slots["cur"] = rng.choice(sorted(MINOR_UNITS))
            slots["minor"] = str(MINOR_UNITS[slots["cur"]])
        slots["change"] = prose.fill(request.change, slots)
        failures = [make_failure(rng, tests, test, module, fn)] if request.breaks else []
        steps = rng.randint(3, 10)
        self.episode = _Episode(request, slots, module, tests, fn, test, steps, failures)
        return self.episode

    def _attachment(self, episode: _Episode) -> FileRefPart:
        """A large file the user attaches to a request, remembered for later citation."""
        build = self.rng.choice(ATTACHMENTS)
        path, kind, tokens, summary = build(self.rng, episode.slots)
        ref = FileRefPart(file_id_for(path), path, kind, tokens, summary)
        self.refs.append(ref)
        return ref

    # -- assistant messages ----------------------------------------------------------

    def _assistant(self, index: int) -> tuple[Part, ...]:
        episode = self.episode
        if episode is None:  # pragma: no cover - turn 1 always starts an episode
            raise AssertionError("an assistant message needs a task")
        weight = self._weight()
        phase = episode.phase()
        lead, self.observation = self.observation, ""
        if index == RECALL_TURN + 1:
            lead = "Noted, I'll respect that constraint throughout. " + lead
        if phase == "wrap":
            parts = self._wrap(episode, weight, lead)
        elif weight == "none":
            parts = [TextPart(lead + self._reflection(episode, phase))]
        else:
            parts = self._work(episode, phase, weight == "heavy", lead)
        episode.step += 1
        return tuple(parts)

    def _reflection(self, episode: _Episode, phase: Phase) -> str:
        """A text-only remark fitting the phase, never the same as the previous one."""
        options = [text for text in prose.REFLECTIONS[phase] if text != self.last_reflection]
        self.last_reflection = self.rng.choice(options)
        return prose.fill(self.last_reflection, episode.slots)

    def _weight(self) -> Weight:
        """Whether this assistant message gets a large output, a small call, or none."""
        position = self.assistant_count % _HEAVY_BLOCK
        if position == 0:
            chosen = self.rng.sample(range(_HEAVY_BLOCK), _HEAVY_PER_BLOCK)
            self.heavy_slots = set(chosen)
        self.assistant_count += 1
        if position in self.heavy_slots:
            return "heavy"
        return "light" if self.rng.random() < _LIGHT_SHARE else "none"

    def _work(self, episode: _Episode, phase: Phase, heavy: bool, lead: str) -> list[Part]:
        """A message with tool calls: intent text first, then the calls."""
        if phase == "explore":
            calls, intent = self._explore(episode, heavy)
        elif phase == "edit":
            calls, intent = self._edit(episode, heavy)
        else:
            calls, intent = self._verify(episode, heavy)
        if heavy and not any(_is_large(call) for call in calls):
            # Safety net: a heavy slot must carry one large output whatever happened.
            calls.append(self._run_tests(episode, large=True))
        parts: list[Part] = [TextPart(lead + intent), *calls]
        if heavy and phase == "verify" and self.rng.random() < 0.2:
            parts.append(self._saved_log(episode))
        return parts

    def _explore(self, episode: _Episode, heavy: bool) -> tuple[list[Part], str]:
        rng = self.rng
        slots = episode.slots
        calls: list[Part] = []
        if rng.random() < 0.15:
            calls.append(self._missing_file(episode))
        roll = rng.random()
        if not heavy:
            if roll < 0.45:
                call = self._grep(episode, episode.fn, large=False)
                return [*calls, call], self._intent("grep", slots, pattern=episode.fn)
            if roll < 0.75:
                return [*calls, self._list_dir(episode)], self._intent("list_dir", slots)
            return [self._missing_file(episode)], self._intent(
                "read_file", slots, target=slots["path"]
            )
        # Read what has not been read in this task yet; once both are known, search.
        unread = [f for f in (episode.module, episode.tests) if f.path not in episode.read]
        if unread and roll < 0.75:
            first = unread[0] if roll < 0.5 else unread[-1]
            calls.append(self._read(episode, first))
            if len(unread) == 2 and rng.random() < 0.3:
                calls.append(self._read(episode, unread[1] if first is unread[0] else unread[0]))
            tool = "read_file" if first is episode.module else "read_tests"
            return calls, self._intent(tool, slots, target=first.path)
        calls.append(self._grep(episode, slots["noun"], large=True))
        return calls, self._intent("grep", slots, pattern=slots["noun"])

    def _edit(self, episode: _Episode, heavy: bool) -> tuple[list[Part], str]:
        calls: list[Part] = []
        if self.rng.random() < 0.15:
            calls.append(self._failed_patch(episode))
            if not heavy:
                return calls, self._intent("apply_patch", episode.slots)
        patch = self._patch(episode)
        calls.append(patch)
        if heavy:
            calls.append(self._run_tests(episode, large=True))
        path = str(patch.input["path"]) if isinstance(patch.input, dict) else episode.module.path
        return calls, self._intent("apply_patch", episode.slots, path=path)

    def _verify(self, episode: _Episode, heavy: bool) -> tuple[list[Part], str]:
        target = f"tests/{episode.slots['domain']}"
        intent = self._intent("run_tests", episode.slots, target=target)
        if not heavy and self.rng.random() < 0.35:
            return [self._test_timeout(episode)], intent
        return [self._run_tests(episode, large=heavy)], intent

    def _wrap(self, episode: _Episode, weight: Weight, lead: str) -> list[Part]:
        """The closing summary, after a last test run when the slot calls for one."""
        calls: list[Part] = []
        if episode.failures or episode.edits == 0:
            # Never close a task that is still broken or untouched: land the change first.
            calls.append(self._patch(episode, final=True))
        if weight != "none" or calls or not episode.green:
            calls.append(self._run_tests(episode, large=weight == "heavy"))
        if weight == "heavy" and not any(_is_large(call) for call in calls):
            calls.append(self._run_tests(episode, large=True))
        if not calls:
            return [TextPart(lead + self._summary(episode))]
        opening = TextPart(lead + self.rng.choice(prose.WRAP_LEADS))
        return [opening, *calls, TextPart(self._summary(episode))]

    def _summary(self, episode: _Episode) -> str:
        rng = self.rng
        slots = dict(episode.slots)
        task = prose.fill(episode.request.text, slots)
        slots["task_short"] = task if len(task) < 90 else task[:87].rsplit(" ", 1)[0] + "..."
        if episode.new_test:
            slots["test_change"] = f"added {episode.new_test}"
        elif episode.request.breaks:
            slots["test_change"] = f"unchanged; {episode.test} passes now"
        else:
            slots["test_change"] = "unchanged; the existing tests cover it"
        slots["verification"] = f"{episode.passed} passed, 0 failed ({episode.last_run})."
        slots["mention"] = self._mention() if rng.random() < 0.4 else ""
        return prose.WRAP.safe_substitute(slots)

    def _mention(self) -> str:
        """A sentence citing an earlier referenced file by id, if there is one."""
        if not self.refs:
            return ""
        ref = self.rng.choice(self.refs)
        slots = {"file_id": ref.file_id, "summary": ref.summary}
        return prose.pick(self.rng, prose.REF_MENTIONS, slots)

    def _intent(self, tool: str, slots: dict[str, str], **extra: str) -> str:
        return prose.pick(self.rng, prose.INTENT[tool], {**slots, **extra})

    # -- tool calls ------------------------------------------------------------------

    def _call_id(self) -> str:
        self.calls += 1
        return f"call_{self.calls}"

    def _read(self, episode: _Episode, file: SourceFile) -> ToolPart:
        output = render_read(file)
        episode.read.add(file.path)
        fn = episode.fn
        if file.def_line(fn):
            insight = prose.pick(self.rng, prose.INSIGHTS, episode.slots)
            line = file.def_line(fn) + 1
            self.observation = (
                f"{file.path} is {len(file.lines)} lines; {fn} starts at line {line}. {insight} "
            )
        else:
            count = len(file.functions)
            self.observation = f"{file.path} has {count} tests; none of them covers this case yet. "
        return ToolPart("read_file", self._call_id(), {"path": file.path}, output)

    def _grep(self, episode: _Episode, pattern: str, *, large: bool) -> ToolPart:
        limit = self.rng.randint(2300, 7600) if large else self.rng.randint(300, SMALL_MAX)
        domain = episode.slots["domain"]
        output, hits = render_grep(self.repo, domain, pattern, limit=limit, rng=self.rng)
        self.observation = (
            f"grep finds {hits} lines matching '{pattern}' in payhub/{domain}/ and its tests. "
        )
        paths = [f"payhub/{domain}", f"tests/{domain}"]
        tool_input = {"pattern": pattern, "paths": paths, "ignore_case": large}
        return ToolPart("grep", self._call_id(), tool_input, output or "(no matches)")

    def _list_dir(self, episode: _Episode) -> ToolPart:
        domain = episode.slots["domain"]
        output = render_listing(self.rng, domain)
        self.observation = (
            f"payhub/{domain}/ has the usual layout; {episode.module.path} is the one to change. "
        )
        return ToolPart("list_dir", self._call_id(), {"path": f"payhub/{domain}"}, output)

    def _patch(self, episode: _Episode, *, final: bool = False) -> ToolPart:
        """Edit the module while it is broken or untouched, else add a regression test.

        ``final`` edits always fix the failure, so a task never closes broken.
        """
        rng = self.rng
        fixing = episode.failures or (episode.edits == 0 and episode.request.fix != "test")
        if fixing:
            file, start, removed, added = self._fix_edit(episode)
        else:
            file, start, removed, added = self._test_edit(episode)
        diff = unified_diff(file, start, removed, added)
        apply_lines(file, start, removed, added)
        if not fixing:
            # Registered only now so that applying the edit does not shift its index.
            file.functions.append((episode.new_test, start + 2))
        episode.edits += 1
        episode.green = False
        if episode.failures and (final or rng.random() < 0.75):
            episode.failures = []
        elif episode.failures:
            # The first attempt was not enough: the same test now fails differently.
            episode.failures = [
                make_failure(rng, episode.tests, episode.test, episode.module, episode.fn)
            ]
        self.observation = "The patch applied cleanly. "
        output = f"Success. Updated the following files:\nM {file.path}"
        return ToolPart("apply_patch", self._call_id(), {"path": file.path, "patch": diff}, output)

    def _fix_edit(self, episode: _Episode) -> tuple[SourceFile, int, int, list[str]]:
        file = episode.module
        start = file.first_statement(file.def_line(episode.fn))
        end = file.body_end(start)
        start = min(start + self.rng.randint(0, 2), end - 1)
        line = file.lines[start]
        indent = line[: len(line) - len(line.lstrip())]
        if episode.edits:
            # A second attempt adds to the first instead of replacing anything.
            snippet: tuple[str, ...] = (self.rng.choice(prose.FOLLOW_UPS),)
            removed = 0
        else:
            snippet = prose.FIX_SNIPPETS[episode.request.fix]
            removed = 0 if line.rstrip().endswith(":") else 1
        added = [indent + prose.fill(text, episode.slots) for text in snippet]
        return file, start, removed, added

    def _test_edit(self, episode: _Episode) -> tuple[SourceFile, int, int, list[str]]:
        file = episode.tests
        taken = {name for name, _ in file.functions}
        base = f"test_{episode.slots['noun']}_{episode.slots['qualifier']}"
        name = base if base not in taken else f"{base}_regression"
        while name in taken:
            name = f"{base}_{self.rng.randint(2, 99)}"
        block = new_test_block(self.rng, file.domain, name, episode.fn)
        start = len(file.lines)
        episode.new_test = name
        return file, start, 0, ["", "", *block]

    def _run_tests(self, episode: _Episode, *, large: bool) -> ToolPart:
        """Run the component's tests (large output) or a ``-k`` selection (small)."""
        domain = episode.slots["domain"]
        tests = episode.tests
        keyword = None if large else episode.test.removeprefix(f"test_{episode.slots['noun']}_")
        run = render_pytest(self.rng, self.repo, tests, episode.failures, keyword=keyword)
        episode.passed = run.passed
        episode.green = not run.failed
        episode.last_run = f"tests/{domain}" if large else f"{tests.path} -k {keyword}"
        if run.failed:
            headline = episode.failures[0].headline
            self.observation = (
                f"{run.failed} failed, {run.passed} passed: {episode.test} fails with {headline}. "
            )
        else:
            self.observation = (
                f"All {run.passed} selected tests pass. "
                if run.passed > 1
                else "The selected test passes. "
            )
        tool_input: dict[str, object] = {"target": f"tests/{domain}", "flags": ["-v"]}
        if keyword is not None:
            tool_input = {"target": tests.path, "flags": ["-v", "-k", keyword]}
        tool_input["timeout_s"] = 300
        return ToolPart("run_tests", self._call_id(), tool_input, run.text)

    def _saved_log(self, episode: _Episode) -> FileRefPart:
        """The unabridged log of a long run, kept out of the context and cited by id."""
        domain = episode.slots["domain"]
        path = f"artifacts/pytest/{domain}-run-{self.calls}.log"
        summary = f"full verbose pytest log for tests/{domain}, {episode.passed} passed"
        ref = FileRefPart(file_id_for(path), path, "log", self.rng.randint(9_000, 60_000), summary)
        self.refs.append(ref)
        self.observation = f"The unabridged log is saved as {ref.file_id}. "
        return ref

    # -- failing tool calls ----------------------------------------------------------

    def _missing_file(self, episode: _Episode) -> ToolPart:
        wrong = episode.module.path.replace(
            ".py", self.rng.choice(("_v2.py", "s.py", "/__init__.py"))
        )
        error = f"FileNotFoundError: [Errno 2] No such file or directory: '{wrong}'"
        self.observation = f"{wrong} does not exist; the code lives in {episode.module.path}. "
        return ToolPart("read_file", self._call_id(), {"path": wrong}, None, "error", error)

    def _failed_patch(self, episode: _Episode) -> ToolPart:
        file = episode.module
        line = file.def_line(episode.fn) + self.rng.randint(3, 9)
        error = f"patch does not apply: hunk #1 failed at {file.path}:{line} (context mismatch)"
        self.observation = "The first patch did not apply because the context was stale. "
        stale = f"--- a/{file.path}\n+++ b/{file.path}\n@@ -{line},3 +{line},4 @@\n"
        tool_input = {"path": file.path, "patch": stale}
        return ToolPart("apply_patch", self._call_id(), tool_input, None, "error", error)

    def _test_timeout(self, episode: _Episode) -> ToolPart:
        seconds = self.rng.choice((120, 300, 600))
        error = (
            f"TimeoutError: run_tests exceeded {seconds} s and was killed "
            f"(last output: {episode.tests.path}::{episode.test})"
        )
        self.observation = f"The test run timed out after {seconds} s; I'll narrow it down. "
        tool_input = {"target": f"tests/{episode.slots['domain']}", "timeout_s": seconds}
        return ToolPart("run_tests", self._call_id(), tool_input, None, "error", error)


def _episode_slots(
    rng: random.Random,
    domain: str,
    kind: str,
    module: SourceFile,
    tests: SourceFile,
    fn: str,
    test: str,
) -> dict[str, str]:
    """Placeholder values for every template used during one task."""
    noun = DOMAIN_NOUNS[domain]
    cur = rng.choice(CURRENCIES)
    return {
        "noun": noun,
        "nouns": plural(noun),
        "Noun": camel(noun),
        "domain": domain,
        "kind": kind,
        "path": module.path,
        "test_path": tests.path,
        "fn": fn,
        "test": test,
        "cur": cur,
        "minor": str(MINOR_UNITS.get(cur, 2)),
        "n": str(rng.randint(3, 6)),
        "size": str(rng.choice((500, 1000, 2000))),
        "qualifier": rng.choice(QUALIFIERS),
    }


def _is_large(part: Part) -> bool:
    output = part.output if isinstance(part, ToolPart) else None
    return output is not None and LARGE_MIN <= len(output) <= LARGE_MAX
