"""Text that the fictional tools print: file listings, pytest runs, grep hits, diffs.

Sizes are budgeted so that a "large" output is 2-8 KB and a "small" one stays well
under 2 KB; the benchmarks rely on that split.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

from lossless.demo._repo import NUMBER_COLUMN, Repo, SourceFile, plural
from lossless.demo._vocab import CURRENCIES, DOMAIN_NOUNS, DOMAINS, MODULE_KINDS

LARGE_MIN = 2048
LARGE_MAX = 8192
SMALL_MAX = 1800
# Budget for a large output; the floor and ceiling leave room for one more line.
_LARGE_TARGET = (2300, 7600)
_WIDTH = 80


@dataclass(frozen=True, slots=True)
class Failure:
    """One failing test: where it lives, what it raised, and the error lines."""

    file: SourceFile
    test: str
    error_type: str
    error_lines: tuple[str, ...]
    frame: tuple[str, int, str] | None  # (path, line number, code) of a deeper frame

    @property
    def node_id(self) -> str:
        """The pytest node id of the test."""
        return f"{self.file.path}::{self.test}"

    @property
    def headline(self) -> str:
        """``ErrorType: first line`` as the short summary prints it."""
        return f"{self.error_type}: {self.error_lines[0]}"


@dataclass(frozen=True, slots=True)
class PytestRun:
    """A rendered pytest run and its counts."""

    text: str
    passed: int
    failed: int


def rule(title: str = "", char: str = "=") -> str:
    """A pytest section rule: ``===== title =====`` padded to 80 columns."""
    if not title:
        return char * _WIDTH
    side = max(3, (_WIDTH - len(title) - 2) // 2)
    line = f"{char * side} {title} {char * side}"
    return line + char * (_WIDTH - len(line)) if len(line) < _WIDTH else line


def render_read(file: SourceFile, limit: int = LARGE_MAX - 200) -> str:
    """``read_file`` output: numbered lines, cut with a note past ``limit`` characters."""
    out: list[str] = []
    size = 0
    for number, line in enumerate(file.lines, 1):
        row = f"{number:>{NUMBER_COLUMN - 1}}\t{line}"
        if size + len(row) + 1 > limit:
            out.append(f"... [{len(file.lines) - number + 1} more lines not shown]")
            break
        out.append(row)
        size += len(row) + 1
    return "\n".join(out)


def make_failure(
    rng: random.Random, file: SourceFile, test: str, module: SourceFile, fn: str
) -> Failure:
    """Pick a plausible error for ``test``, sometimes raised from inside ``fn``."""
    noun = DOMAIN_NOUNS[file.domain]
    cents = rng.randint(100, 99_999)
    got, want = f"{cents // 100}.{cents % 100:02d}", f"{(cents + 1) // 100}.{(cents + 1) % 100:02d}"
    options: list[tuple[str, tuple[str, ...]]] = [
        ("AssertionError", (f"assert Decimal('{got}') == Decimal('{want}')",)),
        ("TypeError", ("unsupported operand type(s) for +: 'decimal.Decimal' and 'float'",)),
        ("AttributeError", ("'NoneType' object has no attribute 'currency'",)),
        ("KeyError", (f"'{rng.choice(CURRENCIES)}'",)),
        (
            "payhub.core.errors.UpstreamTimeout",
            (f"{noun} upstream did not answer within {rng.choice((2.5, 5.0, 10.0))}s",),
        ),
        (
            "sqlalchemy.exc.IntegrityError",
            (
                "(psycopg.errors.UniqueViolation) duplicate key value violates unique "
                f'constraint "{plural(noun)}_idempotency_key_key"',
                f"DETAIL:  Key (idempotency_key)=(idem-{rng.getrandbits(32):08x}) already exists.",
            ),
        ),
        ("decimal.InvalidOperation", ("[<class 'decimal.InvalidOperation'>]",)),
        ("AssertionError", (f"assert {rng.randint(3, 6)} == {rng.randint(1, 2)}",)),
    ]
    error_type, error_lines = rng.choice(options)
    frame = None
    if module.def_line(fn) and rng.random() < 0.6:
        first = module.first_statement(module.def_line(fn))
        body = min(first + rng.randint(0, 3), module.body_end(first) - 1)
        frame = (module.path, body + 1, f"{fn}: {module.lines[body].strip()}")
    return Failure(file, test, error_type, error_lines, frame)


def _render_failure(failure: Failure) -> list[str]:
    """The FAILURES section entry: test source with the failing line marked, then errors."""
    file = failure.file
    start = file.def_line(failure.test)
    end = file.body_end(start)
    out = [rule(failure.test, "_"), ""]
    out += [f"    {line}" for line in file.lines[start : end - 1]]
    out.append(f">   {file.lines[end - 1]}")
    if failure.frame is None:
        out += [f"E       {line}" for line in failure.error_lines]
        out += ["", f"{file.path}:{end}: {failure.error_type.rsplit('.', 1)[-1]}"]
        return out
    path, number, code = failure.frame
    function, _, statement = code.partition(": ")
    out += ["", f"{file.path}:{end}: ", "_ " * 39 + "_", ""]
    out += [f"{path}:{number}: in {function}", f"    {statement}"]
    out += [f"E   {line}" for line in failure.error_lines]
    out += ["", f"{path}:{number}: {failure.error_type.rsplit('.', 1)[-1]}"]
    return out


def _header(collected: int, selected: int | None = None) -> list[str]:
    """Session header; ``selected`` is set when ``-k`` deselected part of the collection."""
    unit = "item" if collected == 1 else "items"
    counts = f"collected {collected} {unit}"
    if selected is not None and selected < collected:
        counts += f" / {collected - selected} deselected / {selected} selected"
    return [
        rule("test session starts"),
        "platform linux -- Python 3.11.9, pytest-8.2.1, pluggy-1.5.0 -- "
        "/srv/payhub/.venv/bin/python",
        "cachedir: .pytest_cache",
        "rootdir: /srv/payhub",
        "configfile: pyproject.toml",
        "plugins: anyio-4.4.0, cov-5.0.0, timeout-2.3.1, xdist-3.6.1",
        counts,
        "",
    ]


def _footer(failures: list[Failure], passed: int, seconds: float) -> list[str]:
    out: list[str] = []
    if failures:
        out.append(rule("short test summary info"))
        out += [f"FAILED {f.node_id} - {f.headline}"[:160] for f in failures]
    counts = f"{len(failures)} failed, {passed} passed" if failures else f"{passed} passed"
    out.append(rule(f"{counts} in {seconds:.2f}s"))
    return out


def _test_files(repo: Repo, first: SourceFile) -> Iterable[SourceFile]:
    """Test files in collection order: the one under work first, then its component."""
    yield first
    domain = first.domain
    for candidate in (domain, *(d for d in DOMAINS if d != domain)):
        for kind in MODULE_KINDS:
            file = repo.tests(candidate, kind)
            if file is not first:
                yield file


def render_pytest(
    rng: random.Random,
    repo: Repo,
    first: SourceFile,
    failures: list[Failure],
    *,
    keyword: str | None = None,
) -> PytestRun:
    """A verbose pytest run.

    Without ``keyword`` the run is large: ``first``, then the rest of its component, cut
    where a 2-8 KB budget runs out. With ``keyword`` it is small: only the tests of
    ``first`` whose name contains it, as ``-k`` would select them.
    """
    failing = {f.node_id for f in failures}
    details: list[str] = []
    if failures:
        details.append(rule("FAILURES"))
        for failure in failures:
            details += _render_failure(failure)
    collected: int | None = None
    if keyword is None:
        budget = rng.randint(*_LARGE_TARGET)
        budget -= sum(len(line) + 1 for line in (*_header(0), *details, *_footer(failures, 0, 0)))
        ids = _pick_tests(_test_files(repo, first), failures, budget - 40)
    else:
        ids = [f"{first.path}::{name}" for name, _ in first.functions if keyword in name]
        ids += [node for node in sorted(failing) if node not in ids]
        collected = len(first.functions)
    total = len(ids)
    rows = []
    for number, node in enumerate(ids, 1):
        verdict = "FAILED" if node in failing else "PASSED"
        row = f"{node} {verdict}"
        rows.append(row + " " * _pad(row) + f"[{number * 100 // total:>3}%]")
    passed = total - len(failures)
    seconds = rng.uniform(0.8, 1.6) + total * rng.uniform(0.01, 0.05)
    header = _header(total) if collected is None else _header(collected, total)
    lines = [*header, *rows, "", *details, *_footer(failures, passed, seconds)]
    return PytestRun("\n".join(lines), passed, len(failures))


def _pad(row: str) -> int:
    """Spaces before the progress column: right-aligned at 80, at least one."""
    return max(1, _WIDTH - 6 - len(row))


def _row_cost(node: str) -> int:
    """Characters one verbose result row takes, newline included."""
    row = f"{node} PASSED"
    return len(row) + _pad(row) + 7


def _pick_tests(files: Iterable[SourceFile], failures: list[Failure], budget: int) -> list[str]:
    """Node ids to list, file by file, while the budget lasts.

    Failing tests are always listed, even when the budget would have cut them off.
    """
    must = {f.node_id for f in failures}
    ids: list[str] = []
    for file in files:
        for name, _ in file.functions:
            node = f"{file.path}::{name}"
            if budget < _row_cost(node) and len(ids) > len(must):
                return ids + [n for n in sorted(must) if n not in ids]
            ids.append(node)
            budget -= _row_cost(node)
    return ids


def render_grep(
    repo: Repo, domain: str, pattern: str, *, limit: int, rng: random.Random
) -> tuple[str, int]:
    """``grep -rn`` output over a component's source and tests; returns (text, hit count)."""
    needle = pattern.lower()
    kinds = list(MODULE_KINDS)
    rng.shuffle(kinds)
    rows: list[str] = []
    size = 0
    for kind in kinds:
        for file in (repo.source(domain, kind), repo.tests(domain, kind)):
            for number, line in enumerate(file.lines, 1):
                if needle not in line.lower():
                    continue
                row = f"{file.path}:{number}:{line}"
                if size + len(row) + 1 > limit:
                    return "\n".join(rows), len(rows)
                rows.append(row)
                size += len(row) + 1
    return "\n".join(rows), len(rows)


