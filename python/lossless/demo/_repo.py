"""A fictional ``payhub`` repository whose files are generated on first read.

Each file gets its own random stream seeded from the trajectory seed and its path, so
its content does not depend on the order in which the story happens to open files.
Patches edit the cached lines, so a file read after an edit shows the edit.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from string import Template

from lossless.demo._vocab import (
    ACTIONS,
    CURRENCIES,
    DOMAIN_NOUNS,
    DOMAINS,
    MODULE_BLURBS,
    NAME_SUFFIXES,
    QUALIFIERS,
    SERVICE,
    STATUSES,
    VERBS,
)

# Rendered ``read_file`` output adds a line-number column of this width plus a tab.
NUMBER_COLUMN = 7
# Bounds on a freshly generated file, measured as its numbered rendering, so that a
# read of it lands in the 2-8 KB range the benchmarks expect of a large tool output.
MIN_RENDERED = 2300
MAX_RENDERED = 7000
HARD_MAX_RENDERED = 7600


@dataclass(slots=True)
class SourceFile:
    """One generated file. ``functions`` lists (name, index of its ``def`` line)."""

    path: str
    domain: str
    lines: list[str]
    functions: list[tuple[str, int]]

    def def_line(self, name: str) -> int:
        """0-based index of the ``def`` line of ``name``, or 0 when it is not defined."""
        for function, index in self.functions:
            if function == name:
                return index
        return 0

    def first_statement(self, def_index: int) -> int:
        """Index of the first statement after the docstring of the ``def`` at ``def_index``."""
        for index in range(def_index, min(def_index + 6, len(self.lines))):
            if self.lines[index].lstrip().startswith('"""'):
                return index + 1
        return def_index + 1

    def body_end(self, start: int) -> int:
        """Index one past the last line of the block whose ``def`` is at ``start``."""
        end = start + 1
        while end < len(self.lines) and self.lines[end] != "":
            end += 1
        return end


def camel(noun: str) -> str:
    """``settlement`` -> ``Settlement``, ``fx_rate`` -> ``FxRate``."""
    return "".join(word.capitalize() for word in noun.split("_"))


def plural(noun: str) -> str:
    """``entry`` -> ``entries``, ``match`` -> ``matches``, ``refund`` -> ``refunds``."""
    if noun.endswith("y"):
        return noun[:-1] + "ies"
    if noun.endswith(("ch", "sh", "s", "x")):
        return noun + "es"
    return noun + "s"


def source_path(domain: str, kind: str) -> str:
    """Path of a service module."""
    return f"{SERVICE}/{domain}/{kind}.py"


def path_of_tests(domain: str, kind: str) -> str:
    """Path of the test module that covers a service module."""
    return f"tests/{domain}/test_{kind}.py"


_MODULE_HEADER = Template('''"""${Noun} ${kind} for the payhub ${domain} component.

${blurb}
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from payhub.core.clock import utcnow
from payhub.core.errors import CurrencyMismatchError, UpstreamError, UpstreamTimeout
from payhub.core.money import MINOR_UNITS, SUPPORTED_CURRENCIES
from payhub.${other}.models import ${Other}

logger = logging.getLogger(__name__)

MAX_${NOUN}_RETRIES = ${n}
DEFAULT_TIMEOUT_S = ${timeout}
''')

