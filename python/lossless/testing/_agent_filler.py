"""The work around the canaries: an agent session in Chat Completions messages, as
agents record it. A user instruction, then many assistant steps, each one or more
tool calls (parallel ones too) answered by sizeable outputs (source files, test
runs, grep hits, logs, JSON), a progress report, and now and then a user remark.

Numbers here are written without thousands separators and dates lie in 2024, so the
filler never holds a value the canary generator makes (it checks anyway).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

__all__ = ["Step", "agent_steps"]

#: One recorded step: a user message, or an assistant message and its tool results.
Step = list[dict[str, Any]]

_WORDS = [
    "order", "invoice", "refund", "payment", "ledger", "account", "balance", "batch",
    "queue", "worker", "retry", "timeout", "cache", "index", "schema", "migration",
    "report", "export", "config", "client", "server", "request", "response", "token",
    "session", "handler", "parser", "record", "field", "value", "status", "error",
    "result", "module", "test"
]  # fmt: skip
_VERBS = [
    "load", "parse", "build", "apply", "settle", "render", "fetch", "sync", "check",
    "merge", "validate", "flush"
]  # fmt: skip
_AREAS = ("orders", "billing", "ledger", "reports", "api", "auth", "export", "jobs")
_FILES = ("service", "models", "client", "views", "utils", "tasks", "handlers")
_TASKS = (
    "Fix the failing tests in src/{area}/ and keep the public interface unchanged.",
    "Refactor src/{area}/{file}.py so the retry logic lives in one place.",
    "Find out why the {area} export job times out and fix it.",
    "Add pagination to the {area} endpoints and cover it with tests.",
    "Upgrade the {area} module to the new client and remove the old shim.",
    "Profile the {area} handlers and make the slow path faster.",
)
_REMARKS = (
    "How is it going? Give me a short status when you reach a good point.",
    "Looks reasonable so far, carry on.",
    "Can you also double-check the error handling in src/{area}/{file}.py?",
    "Don't forget the changelog entry for this.",
    "Please keep the diff small where you can.",
)
_NOTES = (
    "Let me look at the {area} module first.",
    "The failure comes from the {word} {word2} path; checking the caller.",
    "Running the tests again after that change.",
    "Searching for other uses of {fn} before I change its signature.",
    "That output confirms the {word} handling is wrong.",
)
_REPORTS = (
    "Done with this part: the {area} tests pass and the {word} handling is simpler.",
    "Progress: {fn} is fixed and covered; two {word} cases still need a look.",
    "Finished. The {area} change is in place and the suite is green.",
)


def _path(rng: random.Random) -> str:
    return f"src/{rng.choice(_AREAS)}/{rng.choice(_FILES)}.py"


def _fn(rng: random.Random) -> str:
    return f"{rng.choice(_VERBS)}_{rng.choice(_WORDS)}"


def _fill(template: str, rng: random.Random) -> str:
    return template.format(
        area=rng.choice(_AREAS),
        file=rng.choice(_FILES),
        word=rng.choice(_WORDS),
        word2=rng.choice(_WORDS),
        fn=_fn(rng),
    )


def _code(rng: random.Random, lines: int) -> str:
    out: list[str] = []
    while len(out) < lines:
        out.append(f"def {_fn(rng)}({rng.choice(_WORDS)}, {rng.choice(_WORDS)}=None):")
        for _ in range(rng.randint(2, 6)):
            out.append(f"    {rng.choice(_WORDS)} = {_fn(rng)}({rng.choice(_WORDS)})")
        out.append(f"    return {rng.choice(_WORDS)}")
        out.append("")
    return "\n".join(out)


def _tests(rng: random.Random, lines: int) -> str:
    out = [f"tests/test_{rng.choice(_WORDS)}.py::test_{_fn(rng)} " for _ in range(lines)]
    out = [line + rng.choice(("PASSED", "PASSED", "PASSED", "FAILED", "SKIPPED")) for line in out]
    out.append(f"{rng.randint(1, 400)} passed, {rng.randint(0, 9)} failed in {rng.randint(2, 90)}s")
    return "\n".join(out)


def _grep(rng: random.Random, lines: int) -> str:
    return "\n".join(
        f"{_path(rng)}:{rng.randint(1, 900)}:    {_fn(rng)}({rng.choice(_WORDS)})"
        for _ in range(lines)
    )


def _log(rng: random.Random, lines: int) -> str:
    levels = ("INFO", "INFO", "INFO", "WARN", "ERROR", "DEBUG")
    return "\n".join(
        f"2024-0{rng.randint(1, 9)}-{rng.randint(10, 28)}T{rng.randint(10, 23)}:"
        f"{rng.randint(10, 59)}:{rng.randint(10, 59)}Z {rng.choice(levels)} "
        f"worker-{rng.randint(1, 8)} {rng.choice(_VERBS)} {rng.choice(_WORDS)} "
        f"batch {rng.randint(100, 9999)} took {rng.randint(3, 900)}ms"
        for _ in range(lines)
    )


def _json(rng: random.Random, lines: int) -> str:
    records = [
        {
            "id": rng.randint(100000, 999999),
            "status": rng.choice(("open", "settled", "failed", "pending")),
            "kind": rng.choice(_WORDS),
            "amount_cents": rng.randint(100, 999999),
            "attempts": rng.randint(0, 5),
        }
        for _ in range(max(1, lines // 7))
    ]
    return json.dumps({"results": records, "next": None}, indent=2)


def _listing(rng: random.Random, lines: int) -> str:
    return "\n".join(
        f"{rng.randint(100, 99999):>7}  src/{rng.choice(_AREAS)}/{rng.choice(_WORDS)}_"
        f"{rng.choice(_FILES)}.py"
        for _ in range(lines)
    )


_TOOLS: dict[str, tuple[Callable[[random.Random, int], str], Callable[[random.Random], str]]] = {
    "read_file": (_code, lambda r: json.dumps({"path": _path(r)})),
    "run_tests": (_tests, lambda r: json.dumps({"target": f"tests/test_{r.choice(_WORDS)}.py"})),
    "grep": (_grep, lambda r: json.dumps({"pattern": _fn(r)})),
    "bash": (_log, lambda r: json.dumps({"command": f"tail -n 200 logs/{r.choice(_AREAS)}.log"})),
    "http_get": (_json, lambda r: json.dumps({"url": f"/internal/{r.choice(_AREAS)}?page=2"})),
    "list_dir": (_listing, lambda r: json.dumps({"path": f"src/{r.choice(_AREAS)}"})),
}


def _assistant_step(rng: random.Random, call_no: int) -> Step:
    calls, results = [], []
    # Mostly one call, sometimes two or three at once, as parallel tool calls go.
    for offset in range(rng.choice((1, 1, 1, 2, 2, 3))):
        name = rng.choice(sorted(_TOOLS))
        body, arguments = _TOOLS[name]
        call_id = f"call_{call_no + offset:06d}"
        calls.append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": arguments(rng)},
            }
        )
        output = body(rng, rng.randint(12, 70))
        results.append({"role": "tool", "tool_call_id": call_id, "content": output})
    note = _fill(rng.choice(_NOTES), rng) if rng.random() < 0.35 else None
    return [{"role": "assistant", "content": note, "tool_calls": calls}, *results]


def agent_steps(rng: random.Random, messages: int) -> list[Step]:
    """Steps of an agent session of at least ``messages`` messages: tasks, each a
    user instruction, 6 to 14 tool steps with a remark now and then, and a report."""
    steps: list[Step] = []
    count = call_no = 0
    while count < messages:
        steps.append([{"role": "user", "content": _fill(rng.choice(_TASKS), rng)}])
        for _ in range(rng.randint(6, 14)):
            if rng.random() < 0.2:
                steps.append([{"role": "user", "content": _fill(rng.choice(_REMARKS), rng)}])
            steps.append(_assistant_step(rng, call_no))
            call_no += len(steps[-1]) - 1
        steps.append([{"role": "assistant", "content": _fill(rng.choice(_REPORTS), rng)}])
        count = sum(len(step) for step in steps)
    return steps
