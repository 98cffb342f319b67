"""Values a planted canary carries: random, in formats an agent session holds (codes,
ids, amounts, dates, hosts, paths, names), so a scorer can match them exactly and
no reader can guess one it was not shown.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from typing import Literal

__all__ = ["ValueKind", "fresh_value"]

ValueKind = Literal[
    "account",
    "amount",
    "branch",
    "channel",
    "code",
    "codename",
    "date",
    "email",
    "endpoint",
    "host",
    "library",
    "megabytes",
    "milliseconds",
    "name",
    "path",
    "percent",
    "rate",
    "region",
    "suffix",
    "tag",
    "ticket",
    "version",
    "words",
    "workers",
]

# Syllables make words that read as names but belong to no language, so a value is
# never a word the filler or the templates could hold by chance.
_SYLLABLES = [
    "bra", "cor", "dun", "fel", "gav", "hol", "jix", "kem", "lor", "mav", "nep", "orb",
    "pel", "quo", "ras", "sil", "tov", "ump", "vex", "wal", "yor", "zen", "tir", "mok",
    "dra", "vel", "sab", "tun", "rik", "ost"
]  # fmt: skip
_FIRST_NAMES = [
    "Mara", "Ilse", "Tobin", "Rhea", "Anouk", "Casimir", "Dagny", "Emeric", "Fenna",
    "Gideon", "Halla", "Ivo", "Jorun", "Kasia", "Leander", "Maren", "Niamh", "Oskar",
    "Priya", "Quentin", "Rosalind", "Soren", "Thea", "Ulric"
]  # fmt: skip
_TICKET_PREFIXES = ("OPS", "CHG", "SEC", "MIG", "REL", "INC", "PLAT")
_TLDS = ("io", "dev", "net", "co")


def _word(rng: random.Random, syllables: int = 2) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(syllables))


def _letters(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_uppercase) for _ in range(n))


def _thousands(rng: random.Random, low: int, high: int) -> str:
    # A comma separator: the filler never writes one, so the number is the canary's.
    return f"{rng.randint(low, high):,}"


_MAKERS: dict[ValueKind, Callable[[random.Random], str]] = {
    "account": lambda r: f"{r.randint(1000, 9999)}-{r.randint(1000, 9999)}-{r.randint(1000, 9999)}",
    "amount": lambda r: f"${_thousands(r, 10_000, 99_999)}",
    "branch": lambda r: f"release/{_word(r)}-{r.randint(10, 99)}",
    "channel": lambda r: f"#ops-{_word(r)}-{r.randint(10, 99)}",
    "code": lambda r: f"{_letters(r, 2)}{r.randint(1, 9)}-{r.randint(1000, 9999)}-{_letters(r, 2)}",
    "codename": lambda r: f"{_word(r)}-{_word(r)}-{r.randint(10, 99)}",
    "date": lambda r: f"{r.randint(2031, 2039)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}",
    "email": lambda r: f"{_word(r)}.{_word(r)}@{_word(r)}.{r.choice(_TLDS)}",
    "endpoint": lambda r: f"/v{r.randint(3, 9)}/{_word(r)}-{_word(r)}",
    "host": lambda r: f"{_word(r)}-db-{r.randint(1000, 9999)}.internal",
    "library": lambda r: f"{_word(r, 3)} {r.randint(2, 9)}.{r.randint(10, 40)}.{r.randint(1, 9)}",
    "megabytes": lambda r: f"{_thousands(r, 1_000, 9_999)} MB",
    "milliseconds": lambda r: f"{r.randint(101, 999)} ms",
    "name": lambda r: f"{r.choice(_FIRST_NAMES)} {_word(r, 3).capitalize()}",
    "path": lambda r: f"/srv/{_word(r)}/{_word(r)}-{r.randint(1000, 9999)}",
    "percent": lambda r: f"0.{r.randint(11, 99)}%",
    "rate": lambda r: f"{_thousands(r, 1_000, 9_999)} requests per hour",
    "region": lambda r: f"{_word(r)}-north-{r.randint(2, 9)}",
    "suffix": lambda r: f"_{_word(r)}{r.randint(10, 99)}_test.py",
    "tag": lambda r: f"[{_letters(r, 2)}-{r.randint(10, 99)}]",
    "ticket": lambda r: f"{r.choice(_TICKET_PREFIXES)}-{r.randint(10_000, 99_999)}",
    "version": lambda r: f"v{r.randint(5, 9)}.{r.randint(10, 60)}.{r.randint(1, 9)}",
    "words": lambda r: f"{r.randint(41, 199)} words",
    "workers": lambda r: f"{r.randint(11, 97)} parallel workers",
}


def fresh_value(kind: ValueKind, rng: random.Random, taken: set[str], haystack: str) -> str:
    """A value of ``kind`` neither in ``taken`` nor anywhere in ``haystack`` (the
    session's other text), added to ``taken``: each value is then found in a request
    only where it was planted."""
    while True:
        value = _MAKERS[kind](rng)
        if value not in taken and value not in haystack:
            taken.add(value)
            return value