def render_listing(rng: random.Random, domain: str) -> str:
    """``ls -l`` of a component directory."""
    rows = [f"total {rng.randint(40, 160)}"]
    for name in ("__init__.py", *(f"{kind}.py" for kind in sorted(MODULE_KINDS))):
        size = rng.randint(120, 7400) if name != "__init__.py" else rng.randint(0, 300)
        day = rng.randint(1, 28)
        rows.append(
            f"-rw-r--r-- 1 dev dev {size:>6} Mar {day:>2} 1{rng.randint(0, 9)}:0{day % 6} {name}"
        )
    return "\n".join(rows)


def unified_diff(file: SourceFile, start: int, removed: int, added: list[str]) -> str:
    """A one-hunk unified diff replacing ``removed`` lines at ``start`` with ``added``."""
    before = max(0, start - 3)
    after = min(len(file.lines), start + removed + 3)
    old_len = after - before
    new_len = old_len - removed + len(added)
    hunk = [f"--- a/{file.path}", f"+++ b/{file.path}"]
    hunk.append(f"@@ -{before + 1},{old_len} +{before + 1},{new_len} @@")
    hunk += [f" {line}" for line in file.lines[before:start]]
    hunk += [f"-{line}" for line in file.lines[start : start + removed]]
    hunk += [f"+{line}" for line in added]
    hunk += [f" {line}" for line in file.lines[start + removed : after]]
    return "\n".join(hunk) + "\n"


def apply_lines(file: SourceFile, start: int, removed: int, added: list[str]) -> None:
    """Apply the edit ``unified_diff`` describes and shift later ``def`` indexes."""
    file.lines[start : start + removed] = added
    delta = len(added) - removed
    file.functions = [
        (name, index + delta if index > start else index) for name, index in file.functions
    ]