# Function blocks of a service module. ``$fn`` is the defined name, always on the first
# line that starts with ``def`` or ``async def``.
_FUNCTION_BLOCKS: tuple[Template, ...] = (
    Template('''def ${fn}(${noun}: ${Noun}, *, currency: str = "${cur}") -> Decimal:
    """Sum the ${noun} lines and round half-even to the currency's minor units."""
    if ${noun}.currency != currency:
        raise CurrencyMismatchError(${noun}.currency, currency)
    total = sum((line.amount for line in ${noun}.lines), Decimal("0"))
    exponent = Decimal(1).scaleb(-MINOR_UNITS.get(currency, 2))
    return total.quantize(exponent, rounding=ROUND_HALF_EVEN)
'''),
    Template('''async def ${fn}(self, ${noun}_id: str) -> ${Noun}:
    """Ask the upstream to ${action} a ${noun}; transient failures are retried."""
    for attempt in range(1, MAX_${NOUN}_RETRIES + 1):
        try:
            response = await self._http.post(
                f"/v${ver}/${nouns}/{${noun}_id}/${action}", timeout=DEFAULT_TIMEOUT_S
            )
        except UpstreamTimeout:
            logger.warning("${fn}: attempt %d timed out", attempt)
            continue
        if response.status_code == ${code}:
            return ${Noun}.from_payload(response.json())
        raise UpstreamError(response.status_code, response.text)
    raise UpstreamTimeout(f"${fn}: gave up after {MAX_${NOUN}_RETRIES} attempts")
'''),
    Template('''def ${fn}(
    session: Session, ${noun}_id: int, *, for_update: bool = False
) -> ${Noun} | None:
    """Load one ${noun} row, optionally locking it until the transaction ends."""
    query = select(${Noun}Row).where(${Noun}Row.id == ${noun}_id)
    if for_update:
        query = query.with_for_update(nowait=${flag})
    row = session.execute(query).scalar_one_or_none()
    return None if row is None else ${Noun}.from_row(row)
'''),
    Template('''def ${fn}(payload: dict[str, Any]) -> list[str]:
    """Return what is wrong with a ${noun} payload; an empty list means valid."""
    problems: list[str] = []
    for key in ("id", "account_id", "amount", "currency"):
        if key not in payload:
            problems.append(f"missing field: {key}")
    amount = payload.get("amount")
    if amount is not None and Decimal(str(amount)) <= 0:
        problems.append("amount must be positive")
    if payload.get("currency") not in SUPPORTED_CURRENCIES:
        problems.append(f"unsupported currency: {payload.get('currency')!r}")
    return problems
'''),
    Template('''def ${fn}(
    batch: Sequence[${Noun}], *, chunk_size: int = ${size}
) -> Iterator[list[${Noun}]]:
    """Yield ${nouns} in chunks so one slow upstream call cannot stall the batch."""
    chunk: list[${Noun}] = []
    for item in batch:
        if item.status in ("${status}", "${status2}"):
            continue
        chunk.append(item)
        if len(chunk) >= chunk_size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
'''),
    Template('''@router.post("/v${ver}/${nouns}/{${noun}_id}/${action}")
async def ${fn}(
    ${noun}_id: str, body: ${Noun}Request, ctx: RequestContext = Depends(context)
) -> ${Noun}Response:
    """HTTP entry point: ${action} a ${noun} on behalf of the caller."""
    ctx.require_scope("${domain}:write")
    async with ctx.unit_of_work() as uow:
        item = await uow.${domain}.get(${noun}_id)
        if item is None:
            raise HTTPException(status_code=404, detail="${noun} not found")
        result = await ${helper}(item, body.amount, idempotency_key=ctx.idempotency_key)
        await uow.commit()
    return ${Noun}Response.model_validate(result)
'''),
    Template('''def ${fn}(
    ${nouns}: Sequence[${Noun}], rates: Mapping[str, Decimal]
) -> dict[str, Decimal]:
    """Total ${nouns} per account in the account's own currency."""
    totals: dict[str, Decimal] = {}
    for item in ${nouns}:
        rate = rates.get(item.currency)
        if rate is None:
            logger.error("${fn}: no rate for %s, skipping %s", item.currency, item.id)
            continue
        converted = (item.amount * rate).quantize(Decimal("0.0001"))
        totals[item.account_id] = totals.get(item.account_id, Decimal("0")) + converted
    return totals
'''),
    Template('''def ${fn}(${noun}: ${Noun}, now: datetime | None = None) -> bool:
    """Whether a ${noun} is past its hold window and may be ${status}."""
    now = now or utcnow()
    if ${noun}.status not in ("${status2}", "pending"):
        return False
    held_for = now - ${noun}.created_at
    return held_for.total_seconds() >= ${hold} * 3600
'''),
)

_CLASS_BLOCK = Template('''@dataclass(frozen=True)
class ${Type}:
    """A ${noun} as the ${domain} component sees it."""

    id: str
    account_id: str
    amount: Decimal
    currency: str = "${cur}"
    status: str = "${status}"
    created_at: datetime = field(default_factory=utcnow)
    metadata: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> ${Type}:
        return cls(
            id=payload["id"],
            account_id=payload["account_id"],
            amount=Decimal(str(payload["amount"])),
            currency=payload.get("currency", "${cur}"),
            status=payload.get("status", "${status}"),
        )
''')

_TEST_HEADER = Template('''"""Tests for payhub.${domain}.${kind}."""

from __future__ import annotations

from decimal import Decimal

import pytest

from payhub.${domain}.${kind} import ${imports}
from tests.factories import ${Noun}Factory


@pytest.fixture
def ${noun}_factory() -> ${Noun}Factory:
    return ${Noun}Factory(seed=${n})
''')

