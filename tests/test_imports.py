"""``lossless.imports`` and ``lossless import``: Claude Code and Codex CLI
transcripts as sessions on a real SQLite file, each importable again without
storing anything twice."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from conftest import sql_rows
from lossless import ReasoningPart, Session, session_for_key
from lossless.cli import app
from lossless.errors import InvalidInputError, MissingFileError, TranscriptError
from lossless.imports import ImportProgress, ImportResult, import_claude_code, import_codex
from lossless.parts import MediaPart, TextPart, ToolPart
from lossless.testing.conformance import check_request

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

FIXTURES = Path(__file__).parent / "fixtures" / "imports"
CLAUDE_SID = "7c1e0f52-3a4d-4b8e-9f61-2d5a8c0b7e13"
CLAUDE_FILE = FIXTURES / "claude-code" / f"{CLAUDE_SID}.jsonl"
CLAUDE_KEY = f"claude-code:{CLAUDE_SID}"
CODEX_ID = "019a4c2e-8f7b-7d31-a5c0-3e9b1f6d2a48"
CODEX_FILE = (
    FIXTURES / "codex" / "2025" / "11" / "02" / f"rollout-2025-11-02T14-20-00-{CODEX_ID}.jsonl"
)
CODEX_KEY = f"codex:{CODEX_ID}"
OLD_CODEX_KEY = "codex:5f3b8a1c-2d4e-4f6a-9b8c-7d6e5f4a3b2c"
ENV = {"COLUMNS": "240", "LOSSLESS_DB": None}
runner = CliRunner()


def cli(db: Path, *args: str) -> Result:
    return runner.invoke(app, ["--db", str(db), *args], env=ENV)


def message_rows(db: Path) -> list[tuple[str, ...]]:
    return sql_rows(db, "SELECT session_id, seq, role FROM messages ORDER BY session_id, seq")


async def loaded(db: Path, key: str) -> Session:
    found = await session_for_key(db, key)
    assert found is not None, key
    return await Session.load(found, db=db)


def tools_of(session: Session) -> dict[str, ToolPart]:
    return {
        part.call_id: part
        for message in session.history()
        for part in message.parts
        if isinstance(part, ToolPart)
    }


def reasoning_of(session: Session) -> list[ReasoningPart]:
    return [
        part
        for message in session.history()
        for part in message.parts
        if isinstance(part, ReasoningPart)
    ]


def as_json(value: object) -> Any:
    """A stored part's JSON text (or mapping) read back."""
    return json.loads(value) if isinstance(value, str) else value


