"""Encryption at rest: a database written with a key holds no byte of what was said,
in its file, its write-ahead log or its shared memory, while open and after closing;
with the key everything reads back and searches; without it, or with another, the
error is typed and the file is left as it was."""

from __future__ import annotations

import base64
import hashlib
import random
import struct
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import TEST_MODEL, make_config
from lossless import MediaPart, Session, Store, TextPart, ToolPart
from lossless.cli import app
from lossless.encryption import KEY_ENV, KEY_FILE_ENV, encrypt_database, resolve_key
from lossless.errors import EncryptionKeyError, InvalidInputError, NotADatabaseError
from lossless.recall import grep
from lossless.testing import LocalLLMServer

pytestmark = pytest.mark.anyio

KEY = hashlib.sha256(b"lossless encryption test key").digest()
OTHER_KEY = hashlib.sha256(b"another key").digest()
# Words that occur nowhere else: whole, or as the first bytes the full-text index
# would keep of them.
PLANTED = "zephyrquokka marmalixtron"
WORDS = ("zephyrquokka", "marmalixtron", "zephyrqu", "marmalix")


@pytest.fixture(autouse=True)
def no_key_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.delenv(KEY_FILE_ENV, raising=False)


def png(seed: int) -> bytes:
    """A PNG of random pixels stored uncompressed: its pixel bytes appear as they are."""
    rng = random.Random(seed)
    rows = b"".join(b"\0" + rng.randbytes(16 * 3) for _ in range(16))

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 16, 16, 8, 2, 0, 0, 0)
    idat = zlib.compress(rows, 0)
    chunks = chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + chunks


IMAGE = png(7)
# 32 bytes from the middle of the image's pixels.
IMAGE_NEEDLE = IMAGE[200:232]


def needles() -> list[bytes]:
    return [PLANTED.encode(), *(word.encode() for word in WORDS), IMAGE_NEEDLE]


def raw_bytes(db: Path) -> dict[str, bytes]:
    """The database's files as they are on the disk now."""
    found = {}
    for suffix in ("", "-wal", "-shm"):
        path = Path(f"{db}{suffix}")
        if path.exists():
            found[path.name] = path.read_bytes()
    return found


def leaks(db: Path) -> list[str]:
    """Which planted texts occur byte for byte in which of the database's files."""
    return [
        f"{needle[:12]!r} in {name}"
        for name, content in raw_bytes(db).items()
        for needle in needles()
        if needle in content
    ]


async def plant(session: Session, tmp_path: Path) -> str:
    """A user message, a tool output, a small file (inlined), a large file (stored
    whole) and an image, each holding the planted text (or pixels); returns the
    stored file's id."""
    await session.record("user", f"Please remember {PLANTED} for the audit.")
    output = f"ledger line 1\nledger line 2: {PLANTED}\n"
    await session.record(
        "assistant",
        [
            TextPart("Reading the ledger."),
            ToolPart("read_file", "call_1", {"path": "ledger.txt"}, output=output),
        ],
    )
    small = tmp_path / "notes.txt"
    small.write_text(f"note: {PLANTED}\n")
    await session.add_file(small)
    large = tmp_path / "ledger.py"
    large.write_text(
        "".join(f"ENTRY_{i} = {i}  # settled {i}\n" for i in range(6_000)) + f"# {PLANTED}\n"
    )
    stored = await session.add_file(large)
    assert stored.stored and stored.file is not None
    await session.record("user", [TextPart("The screen now:"), MediaPart.image(IMAGE)])
    return stored.file.file_id