# Test blocks: the last line of each is the assertion a failure points at.
_TEST_BLOCKS: tuple[Template, ...] = (
    Template("""def ${test}(${noun}_factory: ${Noun}Factory) -> None:
    item = ${noun}_factory.build(amount=Decimal("${amount}"), currency="${cur}")
    result = ${fn}(item)
    assert result == Decimal("${expected}")
"""),
    Template("""@pytest.mark.parametrize("currency", ["${cur}", "${cur2}"])
def ${test}(${noun}_factory: ${Noun}Factory, currency: str) -> None:
    item = ${noun}_factory.build(currency=currency, status="${status}")
    with pytest.raises(CurrencyMismatchError):
        ${fn}(item)
"""),
    Template("""async def ${test}(
    fake_upstream: FakeUpstream, ${noun}_factory: ${Noun}Factory
) -> None:
    fake_upstream.fail_next(${n}, status=503)
    item = ${noun}_factory.build()
    result = await ${fn}(item.id)
    assert result.status == "${status}"
    assert fake_upstream.calls == ${calls}
"""),
    Template("""def ${test}(db_session: Session, ${noun}_factory: ${Noun}Factory) -> None:
    rows = [${noun}_factory.persist(db_session) for _ in range(${n})]
    found = ${fn}(db_session, rows[0].id)
    assert found is not None
    assert found.id == rows[0].id
"""),
    Template("""def ${test}(frozen_clock: FrozenClock, ${noun}_factory: ${Noun}Factory) -> None:
    frozen_clock.set("2024-${month}-${day}T23:59:59+00:00")
    item = ${noun}_factory.build(created_at=frozen_clock.now(), status="${status}")
    assert ${fn}(item) is ${flag}
"""),
)


class Repo:
    """Lazily generated files of the fictional service, cached by path."""

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._files: dict[str, SourceFile] = {}

    def source(self, domain: str, kind: str) -> SourceFile:
        """The service module ``payhub/<domain>/<kind>.py``."""
        path = source_path(domain, kind)
        cached = self._files.get(path)
        if cached is None:
            cached = _render_module(self._rng(path), path, domain, kind)
            self._files[path] = cached
        return cached

    def tests(self, domain: str, kind: str) -> SourceFile:
        """The test module covering ``payhub/<domain>/<kind>.py``."""
        path = path_of_tests(domain, kind)
        cached = self._files.get(path)
        if cached is None:
            module = self.source(domain, kind)
            cached = _render_tests(self._rng(path), path, domain, kind, module)
            self._files[path] = cached
        return cached

    def _rng(self, path: str) -> random.Random:
        # A string seed is hashed with SHA-512 by ``random``, so it is stable across runs
        # and independent of PYTHONHASHSEED.
        return random.Random(f"{self._seed}:{path}")


def _slots(rng: random.Random, domain: str) -> dict[str, str]:
    """Values shared by every block of one file."""
    noun = DOMAIN_NOUNS[domain]
    other = rng.choice([d for d in DOMAINS if d != domain])
    return {
        "noun": noun,
        "nouns": plural(noun),
        "Noun": camel(noun),
        "NOUN": noun.upper(),
        "domain": domain,
        "other": other,
        "Other": camel(DOMAIN_NOUNS[other]),
        "n": str(rng.randint(2, 7)),
        "timeout": f"{rng.choice((2.5, 5.0, 10.0, 15.0, 30.0))}",
        "blurb": rng.choice(MODULE_BLURBS),
    }


def _fresh_name(rng: random.Random, noun: str, taken: set[str]) -> str:
    """A function name not yet defined in the file."""
    while True:
        suffix = rng.choice(NAME_SUFFIXES)
        name = f"{rng.choice(VERBS)}_{noun}" + (f"_{suffix}" if suffix else "")
        if name not in taken:
            taken.add(name)
            return name


def _block_slots(rng: random.Random, base: dict[str, str], fn: str) -> dict[str, str]:
    """Per-block values: each function gets its own currency, status, numbers."""
    status, status2 = rng.sample(STATUSES, 2)
    return {
        **base,
        "fn": fn,
        "cur": rng.choice(CURRENCIES),
        "status": status,
        "status2": status2,
        "action": rng.choice(ACTIONS),
        "ver": str(rng.randint(1, 3)),
        "code": rng.choice(("200", "201", "202")),
        "flag": rng.choice(("True", "False")),
        "size": str(rng.choice((50, 100, 200, 250, 500))),
        "hold": str(rng.choice((24, 48, 72, 168))),
        "helper": f"{rng.choice(VERBS)}_{base['noun']}",
        "Type": base["Noun"] + rng.choice(("", "Line", "Batch", "Snapshot", "Summary")),
    }


