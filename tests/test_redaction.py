"""Redaction at ingest through the public API: secrets in messages, tool input,
output and errors, captions and the arena are replaced by markers before anything
is written, reported in the result and an event, and absent from the search index
and the bytes of the file; a session may turn it off or add rules of its own."""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import TEST_MODEL
from lossless import Session, ToolPart, grep
from lossless.config import Config, RedactionConfig
from lossless.errors import InvalidInputError
from lossless.events import EventName
from lossless.testing.conformance import check_request

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

MARKER = re.compile(r"\[redacted:([a-z0-9-]+):([0-9a-f]{8})\]")


ALPHANUMERIC = string.ascii_letters + string.digits


def _random(rng: random.Random, length: int, alphabet: str = ALPHANUMERIC) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


def _github_token(rng: random.Random) -> str:
    return "ghp_" + _random(rng, 36)


def _openai_key(rng: random.Random) -> str:
    return "sk-proj-" + _random(rng, 58) + "T3Blbk" + "FJ" + _random(rng, 58)


def _private_key(rng: random.Random) -> str:
    body = "\n".join(_random(rng, 64, ALPHANUMERIC + "+/") for _ in range(6))
    return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----"


def _texts(session: Session) -> str:
    return json.dumps([str(message.parts) for message in session.history()])


def _file_bytes(db: Path | str) -> bytes:
    return b"".join(
        Path(f"{db}{suffix}").read_bytes()
        for suffix in ("", "-wal")
        if Path(f"{db}{suffix}").exists()
    )


async def test_secrets_are_replaced_before_they_are_stored(
    config_for: Callable[..., Config], db: Path | str
) -> None:
    rng = random.Random(31)
    token, key, block = _github_token(rng), _openai_key(rng), _private_key(rng)
    seen: list[Any] = []
    async with Session.open(model=TEST_MODEL, db=db, config=config_for()) as s:
        s.events.subscribe(seen.append, EventName.SECRETS_REDACTED)
        said = await s.record("user", f"Push with {token} please.\n{block}")
        assert said.redacted == {"github-token": 1, "private-key": 1}
        call = ToolPart(
            "run",
            "c1",
            {"cmd": f"curl -H 'Authorization: token {token}' https://api.example.com"},
            output=f"OPENAI_API_KEY={key}\nready",
        )
        ran = await s.record("assistant", [call])
        assert set(ran.redacted) >= {"github-token"} and sum(ran.redacted.values()) >= 2
        await s.record("assistant", [ToolPart("deploy", "c2", {}, status="pending")])
        await s.update_tool("c2", status="error", output="failed", error=f"bad token {token}")
        stored = _texts(s)
        for secret in (token, key, block, key[:40]):
            assert secret not in stored
        markers = MARKER.findall(stored)
        assert {kind for kind, _ in markers} >= {"github-token", "private-key"}
        fingerprints = {fp for kind, fp in markers if kind == "github-token"}
        assert len(fingerprints) == 1, "one secret, one marker"
        history = s.history()
        tool = next(p for m in history for p in m.parts if isinstance(p, ToolPart))
        args = tool.input if isinstance(tool.input, str) else json.dumps(tool.input)
        assert json.loads(args)["cmd"].startswith("curl -H 'Authorization: token [redacted:")
        assert "ready" in str(tool.output)
        context = s.build_context()
        assert token not in json.dumps(context.messages)
        check_request(context.messages)
        for entry in s.arena.entries():
            assert token not in entry.text
        # The variable's name stays (it says what was there); its value does not.
        assert not grep(token, db=s) and grep("OPENAI_API_KEY", db=s)
        events = [e for e in s.store.events(s.id) if e.name == "secrets_redacted"]
        assert len(events) == 3 and all(token not in e.payload_json for e in events)
        assert next(e.payload["kinds"] for e in seen) == {"github-token": 1, "private-key": 1}
    if isinstance(db, Path):
        data = _file_bytes(db)
        for secret in (token, key):
            assert secret.encode() not in data


async def test_a_session_may_turn_redaction_off_or_add_its_own_rules(
    config_for: Callable[..., Config], db: Path | str
) -> None:
    rng = random.Random(32)
    token = _github_token(rng)
    off = config_for(redaction=RedactionConfig(enabled=False))
    async with Session.open(model=TEST_MODEL, db=db, config=off) as s:
        result = await s.record("user", f"keep {token} as it is")
        assert result.redacted == {} and token in _texts(s)
    own = config_for(redaction=RedactionConfig(rules=(("employee-id", r"\b(EMP-\d{6})\b"),)))
    async with Session.open(model=TEST_MODEL, db=db, config=own) as s:
        result = await s.record("user", f"EMP-123456 pushed with {token}")
        assert result.redacted == {"employee-id": 1, "github-token": 1}
        assert "EMP-123456" not in _texts(s)
    only_own = config_for(
        redaction=RedactionConfig(defaults=False, rules=(("employee-id", r"EMP-\d{6}"),))
    )
    async with Session.open(model=TEST_MODEL, db=db, config=only_own) as s:
        result = await s.record("user", f"EMP-654321 pushed with {token}")
        assert result.redacted == {"employee-id": 1} and token in _texts(s)
    bad = config_for(redaction=RedactionConfig(rules=(("Bad Kind", "x"),)))
    with pytest.raises(InvalidInputError, match=r"redaction\.rules"):
        async with Session.open(model=TEST_MODEL, db=db, config=bad):
            pass


async def test_ordinary_text_is_stored_byte_for_byte(
    config_for: Callable[..., Config], db: Path | str
) -> None:
    texts = [
        "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed the payout client",
        "request id 123e4567-e89b-12d3-a456-426614174000, digest sha256:" + "ab" * 32,
        'config = {"max_tokens": 4096, "password": "changeme", "api_key": "${API_KEY}"}',
        "The keeper logs every ship; the token bucket refills each second.",
    ]
    async with Session.open(model=TEST_MODEL, db=db, config=config_for()) as s:
        for text in texts:
            result = await s.record("user", text)
            assert result.redacted == {}, text
        stored = [str(m.parts[0].text) for m in s.history()]  # type: ignore[union-attr]
        assert stored == texts


async def test_a_large_file_is_stored_with_its_secrets_replaced_and_its_lines_in_place(
    config_for: Callable[..., Config], db: Path | str, tmp_path: Path
) -> None:
    rng = random.Random(33)
    token = _github_token(rng)
    lines = [f"value_{n} = {n}  # plain line of the settings module" for n in range(4_000)]
    lines[2_500] = f'GITHUB_TOKEN = "{token}"'
    path = tmp_path / "settings.py"
    path.write_text("\n".join(lines) + "\n")
    async with Session.open(model=TEST_MODEL, db=db, config=config_for()) as s:
        added = await s.add_file(path)
        assert added.stored and added.part is not None
        file_id = added.part.file_id
        whole = await s.read_file(file_id)
        assert token not in whole and "[redacted:github-token:" in whole
        assert whole.count("\n") == len(lines)
        line = await s.read_file(file_id, lines=(2_501, 2_501))
        assert line.startswith('GITHUB_TOKEN = "[redacted:github-token:')
        assert await s.read_file(file_id, lines=(2_502, 2_502)) == lines[2_501] + "\n"