def write_lines(path: Path, lines: list[str], *, newline_at_end: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + ("\n" if newline_at_end else "")
    path.write_text(text, encoding="utf-8")
    return path


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


# ---------------------------------------------------------------- Claude Code


@pytest.mark.anyio
async def test_claude_code_transcript_becomes_sessions_with_calls_results_and_thinking(
    tmp_path: Path,
) -> None:
    db = tmp_path / "agents.db"
    results = await import_claude_code(FIXTURES / "claude-code", db=db)

    keys = {result.key for result in results}
    assert keys == {
        CLAUDE_KEY,
        f"{CLAUDE_KEY}/agent-e4f19a07",  # the sidechain lines of the main file
        f"{CLAUDE_KEY}/agent-9b2d6c10",  # a sub-agent's own file
    }
    main = next(result for result in results if result.key == CLAUDE_KEY)
    assert main.model == "claude-sonnet-4-5-20250929"
    assert main.already == 0 and main.stored == 8
    assert main.skipped == {
        "summary line": 1,
        "file-history-snapshot line": 1,
        "synthetic reply": 1,
        "system line": 1,
        "queue-operation line": 1,
        "progress line": 1,
        "line off the active branch": 2,  # a prompt and reply the user rewound
    }

    session = await loaded(db, CLAUDE_KEY)
    try:
        history = session.history()
        header = history[0]
        assert header.role == "system"
        header_text = header.parts[0]
        assert isinstance(header_text, TextPart)
        assert CLAUDE_SID in header_text.text
        assert "/srv/maya/src/tidewatch" in header_text.text
        assert "fix/tz-offsets" in header_text.text
        # One reply written over four lines is one message: thinking, text, two calls.
        reply = history[2]
        assert [part.kind for part in reply.parts] == ["reasoning", "text", "tool", "tool"]
        thinking = reasoning_of(session)
        assert len(thinking) == 2
        assert thinking[0].provider == "anthropic"
        assert as_json(thinking[0].payload)["signature"].startswith("EqQBCkYI")
        calls = tools_of(session)
        assert set(calls) == {
            "toolu_01Rd7",
            "toolu_01Gp2",
            "toolu_02Bs5",
            "toolu_03Tk9",
            "toolu_04Ed3",
        }
        assert all(call.status == "completed" for call in calls.values())
        assert "TIDEWATCH-TZ-7731" in (calls["toolu_02Bs5"].output or "")  # the failed run
        assert "stations.py works in UTC" in (calls["toolu_03Tk9"].output or "")
        image = [p for m in history for p in m.parts if isinstance(p, MediaPart)]
        assert [part.media_type for part in image] == ["image/png"]
        stored_text = json.dumps([str(m.parts) for m in history])
        assert "API Error" not in stored_text and "REWOUND-BRANCH" not in stored_text
        check_request((await session.context()).messages)
    finally:
        await session.close()

    agent = await loaded(db, f"{CLAUDE_KEY}/agent-e4f19a07")
    try:
        assert agent.model == "claude-haiku-4-5-20251001"
        assert "toolu_s1Gl4" in tools_of(agent)
        check_request((await agent.context()).messages)
    finally:
        await agent.close()


def test_claude_code_cli_import_grep_show_and_reimport(tmp_path: Path) -> None:
    db = tmp_path / "agents.db"
    first = cli(db, "import", "claude-code", str(FIXTURES / "claude-code"))
    assert first.exit_code == 0, first.output
    assert "3 transcripts" in first.stdout and "16 new messages" in first.stdout
    assert CLAUDE_KEY in first.stdout
    rows = message_rows(db)

    hits = cli(db, "grep", "--regex", "TIDEWATCH-TZ-[0-9]+")
    assert hits.exit_code == 0, hits.output
    assert "TIDEWATCH-TZ-7731" in hits.stdout
    (row,) = [line for line in first.stdout.splitlines() if line.rstrip().endswith(CLAUDE_KEY)]
    session_id = row.split()[0]
    shown = cli(db, "show", session_id, "--full")
    assert shown.exit_code == 0, shown.output
    assert "TIDEWATCH-TZ-7731" in shown.stdout

    again = cli(db, "import", "claude-code", str(FIXTURES / "claude-code"))
    assert again.exit_code == 0, again.output
    assert "0 new messages" in again.stdout
    assert message_rows(db) == rows


@pytest.mark.anyio
async def test_claude_code_grown_transcript_stores_only_the_new_part(tmp_path: Path) -> None:
    lines = lines_of(CLAUDE_FILE)
    # Cut after the failed test run's result: every reply so far is complete.
    cut = next(i for i, line in enumerate(lines) if "toolu_02Bs5" in line and '"user"' in line)
    transcript = write_lines(tmp_path / "t" / CLAUDE_FILE.name, lines[: cut + 1])
    db = tmp_path / "grown.db"

    (start,) = [r for r in await import_claude_code(transcript, db=db) if r.key == CLAUDE_KEY]
    assert start.stored == 4  # header, prompt, reply with two calls, reply with one call
    write_lines(transcript, lines)
    grown = [r for r in await import_claude_code(transcript, db=db) if r.key == CLAUDE_KEY]
    assert grown[0].already == 4 and grown[0].stored == 4
    assert grown[0].session_id == start.session_id

    whole = tmp_path / "whole.db"
    await import_claude_code(CLAUDE_FILE, db=whole)
    assert await _texts(db, CLAUDE_KEY) == await _texts(whole, CLAUDE_KEY)


@pytest.mark.anyio
async def test_a_last_line_still_being_written_waits_for_the_next_import(tmp_path: Path) -> None:
    lines = lines_of(CLAUDE_FILE)
    half = lines[-4][: len(lines[-4]) // 2]  # the final reply, cut mid-line
    transcript = write_lines(tmp_path / CLAUDE_FILE.name, [*lines[:-4], half], newline_at_end=False)
    db = tmp_path / "live.db"
    (first, _agent) = await import_claude_code(transcript, db=db)
    assert first.skipped["partial last line"] == 1
    write_lines(transcript, lines)
    (second, _agent) = await import_claude_code(transcript, db=db)
    assert second.stored == 1 and "partial last line" not in second.skipped
    assert await _texts(db, CLAUDE_KEY) == await _import_texts(tmp_path, CLAUDE_FILE, CLAUDE_KEY)


@pytest.mark.anyio
async def test_a_reply_imported_half_written_forks_the_session_at_it(tmp_path: Path) -> None:
    lines = lines_of(CLAUDE_FILE)
    thinking = next(i for i, line in enumerate(lines) if '"thinking"' in line)
    transcript = write_lines(tmp_path / CLAUDE_FILE.name, lines[: thinking + 1])
    db = tmp_path / "live.db"
    (first,) = await import_claude_code(transcript, db=db)  # the reply: its thinking only
    write_lines(transcript, lines)
    (grown, _agent) = await import_claude_code(transcript, db=db)
    assert grown.forked_from == first.session_id != grown.session_id
    assert await session_for_key(db, CLAUDE_KEY) == grown.session_id
    # The cut reply is in the first turn: the fork starts before it and shares nothing.
    assert (grown.already, grown.stored) == (0, 8)
    assert await _texts(db, CLAUDE_KEY) == await _import_texts(tmp_path, CLAUDE_FILE, CLAUDE_KEY)


@pytest.mark.anyio
async def test_a_rewind_after_an_import_forks_and_the_rewound_branch_stays(
    tmp_path: Path,
) -> None:
    lines = lines_of(CLAUDE_FILE)
    rewound = next(i for i, line in enumerate(lines) if "REWOUND-BRANCH" in line)
    transcript = write_lines(tmp_path / CLAUDE_FILE.name, lines[: rewound + 1])
    db = tmp_path / "rewind.db"
    (before, _agent) = await import_claude_code(transcript, db=db)
    write_lines(transcript, lines)
    (after, _agent) = await import_claude_code(transcript, db=db)
    assert after.forked_from == before.session_id
    # The fork shares the turn before the rewound prompt and stores the new turn.
    assert (before.stored, after.already, after.stored) == (8, 6, 2)
    assert await _texts(db, CLAUDE_KEY) == await _import_texts(tmp_path, CLAUDE_FILE, CLAUDE_KEY)
    left = await Session.load(before.session_id or "", db=db)
    try:
        assert "REWOUND-BRANCH-5120" in json.dumps([str(m.parts) for m in left.history()])
    finally:
        await left.close()


def _row(uuid: str, parent: str | None, kind: str = "user", **extra: Any) -> str:
    message: dict[str, Any] = {"role": kind, "content": f"text of {uuid}"}
    if kind == "assistant":
        message.update(id=f"msg_{uuid}", model="claude-sonnet-4-5-20250929")
        message["content"] = [{"type": "text", "text": f"reply {uuid}"}]
    row = {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s-b", **extra}
    if kind in ("user", "assistant"):
        row["message"] = message
    return json.dumps(row)


@pytest.mark.anyio
async def test_a_compact_boundary_is_followed_and_a_foreign_parent_reads_in_order(
    tmp_path: Path,
) -> None:
    compacted = [
        _row("a", None),
        _row("b", "a", "assistant"),
        _row("c", None, "system", subtype="compact_boundary", logicalParentUuid="b"),
        _row("d", "c"),
        _row("e", "d", "assistant"),
    ]
    (result,) = await import_claude_code(
        write_lines(tmp_path / "c.jsonl", compacted), db=tmp_path / "a.db"
    )
    assert result.stored == 5 and "line off the active branch" not in result.skipped
    # The first line's parent lives in another file (a resumed session): nothing is left out.
    resumed = [_row("x", "elsewhere"), _row("y", "x", "assistant"), _row("z", "elsewhere")]
    (result,) = await import_claude_code(
        write_lines(tmp_path / "r.jsonl", resumed), db=tmp_path / "b.db"
    )
    assert result.stored == 4 and result.lines_skipped == 0


async def _texts(db: Path, key: str) -> list[str]:
    session = await loaded(db, key)
    try:
        return [f"{m.role}: {[str(part) for part in m.parts]}" for m in session.history()]
    finally:
        await session.close()


async def _import_texts(tmp_path: Path, file: Path, key: str) -> list[str]:
    db = tmp_path / f"fresh-{file.stem}.db"
    if "codex" in key:
        await import_codex(file, db=db)
    else:
        await import_claude_code(file, db=db)
    return await _texts(db, key)


# ---------------------------------------------------------------- Codex


@pytest.mark.anyio
async def test_codex_rollout_becomes_a_session_with_calls_outputs_and_reasoning(
    tmp_path: Path,
) -> None:
    db = tmp_path / "agents.db"
    seen: list[ImportProgress] = []
    results = await import_codex(FIXTURES / "codex", db=db, on_progress=seen.append)
    assert [(step.done, step.total) for step in seen] == [(1, 2), (2, 2)]
    assert {result.key for result in results} == {CODEX_KEY, OLD_CODEX_KEY}
    rollout = next(result for result in results if result.key == CODEX_KEY)
    assert rollout.model == "gpt-5-codex" and rollout.stored == 9
    assert rollout.skipped == {
        "event_msg line": 3,
        "ghost_snapshot item": 1,
        "compacted line": 1,
        "session_configured_v2 line": 1,
    }

    session = await loaded(db, CODEX_KEY)
    try:
        header = session.history()[0].parts[0]
        assert isinstance(header, TextPart)
        assert "feat/dry-run" in header.text and "/srv/maya/src/ferrylog" in header.text
        reasoning = reasoning_of(session)
        assert [part.provider for part in reasoning] == ["openai", "openai"]
        assert "Locating the sync command" in (reasoning[0].text or "")
        assert as_json(reasoning[0].payload)["encrypted_content"].startswith("gAAAA")
        calls = tools_of(session)
        assert set(calls) == {"call_Qm3sT1", "call_Vx8pL2", "call_Ap7hK3", "call_Ls4mR9"}
        assert all(call.status == "completed" for call in calls.values())
        assert "No such file" in (calls["call_Vx8pL2"].output or "")  # a failed command
        patch = as_json(calls["call_Ap7hK3"].input)
        assert patch["input"].startswith("*** Begin Patch")
        shell = as_json(calls["call_Ls4mR9"].input)
        assert shell["command"][-1] == "--dry-run"
        assert "FERRYLOG-DRYRUN-4410" in (calls["call_Ls4mR9"].output or "")
        media = [p for m in session.history() for p in m.parts if isinstance(p, MediaPart)]
        assert len(media) == 1
        check_request((await session.context()).messages)
    finally:
        await session.close()

    old = await loaded(db, OLD_CODEX_KEY)  # a rollout from before the line wrapper
    try:
        assert old.model == "gpt-5-codex"
        assert "57 tests collected" in (tools_of(old)["call_old1"].output or "")
        check_request((await old.context()).messages)
    finally:
        await old.close()


def test_codex_cli_import_grep_show_and_reimport(tmp_path: Path) -> None:
    db = tmp_path / "agents.db"
    first = cli(db, "import", "codex", str(CODEX_FILE))
    assert first.exit_code == 0, first.output
    assert "1 transcript" in first.stdout and "9 new messages" in first.stdout
    rows = message_rows(db)

    hits = cli(db, "grep", "--regex", "FERRYLOG-DRYRUN-[0-9]+")
    assert hits.exit_code == 0, hits.output
    assert "FERRYLOG-DRYRUN-4410" in hits.stdout
    session_id = rows[0][0]
    shown = cli(db, "show", session_id)
    assert shown.exit_code == 0, shown.output
    assert "dry-run" in shown.stdout

    again = cli(db, "import", "codex", str(CODEX_FILE))
    assert again.exit_code == 0 and "0 new messages" in again.stdout
    assert message_rows(db) == rows


@pytest.mark.anyio
async def test_codex_grown_rollout_stores_only_the_new_part(tmp_path: Path) -> None:
    lines = lines_of(CODEX_FILE)
    cut = next(i for i, line in enumerate(lines) if '"agent_message"' in line)
    transcript = write_lines(tmp_path / CODEX_FILE.name, lines[:cut])
    db = tmp_path / "grown.db"
    (start,) = await import_codex(transcript, db=db)
    write_lines(transcript, lines)
    (grown,) = await import_codex(transcript, db=db)
    assert (start.stored, grown.already, grown.stored) == (7, 7, 2)
    assert await _texts(db, CODEX_KEY) == await _import_texts(tmp_path, CODEX_FILE, CODEX_KEY)


# ---------------------------------------------------------------- bad input


@pytest.mark.anyio
async def test_a_malformed_line_is_a_typed_error_and_nothing_is_stored(tmp_path: Path) -> None:
    lines = lines_of(CLAUDE_FILE)
    broken = write_lines(tmp_path / "broken.jsonl", [*lines[:5], "{not json", *lines[5:]])
    db = tmp_path / "agents.db"
    with pytest.raises(TranscriptError) as caught:
        await import_claude_code(broken, db=db)
    assert (caught.value.path, caught.value.line) == (str(broken), 6)
    assert "broken.jsonl:6: not JSON" in str(caught.value)
    assert not db.exists() or message_rows(db) == []

    codex_broken = write_lines(tmp_path / "c" / "rollout.jsonl", ["[1, 2]", *lines_of(CODEX_FILE)])
    with pytest.raises(TranscriptError, match=r"rollout\.jsonl:1: expected a JSON object"):
        await import_codex(codex_broken, db=db)
    payload = json.dumps({"timestamp": "t", "type": "response_item", "payload": "text"})
    with pytest.raises(TranscriptError, match="payload of a response_item line"):
        await import_codex(write_lines(tmp_path / "p.jsonl", [payload]), db=db)
    no_message = json.dumps({"type": "user", "uuid": "u1", "sessionId": "s"})
    with pytest.raises(TranscriptError, match="without a message object"):
        await import_claude_code(write_lines(tmp_path / "m.jsonl", [no_message]), db=db)


@pytest.mark.anyio
async def test_not_strict_reports_the_bad_file_and_imports_the_others(tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    shutil.copy(CLAUDE_FILE, folder / CLAUDE_FILE.name)
    write_lines(folder / "a-broken.jsonl", ["{oops", "{}"])  # sorts first
    results = await import_claude_code(folder, db=tmp_path / "a.db", strict=False)
    failed = [result for result in results if result.error]
    assert len(failed) == 1 and "a-broken.jsonl:1: not JSON" in (failed[0].error or "")
    assert failed[0].session_id is None
    assert any(result.key == CLAUDE_KEY and result.stored == 8 for result in results)


def test_cli_reports_a_bad_file_in_its_table_and_exits_1(tmp_path: Path) -> None:
    bad = write_lines(tmp_path / "bad.jsonl", ["{oops", "{}"])
    result = cli(tmp_path / "a.db", "import", "codex", str(bad))
    assert result.exit_code == 1
    assert "bad.jsonl:1: not JSON" in result.stdout
    missing = cli(tmp_path / "a.db", "import", "codex", str(tmp_path / "nowhere"))
    assert missing.exit_code == 2 and "does not exist" in missing.output


@pytest.mark.anyio
async def test_missing_paths_empty_folders_and_record_only_files(tmp_path: Path) -> None:
    with pytest.raises(MissingFileError):
        await import_codex(tmp_path / "nowhere", db=tmp_path / "a.db")
    assert await import_codex(tmp_path, db=tmp_path / "a.db") == []
    records = [json.dumps({"type": "summary", "summary": "s", "leafUuid": "u"})]
    (result,) = await import_claude_code(
        write_lines(tmp_path / "only.jsonl", records), db=tmp_path / "a.db"
    )
    assert isinstance(result, ImportResult)
    assert (result.session_id, result.stored, result.skipped) == (None, 0, {"summary line": 1})


@pytest.mark.anyio
async def test_a_model_litellm_does_not_know_keeps_its_name(tmp_path: Path) -> None:
    line = {
        "type": "assistant",
        "uuid": "u2",
        "sessionId": "s-future",
        "message": {
            "id": "msg_f",
            "role": "assistant",
            "model": "claude-future-9",
            "content": [{"type": "text", "text": "Done."}],
        },
    }
    prompt: dict[str, Any] = {
        "type": "user",
        "uuid": "u1",
        "sessionId": "s-future",
        "message": {"role": "user", "content": "Say done."},
    }
    file = write_lines(tmp_path / "f.jsonl", [json.dumps(prompt), json.dumps(line)])
    (result,) = await import_claude_code(file, db=tmp_path / "a.db")
    assert result.model == "claude-future-9" and result.stored == 3
    session = await loaded(tmp_path / "a.db", "claude-code:s-future")
    try:
        assert session.model == "claude-future-9"
        check_request((await session.context()).messages)
    finally:
        await session.close()


def test_the_example_imports_and_searches_the_fixtures(tmp_path: Path) -> None:
    example = Path(__file__).parent.parent / "examples" / "import_agent_sessions.py"
    args = ["--claude-code", str(FIXTURES / "claude-code"), "--codex", str(FIXTURES / "codex")]
    db = ["--db", str(tmp_path / "agents.db"), "--query", "FERRYLOG"]
    done = subprocess.run(
        [sys.executable, str(example), *args, *db],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert f"{CODEX_KEY}: 9 new, 0 already stored" in done.stdout
    assert "[2/2] rollout-2025-11-02" in done.stdout  # progress, file by file
    assert f"Imported transcript. Codex session {CODEX_ID}" in done.stdout  # a hit's session


def _claude_file(tmp_path: Path, name: str, content: list[dict[str, Any]]) -> Path:
    prompt = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": f"s-{name}",
        "message": {"role": "user", "content": content},
    }
    return write_lines(tmp_path / f"{name}.jsonl", [json.dumps(prompt)])


@pytest.mark.anyio
async def test_content_no_session_can_hold_is_skipped_or_reported(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    held_elsewhere = {"type": "image", "source": {"type": "file", "file_id": "file_011"}}
    text = {"type": "text", "text": "What is on this screenshot?"}
    (result,) = await import_claude_code(
        _claude_file(tmp_path, "fileref", [text, held_elsewhere]), db=db
    )
    assert result.stored == 2 and result.skipped == {"image block": 1}

    source = {"type": "base64", "media_type": "image/png", "data": "bm90IGFuIGltYWdl"}
    not_png = {"type": "image", "source": source}  # the data reads "not an image"
    bad = _claude_file(tmp_path, "notpng", [text, not_png])
    with pytest.raises(InvalidInputError):
        await import_claude_code(bad, db=db)
    (reported,) = await import_claude_code(bad, db=db, strict=False)
    assert reported.error and reported.key == "claude-code:s-notpng"
    assert reported.session_id is None


@pytest.mark.anyio
async def test_codex_output_given_as_content_items_keeps_text_and_images(
    tmp_path: Path,
) -> None:
    png = json.loads(lines_of(CODEX_FILE)[-5])["payload"]["content"][1]["image_url"]
    rows: list[dict[str, Any]] = [
        {"type": "session_meta", "payload": {"id": "c-items", "cwd": "/srv"}},
        {
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": "Look."},
        },
        {
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "view_image",
                "arguments": "{}",
                "call_id": "c1",
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": "c1",
                "output": [
                    {"type": "input_text", "text": "screenshot of the failing page"},
                    {"type": "input_image", "image_url": png},
                ],
            },
        },
    ]
    file = write_lines(tmp_path / "items.jsonl", [json.dumps(row) for row in rows])
    (result,) = await import_codex(file, db=tmp_path / "a.db")
    assert result.stored == 3 and result.model == "gpt-5-codex"  # no turn_context
    session = await loaded(tmp_path / "a.db", "codex:c-items")
    try:
        assert "screenshot of the failing page" in (tools_of(session)["c1"].output or "")
        check_request((await session.context()).messages)
    finally:
        await session.close()


def test_the_command_takes_its_own_db_option(tmp_path: Path) -> None:
    own = tmp_path / "own.db"
    result = cli(tmp_path / "global.db", "import", "codex", str(CODEX_FILE), "--db", str(own))
    assert result.exit_code == 0, result.output
    assert own.exists() and not (tmp_path / "global.db").exists()
    assert len(message_rows(own)) == 9


@pytest.mark.anyio
@pytest.mark.both_backends
async def test_both_agents_import_and_reimport_on_either_backend(database: Path | str) -> None:
    claude = await import_claude_code(FIXTURES / "claude-code", db=database)
    codex = await import_codex(FIXTURES / "codex", db=database)
    assert [result.stored for result in claude] == [4, 8, 4]
    assert [result.stored for result in codex] == [4, 9]
    again = await import_claude_code(FIXTURES / "claude-code", db=database)
    again += await import_codex(FIXTURES / "codex", db=database)
    assert [result.stored for result in again] == [0] * 5
    assert [result.already for result in again] == [4, 8, 4, 4, 9]
    assert {result.session_id for result in again} == {r.session_id for r in claude + codex}
    session = await Session.load(codex[1].session_id or "", db=database)
    try:
        assert "FERRYLOG-DRYRUN-4410" in (tools_of(session)["call_Ls4mR9"].output or "")
    finally:
        await session.close()


@pytest.mark.anyio
async def test_a_session_keeps_the_model_it_was_created_with(tmp_path: Path) -> None:
    prompt = _row("p", None)
    file = write_lines(tmp_path / "m.jsonl", [prompt])
    db = tmp_path / "a.db"
    (first,) = await import_claude_code(file, db=db)  # no reply yet: the fallback name
    reply = json.loads(_row("r", "p", "assistant"))
    reply["message"]["model"] = "claude-opus-4-1-20250805"
    write_lines(file, [prompt, json.dumps(reply)])
    (grown,) = await import_claude_code(file, db=db)
    assert grown.session_id == first.session_id and grown.stored == 1
    assert grown.model == first.model == "claude-sonnet-4-5-20250929"