def _def_offset(block: str) -> int:
    """Line offset of the ``def`` within a block (decorators come first)."""
    for offset, line in enumerate(block.split("\n")):
        if line.startswith(("def ", "async def ")):
            return offset
    return 0


def _rendered(lines: Sequence[str]) -> int:
    """Size of ``lines`` as ``read_file`` prints them."""
    return sum(len(line) + NUMBER_COLUMN + 1 for line in lines)


def _grow(
    rng: random.Random, lines: list[str], make_block: Callable[[], tuple[str, str]]
) -> list[tuple[str, int]]:
    """Append blocks until the file reaches a random size within the rendered bounds.

    ``make_block`` returns (defined name, block text). Returns the (name, def index) pairs.
    """
    defined: list[tuple[str, int]] = []
    target = rng.randint(MIN_RENDERED, MAX_RENDERED)
    size = _rendered(lines)
    while size < target:
        name, block = make_block()
        block_lines = ["", "", *block.rstrip("\n").split("\n")]
        grown = _rendered(block_lines)
        if size + grown > HARD_MAX_RENDERED and size >= MIN_RENDERED:
            break
        defined.append((name, len(lines) + 2 + _def_offset(block)))
        lines.extend(block_lines)
        size += grown
    return defined


def _render_module(rng: random.Random, path: str, domain: str, kind: str) -> SourceFile:
    """Generate a service module of a size between the rendered bounds."""
    base = _slots(rng, domain)
    lines = _MODULE_HEADER.substitute(base, kind=kind).rstrip("\n").split("\n")
    if rng.random() < 0.5:
        lines.extend(("", ""))
        lines.extend(_CLASS_BLOCK.substitute(_block_slots(rng, base, "")).rstrip("\n").split("\n"))
    taken: set[str] = set()

    def make_block() -> tuple[str, str]:
        fn = _fresh_name(rng, base["noun"], taken)
        return fn, rng.choice(_FUNCTION_BLOCKS).substitute(_block_slots(rng, base, fn))

    return SourceFile(path, domain, lines, _grow(rng, lines, make_block))


def _test_name(rng: random.Random, noun: str, taken: set[str]) -> str:
    """``test_<noun>_<qualifier>``, made unique within the file."""
    name = f"test_{noun}_{rng.choice(QUALIFIERS)}"
    while name in taken:
        name = f"test_{noun}_{rng.choice(QUALIFIERS)}_{rng.choice(VERBS)}"
    taken.add(name)
    return name


def _test_slots(rng: random.Random, base: dict[str, str], test: str, fn: str) -> dict[str, str]:
    """Values of one test function."""
    cur, cur2 = rng.sample(CURRENCIES, 2)
    cents = rng.randint(100, 999_999)
    retries = rng.randint(1, 3)
    return {
        **base,
        "test": test,
        "fn": fn,
        "cur": cur,
        "cur2": cur2,
        "amount": f"{cents // 1000}.{cents % 1000:03d}",
        "expected": f"{(cents + 5) // 1000}.{((cents + 5) % 1000) // 10:02d}",
        "status": rng.choice(STATUSES),
        "n": str(retries),
        "calls": str(retries + 1),
        "month": f"{rng.randint(1, 12):02d}",
        "day": f"{rng.randint(1, 28):02d}",
        "flag": rng.choice(("True", "False")),
    }


def _render_tests(
    rng: random.Random, path: str, domain: str, kind: str, module: SourceFile
) -> SourceFile:
    """Generate the test module for ``module``; every test calls one of its functions."""
    base = _slots(rng, domain)
    names = [name for name, _ in module.functions] or [f"build_{base['noun']}"]
    imported = ", ".join(sorted(names)[:4])
    if len(imported) > 50:
        # Wrapped the way a formatter would, to keep lines under 100 columns.
        imported = "(\n" + "".join(f"    {name},\n" for name in sorted(names)[:4]) + ")"
    lines = _TEST_HEADER.substitute(base, kind=kind, imports=imported).rstrip("\n").split("\n")
    taken: set[str] = set()

    def make_block() -> tuple[str, str]:
        test = _test_name(rng, base["noun"], taken)
        slots = _test_slots(rng, base, test, rng.choice(names))
        return test, rng.choice(_TEST_BLOCKS).substitute(slots)

    return SourceFile(path, domain, lines, _grow(rng, lines, make_block))


def new_test_block(rng: random.Random, domain: str, test: str, fn: str) -> list[str]:
    """Lines of a test added by an edit, in the same style as the generated ones."""
    base = _slots(rng, domain)
    block = rng.choice(_TEST_BLOCKS).substitute(_test_slots(rng, base, test, fn))
    return block.rstrip("\n").split("\n")
