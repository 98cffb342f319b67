"""Large files: inline below the threshold, else stored whole by content id; summaries
by type; read back byte for byte through the API, the agent tool and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import TEST_MODEL, run_python, sql_rows
from lossless import FileRefPart, TextPart
from lossless.cli import app
from lossless.config import CompactionConfig, Config, FilesConfig
from lossless.errors import (
    FileInputError,
    FileTooLargeError,
    InvalidInputError,
    MissingFileError,
    NotFoundError,
)
from lossless.files import LargeFileHandler
from lossless.session import Session
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

SOURCE = '''\
"""A ledger."""

import json
from pathlib import Path


class Ledger:
    """Holds entries."""

    def __init__(self) -> None:
        self.entries: list[int] = []

    def settle(self, amount: int) -> int:
        return sum(self.entries) + amount


def load(path: Path) -> Ledger:
    return Ledger()
'''


def big_python(tmp_path: Path, copies: int = 700) -> Path:
    """A Python file well over the 10,000-token threshold, its last line without a newline."""
    body = SOURCE + "".join(
        f"\n\ndef helper_{n}(value: int) -> int:\n    return value * {n} + len('{'x' * 40}')\n"
        for n in range(copies)
    )
    path = tmp_path / "ledger.py"
    path.write_text(body + "\nFINAL = 1")
    return path


def file_rows(db: Path | str) -> dict[str, int]:
    return {
        table: int(sql_rows(db, f"SELECT count(*) FROM {table}")[0][0])
        for table in ("file_refs", "file_contents", "file_chunks", "messages")
    }


async def test_a_large_file_is_stored_whole_and_read_back_byte_for_byte(
    tmp_path: Path, session: Session, db: Path
) -> None:
    path = big_python(tmp_path)
    original = path.read_bytes()
    result = await session.add_file(path)
    assert isinstance(result.part, FileRefPart) and result.stored and not result.inline
    file_id = result.part.file_id
    assert file_id.startswith("file_") and len(file_id) == 37
    assert result.token_count >= 10_000
    summary = result.part.summary
    assert result.part.file_type == "python"
    assert "L7-14 class Ledger" in summary and "L13-14 def settle" in summary
    assert "L3 import json" in summary
    assert (await session.read_file(file_id)).encode() == original
    assert (
        await session.read_file(file_id, lines=(7, 8))
        == 'class Ledger:\n    """Holds entries."""\n'
    )
    last_line = original.count(b"\n") + 1
    assert await session.read_file(file_id, lines=(last_line, last_line + 5)) == "FINAL = 1"
    stored = result.file
    assert stored is not None and stored.byte_count == len(original)
    assert stored.stored_bytes < len(original) / 3
    # The message holds the reference, not the content.
    [message] = session.history()
    assert message.parts == [result.part]
    # The same content again: the stored reference, not a second copy.
    again = await session.add_file(path, record=False)
    assert again.part == result.part and not again.stored
    assert file_rows(db)["file_refs"] == 1


async def test_a_file_under_the_threshold_goes_inline_and_nothing_is_stored(
    tmp_path: Path, session: Session, db: Path
) -> None:
    path = tmp_path / "small.py"
    path.write_text(SOURCE)
    result = await session.add_file(path)
    assert result.inline and isinstance(result.part, TextPart)
    assert SOURCE in result.part.text and str(path) in result.part.text
    assert file_rows(db)["file_refs"] == 0


async def test_a_file_id_survives_compaction_and_its_bytes_read_back_identical(
    tmp_path: Path, config_for: Any, db: Path
) -> None:
    config = config_for(compaction=CompactionConfig(output_budget=1_000, tail_messages=4))
    path = big_python(tmp_path)
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        file_id = (await session.add_file(path)).part.file_id
        for turn in range(30):
            await session.record("user", f"turn {turn}: " + "words of the turn " * 40)
            await session.record("assistant", f"reply {turn}: " + "an answer of sorts " * 40)
        assert (await session.compact()).status == "completed"
        leaves = [node for node in session.store.describe(session.id)]
        assert any(file_id in node["text"] for node in leaves)
        context = json.dumps(session.build_context().messages)
        assert file_id in context
        assert (await session.read_file(file_id)).encode() == path.read_bytes()


@pytest.mark.parametrize(
    ("name", "content", "file_type", "expected"),
    [
        (
            "data.json",
            json.dumps({"users": [1, 2], "name": "x"} | {f"k{i}": i for i in range(9)}),
            "json",
            ["top-level object, 11 keys:", "users: array (2 items)"],
        ),
        (
            "rows.json",
            json.dumps([{"id": i, "tag": "t"} for i in range(50)]),
            "json",
            ["top-level array of 50 items", "id: number", "tag: string"],
        ),
        ("bad.json", '{"open": [1, 2', "text", ["Not valid JSON", "first lines:"]),
        (
            "conf.yaml",
            "server:\n  port: 80\nusers:\n  - a\n  - b\n",
            "yaml",
            ["server: object (1 keys)", "users: array (2 items)"],
        ),
        ("bad.yaml", "a: [1, 2\nb: : :\n", "text", ["Not valid YAML"]),
        (
            "app.toml",
            'name = "x"\n[tool.ruff]\nline = 1\n[[bin]]\nn = 1\n',
            "toml",
            ["[tool] (1 keys)", "[tool.ruff] (1 keys)", "[[bin]] (1 entries)"],
        ),
        (
            "notes.md",
            "# Title\n\ntext\n\n## Part one\n\n### Detail\n\n## Part two\n",
            "markdown",
            ["L1 Title", "  L5 Part one", "    L7 Detail", "  L9 Part two"],
        ),
        (
            "table.csv",
            "id,name,score\n1,a,3\n2,b,4\n3,c,5\n",
            "csv",
            ["3 columns, 3 data rows", "  score"],
        ),
        ("table.tsv", "id\tname\n1\ta\n", "tsv", ["2 columns, 1 data rows"]),
        (
            "lib.rs",
            "use std::io;\nstruct Point { x: i32 }\n"
            "impl Point {\n    fn norm(&self) -> i32 { self.x }\n}\n",
            "rust",
            ["L1 use std::io;", "class Point", "def norm"],
        ),
        (
            "main.go",
            'package main\nimport "fmt"\nfunc main() { fmt.Println(1) }\n',
            "go",
            ['L2 "fmt"', "def main"],
        ),
        (
            "app.ts",
            "import { a } from './a';\ninterface Shape { n: number }\n"
            "function area(s: Shape) { return s.n }\n",
            "typescript",
            ["class Shape", "def area"],
        ),
        ("README", "plain words\nsecond line\n", "text", ["2 lines", "  plain words"]),
    ],
)
async def test_exploration_summaries_by_type(
    tmp_path: Path, db: Path, name: str, content: str, file_type: str, expected: list[str]
) -> None:
    path = tmp_path / name
    path.write_text(content)
    # A threshold of one token: every file is stored and summarised.
    handler = LargeFileHandler(db, config=FilesConfig(inline_threshold=1))
    result = await handler.handle(path)
    assert isinstance(result.part, FileRefPart)
    assert result.part.file_type == file_type, result.part.summary
    for line in expected:
        assert line in result.part.summary, result.part.summary
    assert await handler.read(result.part.file_id) == content


async def test_binary_and_undecodable_files_are_summarised_by_kind_and_kept_exactly(
    tmp_path: Path, db: Path
) -> None:
    png = tmp_path / "pixel.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    latin = tmp_path / "old.txt"
    latin.write_bytes("caf\u00e9 cr\u00e8me\n".encode("latin-1") * 10)
    handler = LargeFileHandler(db)
    for path, kind in ((png, "Portable Network Graphics"), (latin, "Not valid UTF-8")):
        result = await handler.handle(path)
        assert isinstance(result.part, FileRefPart) and result.part.file_type == "binary"
        assert (
            kind in result.part.summary and f"{path.stat().st_size:,} bytes" in result.part.summary
        )
        assert await handler.read_bytes(result.part.file_id) == path.read_bytes()
        with pytest.raises(InvalidInputError, match="binary"):
            await handler.read(result.part.file_id)


async def test_bad_paths_get_typed_errors_and_store_nothing(
    tmp_path: Path, config_for: Any, db: Path
) -> None:
    config: Config = config_for(files=FilesConfig(max_file_bytes=1_000))
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    large = tmp_path / "large.txt"
    large.write_bytes(b"x" * 1_001)
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        before = file_rows(db)
        with pytest.raises(MissingFileError, match="no such file") as missing:
            await session.add_file(tmp_path / "nowhere.txt")
        assert isinstance(missing.value, FileNotFoundError)
        with pytest.raises(FileInputError, match="directory"):
            await session.add_file(tmp_path)
        with pytest.raises(FileInputError, match="empty"):
            await session.add_file(empty)
        with pytest.raises(FileTooLargeError, match="max_file_bytes"):
            await session.add_file(large)
        with pytest.raises(InvalidInputError, match="path"):
            await session.add_file(12)  # type: ignore[arg-type]
        with pytest.raises(NotFoundError):
            await session.read_file("file_0123456789abcdef")
        with pytest.raises(InvalidInputError, match="lines"):
            await session.read_file("file_0123456789abcdef", lines=(3, 1))
        assert file_rows(db) == before


async def test_the_agent_reads_a_referenced_file_by_lines_through_its_tool(
    tmp_path: Path, server: LocalLLMServer, session: Session
) -> None:
    path = big_python(tmp_path)
    file_id = (await session.add_file(path)).part.file_id
    server.enqueue(
        Reply(
            tool_calls=[
                ToolCallSpec(
                    "lossless_read_file", {"file_id": file_id, "start_line": 7, "end_line": 9}
                )
            ]
        ),
        Reply(
            tool_calls=[ToolCallSpec("lossless_read_file", {"file_id": "file_00000000deadbeef"})]
        ),
        Reply(text="done"),
    )
    result = await session.send("what does the ledger hold?", tools="recall")
    assert result.text == "done"
    calls = [
        p
        for m in session.history()
        for p in m.parts
        if getattr(p, "name", "") == "lossless_read_file"
    ]
    answer = json.loads(calls[0].output or "")
    assert answer["text"] == 'class Ledger:\n    """Holds entries."""\n\n'
    assert (answer["first_line"], answer["last_line"], answer["next_line"]) == (7, 9, 10)
    assert calls[1].status == "error" and "no stored file" in (calls[1].error or "")
    tools = {tool["function"]["name"] for tool in server.requests[0]["tools"]}
    assert "lossless_read_file" in tools


async def test_the_cli_prints_a_stored_file_whole_by_lines_and_to_a_file(
    tmp_path: Path, db: Path
) -> None:
    path = big_python(tmp_path)
    file_id = (await LargeFileHandler(db).handle(path)).part.file_id
    runner = CliRunner()
    whole = runner.invoke(app, ["--db", str(db), "file", file_id])
    assert whole.exit_code == 0 and whole.stdout_bytes == path.read_bytes()
    some = runner.invoke(app, ["--db", str(db), "file", file_id, "--lines", "7:8"])
    assert some.stdout == 'class Ledger:\n    """Holds entries."""\n'
    info = runner.invoke(app, ["--db", str(db), "file", file_id, "--info"])
    assert "python" in info.stdout and "class Ledger" in info.stdout
    out = tmp_path / "copy.py"
    runner.invoke(app, ["--db", str(db), "file", file_id, "--out", str(out)])
    assert out.read_bytes() == path.read_bytes()
    unknown = runner.invoke(app, ["--db", str(db), "file", "file_00000000"])
    assert unknown.exit_code == 1 and "no file" in unknown.stderr
    bad = runner.invoke(app, ["--db", str(db), "file", file_id, "--lines", "9:2"])
    assert bad.exit_code == 1


def test_a_500_mb_file_is_hashed_and_stored_in_a_stream_with_bounded_memory(
    tmp_path: Path,
) -> None:
    # A sparse file: 500 MB of zeros that cost no disk. The child reports its peak
    # resident memory, which must stay far below the file's size.
    big = tmp_path / "big.bin"
    with big.open("wb") as stream:
        stream.truncate(500 * 1024**2)
    done = run_python(
        f"""
        import anyio, re
        from pathlib import Path
        from lossless.files import LargeFileHandler

        async def main():
            result = await LargeFileHandler({str(tmp_path / "big.db")!r}).handle({str(big)!r})
            print(result.part.file_id, result.file.byte_count, result.file.stored_bytes)
        anyio.run(main)
        # VmHWM: this program's peak (ru_maxrss would count the forking parent's).
        status = Path("/proc/self/status").read_text()
        print(int(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)) // 1024)
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    line, peak_mb = done.stdout.split("\n")[:2]
    file_id, size, stored = line.split()
    assert file_id.startswith("file_") and int(size) == 500 * 1024**2
    assert int(stored) < 1024**2
    assert int(peak_mb) < 250, f"peak resident memory {peak_mb} MB"