async def test_nothing_said_is_readable_in_the_files_without_the_key(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    db = tmp_path / "secret.db"
    config = make_config(server)
    async with Session.open(
        model=TEST_MODEL, db=db, config=config, encryption_key=lambda: KEY
    ) as session:
        file_id = await plant(session, tmp_path)
        assert raw_bytes(db).get("secret.db-wal")
        assert leaks(db) == []
        session_id = session.id
    assert leaks(db) == []
    assert not raw_bytes(db)["secret.db"].startswith(b"SQLite format 3")

    # With the key: the history, the files, the image and the search read back.
    async with Session.open(
        model=TEST_MODEL, db=db, session_id=session_id, encryption_key=KEY.hex()
    ) as session:
        history = session.history()
        assert PLANTED in str(history[0].parts[0])
        assert PLANTED in await session.read_file(file_id)
        [media_id] = [p.media_id for p in history[-1].parts if isinstance(p, MediaPart)]
        assert media_id is not None
        assert await session.read_media(media_id) == IMAGE
    hits = grep("marmalixtron", db=Store(db, encryption_key=KEY))
    assert len(hits) >= 3


async def test_the_same_session_in_a_plain_file_shows_what_the_key_hides(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    # The control of the test above: the same writes in the clear leave the
    # planted text in the files, so its absence there is the encryption's doing.
    db = tmp_path / "plain.db"
    async with Session.open(model=TEST_MODEL, db=db, config=make_config(server)) as session:
        await plant(session, tmp_path)
    assert len(leaks(db)) >= 4


async def test_a_wrong_key_and_no_key_are_typed_errors_and_touch_nothing(
    server: LocalLLMServer, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "secret.db"
    async with Session.open(
        model=TEST_MODEL, db=db, config=make_config(server), encryption_key=KEY
    ) as session:
        await session.record("user", PLANTED)
        session_id = session.id
    before = raw_bytes(db)
    shown = [KEY.hex(), KEY.hex().upper(), base64.b64encode(KEY).decode()]
    for key in (OTHER_KEY, None):
        with pytest.raises(EncryptionKeyError) as wrong:
            await Session.load(session_id, db=db, encryption_key=key)
        assert str(db) in str(wrong.value)
        assert isinstance(wrong.value, NotADatabaseError)
        assert not any(text in str(wrong.value) for text in shown)
        with pytest.raises(EncryptionKeyError):
            Store(db, read_only=True, encryption_key=key)
        with pytest.raises(EncryptionKeyError):
            grep("zephyrquokka", db=db)
    assert raw_bytes(db) == before
    # SQLCipher writes nothing of the failed attempts to the process's stderr.
    assert "hmac" not in capfd.readouterr().err


async def test_a_plain_database_opened_with_a_key_is_refused_and_kept(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    db = tmp_path / "plain.db"
    async with Session.open(model=TEST_MODEL, db=db, config=make_config(server)) as session:
        await session.record("user", "plain text")
        session_id = session.id
    before = raw_bytes(db)
    with pytest.raises(EncryptionKeyError, match="not encrypted"):
        await Session.load(session_id, db=db, encryption_key=KEY)
    assert raw_bytes(db) == before
    # Without a key it works as before.
    async with await Session.load(session_id, db=db) as session:
        assert len(session.history()) == 1


async def test_the_key_comes_from_the_environment_or_a_key_file(
    server: LocalLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "secret.db"
    monkeypatch.setenv(KEY_ENV, base64.b64encode(KEY).decode())
    async with Session.open(model=TEST_MODEL, db=db, config=make_config(server)) as session:
        await session.record("user", PLANTED)
        # A fork opens its own connections to the same file, with the same key.
        fork = await session.fork()
        async with fork:
            assert len(fork.history()) == 1
        session_id = session.id
    assert leaks(db) == []
    monkeypatch.delenv(KEY_ENV)
    key_file = tmp_path / "db.key"
    key_file.write_bytes(KEY)
    monkeypatch.setenv(KEY_FILE_ENV, str(key_file))
    async with await Session.load(session_id, db=db) as session:
        assert len(session.history()) == 1
    key_file.write_text(KEY.hex() + "\n")
    assert len(Store(db).history(session_id)) == 1
    monkeypatch.setenv(KEY_ENV, KEY.hex())
    with pytest.raises(InvalidInputError, match="both set"):
        Store(db)


def test_keys_that_are_not_keys_are_refused_without_showing_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert resolve_key(None) is None
    assert resolve_key(KEY) == KEY
    assert resolve_key(KEY.hex().upper()) == KEY
    assert resolve_key(base64.urlsafe_b64encode(KEY).decode().rstrip("=")) == KEY
    assert resolve_key(lambda: KEY.hex()) == KEY
    for bad in ("correct horse battery staple", KEY[:31], KEY.hex()[:-1] + "g", b"", 12):
        with pytest.raises(InvalidInputError, match="256-bit key") as refused:
            resolve_key(bad)  # type: ignore[arg-type]
        if isinstance(bad, str):
            assert bad not in str(refused.value)
    monkeypatch.setenv(KEY_FILE_ENV, str(tmp_path / "missing.key"))
    with pytest.raises(InvalidInputError, match=KEY_FILE_ENV):
        resolve_key()
    monkeypatch.setenv(KEY_FILE_ENV, "")
    monkeypatch.setenv(KEY_ENV, "open sesame 42")
    with pytest.raises(InvalidInputError, match=KEY_ENV) as refused:
        Store(tmp_path / "x.db")
    assert "sesame" not in str(refused.value)
    assert not (tmp_path / "x.db").exists()


def test_a_key_on_a_postgresql_url_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "postgresql://lossless:secret@127.0.0.1:1/agents"
    with pytest.raises(InvalidInputError, match=r"encryption_key: .*PostgreSQL") as refused:
        Store(url, encryption_key=KEY)
    assert "secret" not in str(refused.value)
    monkeypatch.setenv(KEY_ENV, KEY.hex())
    with pytest.raises(InvalidInputError, match=KEY_ENV):
        Store(url)


def test_a_plain_database_is_copied_into_an_encrypted_one(tmp_path: Path) -> None:
    plain, secret = tmp_path / "plain.db", tmp_path / "secret.db"
    store = Store(plain)
    session_id = store.create_session("gpt-4o")
    store.append(session_id, "user", f"Remember {PLANTED}.")
    store.native.close()
    encrypt_database(plain, secret, KEY)
    assert leaks(secret) == []
    copy = Store(secret, encryption_key=KEY)
    assert copy.history(session_id)[0].parts[0]["text"] == f"Remember {PLANTED}."
    assert len(copy.grep("zephyrquokka")) == 1
    with pytest.raises(InvalidInputError, match="already there"):
        encrypt_database(plain, secret, KEY)
    with pytest.raises(InvalidInputError, match="no key"):
        encrypt_database(plain, tmp_path / "other.db")


def test_the_command_line_takes_the_key_file(tmp_path: Path) -> None:
    plain, secret = tmp_path / "plain.db", tmp_path / "secret.db"
    store = Store(plain)
    store.append(store.create_session("gpt-4o"), "user", f"Remember {PLANTED}.")
    store.native.close()
    key_file = tmp_path / "db.key"
    key_file.write_text(base64.b64encode(KEY).decode())
    runner = CliRunner()
    env = {"COLUMNS": "200", "LOSSLESS_DB": None, KEY_ENV: None, KEY_FILE_ENV: None}
    common = ["--db", str(plain), "--key-file", str(key_file)]
    done = runner.invoke(app, [*common, "encrypt", str(secret)], env=env)
    assert done.exit_code == 0, done.output
    found = runner.invoke(
        app, ["--db", str(secret), "--key-file", str(key_file), "grep", "zephyrquokka"], env=env
    )
    assert found.exit_code == 0, found.output
    assert "1 hit" in found.output
    refused = runner.invoke(app, ["--db", str(secret), "grep", "zephyrquokka"], env=env)
    assert refused.exit_code == 1
    assert "without its key" in refused.output
    env_key = runner.invoke(app, ["--db", str(secret), "stats"], env={**env, KEY_ENV: KEY.hex()})
    assert env_key.exit_code == 0, env_key.output
