"""The ``lossless`` command line, against a real database file built with the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from lossless import FileRefPart, Store, TextPart, TokenCounter, ToolPart
from lossless.cli import app
from lossless.cli.recall import highlight_snippet
from lossless.cli.show import DEFAULT_BUDGET, usable_budget

# Subprocesses inherit this; litellm must never be imported by the CLI, but if a
# regression did import it, it must not try the network.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

FILE_ID = "file_0123456789abcdef"
SYSTEM_PROMPT = "You fix [bugs]."
TOOL_LINES = 40
# Wide enough that rich wraps no id, table row or snippet; and no LOSSLESS_DB from
# the environment running the tests.
ENV = {"COLUMNS": "240", "LOSSLESS_DB": None}


@dataclass(frozen=True)
class Fixture:
    """A database with one compacted session and one small session."""

    db: Path
    sid: str  # two leaves condensed into one summary, then one more live leaf
    other: str  # two messages, no summaries
    condensed: str
    leaves: tuple[str, str]
    live_leaf: str
    messages: int  # stored messages of `sid`


def _turns(store: Store, sid: str, start: int, count: int) -> None:
    for i in range(start, start + count):
        store.append(sid, "user", f"Please look at the tokenizer bug number {i} in {FILE_ID}")
        output = "\n".join(f"line {j} of p{i}.py" for j in range(TOOL_LINES))
        store.append(
            sid,
            "assistant",
            [
                TextPart(f"Reading p{i}.py for bug {i}"),
                ToolPart("read_file", f"call_{i}", {"path": f"src/p{i}.py"}, output=output),
            ],
        )
        store.append(
            sid, "assistant", [FileRefPart(FILE_ID, "src/big.py", "python", 1234, "A big parser")]
        )


def _compact(store: Store, sid: str) -> str:
    span = store.native.compaction_span(sid)
    text = store.native.truncate_summary(span.message_ids, 500)["text"]
    committed = store.native.commit_summary(sid, text, 3, span.message_ids, [], span.view_version)
    return str(committed["summary_id"])


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    db = tmp_path_factory.mktemp("cli") / "lossless.db"
    store = Store(db)
    config = {"model": {"context_limit": 50_000, "max_output_tokens": 4_096}}
    sid = store.create_session(
        "gpt-4o", config_json=json.dumps(config), system_prompt=SYSTEM_PROMPT
    )
    _turns(store, sid, 0, 4)
    first = _compact(store, sid)
    _turns(store, sid, 4, 4)
    second = _compact(store, sid)
    version = store.view_stats(sid)["version"]
    text = store.native.condense_truncate([first, second], 300)["text"]
    condensed = store.native.commit_summary(sid, text, 3, [], [first, second], version)[
        "summary_id"
    ]
    _turns(store, sid, 8, 3)
    live_leaf = _compact(store, sid)
    _turns(store, sid, 11, 3)
    other = store.create_session("gpt-4o-mini")
    store.append(other, "user", "A different session mentions the tokenizer once")
    store.append(other, "assistant", "Noted.")
    return Fixture(db, sid, other, condensed, (first, second), live_leaf, len(store.history(sid)))


runner = CliRunner()


def run(fx: Fixture | Path, *args: str) -> Result:
    db = fx if isinstance(fx, Path) else fx.db
    return runner.invoke(app, ["--db", str(db), *args], env=ENV)


def ok(fx: Fixture | Path, *args: str) -> str:
    result = run(fx, *args)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return result.stdout


def assert_one_line_error(result: Result, *needles: str) -> None:
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in lines[0]


# ---------------------------------------------------------------- sessions, stats


def test_sessions_lists_every_session_with_counts(fx: Fixture) -> None:
    out = ok(fx, "sessions")
    assert "2 sessions" in out
    store = Store(fx.db)
    for row in store.sessions():
        line = next(line for line in out.splitlines() if row["id"] in line)
        assert row["model"] in line
        assert f"{row['messages']:,}" in line
        assert f"{store.view_stats(row['id'])['tokens']:,}" in line
    assert f" {fx.messages} " in next(line for line in out.splitlines() if fx.sid in line)


def test_sessions_of_an_empty_database(tmp_path: Path) -> None:
    Store(tmp_path / "empty.db")
    assert "no sessions" in ok(tmp_path / "empty.db", "sessions")


def test_stats_reports_database_counts(fx: Fixture) -> None:
    out = ok(fx, "stats")
    counts = Store(fx.db).stats()
    cells = [[c.strip() for c in line.strip().strip("│").split("│")] for line in out.splitlines()]
    rows = {row[0]: row[1] for row in cells if len(row) == 2}
    assert rows["sessions"] == "2"
    assert rows["messages"] == f"{counts['messages']:,}"
    assert rows["parts"] == f"{counts['parts']:,}"
    assert rows["summaries (live / total)"] == "2 / 4"  # condensed + live leaf, of 4
    assert rows["tokens stored"] == f"{counts['tokens_stored']:,}"
    assert rows["tokens in view"].startswith(f"{counts['tokens_in_view']:,} (")
    assert rows["file size"].endswith(("KiB", "MiB"))
    for key in ("tombstones", "compactions", "events", "write-ahead log"):
        assert key in rows


# ---------------------------------------------------------------- show


def test_show_renders_the_active_context(fx: Fixture) -> None:
    out = ok(fx, "show", fx.sid)
    # The session's rule: window - reply reserve - compaction reserve - system prompt.
    system = TokenCounter("gpt-4o").count(SYSTEM_PROMPT) + 4
    usable = 50_000 - 4_096 - 8_192 - system
    assert f"budget {usable:,} (session config, less {system} for the system prompt)" in out
    assert "#0 system" in out and SYSTEM_PROMPT in out  # printed as text, not as markup
    assert f"summary {fx.condensed}" in out and f"summary {fx.live_leaf}" in out
    assert 'read_file({"path": "src/p13.py"})' in out and "call_13" in out
    assert "tool · call_13" in out
    # Tool results are cut to 20 lines unless --full.
    assert "line 19 of p13.py" in out and "line 39 of p13.py" not in out
    assert "20 more lines (--full shows them)" in out
    tokens = Store(fx.db).view_stats(fx.sid)["tokens"]
    assert "█" in out and f"{tokens:,} / {usable:,} tokens" in out
    assert "2 summaries · 0 items omitted" in out


def test_show_full_and_budget(fx: Fixture) -> None:
    assert "line 39 of p13.py" in ok(fx, "show", fx.sid, "--full")
    out = ok(fx, "show", fx.sid, "--budget", "1200")
    _, tokens, items, omitted = Store(fx.db).assemble(fx.sid, 1200)
    assert omitted > 0
    assert "budget 1,200 (--budget)" in out
    assert f"{tokens:,} / 1,200 tokens" in out
    assert f"from {len(items)} items" in out and f"{omitted} items omitted" in out


def test_show_defaults_to_the_standard_budget(fx: Fixture) -> None:
    out = ok(fx, "show", fx.other)
    assert f"budget {DEFAULT_BUDGET:,} (default)" in out
    assert "A different session mentions the tokenizer once" in out
    assert "0 summaries" in out


def test_show_prefers_the_budget_the_session_recorded(tmp_path: Path) -> None:
    store = Store(tmp_path / "events.db")
    sid = store.create_session("gpt-4o", system_prompt="Be brief.")
    store.append(sid, "user", "hello")
    store.native.append_event(
        sid, "session_created", json.dumps({"model": "gpt-4o", "usable": 12_345})
    )
    out = ok(tmp_path / "events.db", "show", sid)
    assert "budget 12,345 (recorded by the session)" in out
    assert "/ 12,345 tokens" in out


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"budget": 9_000}, (9_000, "session config")),
        ({"context_limit": 100_000}, (100_000 - 16_384 - 8_192, "session config")),
        (
            {
                "model": {"context_limit": 64_000, "max_output_tokens": 8_000},
                "compaction": {"output_budget": 2_000},
            },
            (54_000, "session config"),
        ),
        ({"model": {"context_limit": None}}, (200_000 - 16_384 - 8_192, "default")),
        ({"context_limit": 1_000}, (DEFAULT_BUDGET, "default")),  # no room left: not a budget
        ("not json", (DEFAULT_BUDGET, "default")),
    ],
)
def test_usable_budget_from_config(config: object, expected: tuple[int, str]) -> None:
    raw = config if isinstance(config, str) else json.dumps(config)
    assert usable_budget(raw) == expected


# ---------------------------------------------------------------- tree, expand


def test_tree_shows_live_summaries_and_what_they_condensed(fx: Fixture) -> None:
    out = ok(fx, "tree", fx.sid)
    lines = out.splitlines()
    assert "2 live of 4 summaries" in lines[0]
    top = [line for line in lines if line.startswith(("├── ", "└── "))]
    assert len(top) == 2
    assert fx.condensed in top[0] and "condensed L3 depth 1" in top[0]
    assert fx.live_leaf in top[1] and "leaf L3 depth 0" in top[1]
    nested = [line for line in lines if any(leaf in line for leaf in fx.leaves)]
    assert len(nested) == 2
    assert all(line.startswith("│   ") and "leaf L3 depth 0" in line for line in nested)
    leaves = [node for node in Store(fx.db).describe(fx.sid) if node["kind"] == "leaf"]
    for node in leaves:
        seqs = f"seq {node['span_start_seq']}–{node['span_end_seq']}"
        assert sum(f"{node['message_count']} messages ({seqs})" in line for line in lines) == 1
    assert sum("messages (seq" in line for line in lines) == len(leaves) == 3


def test_tree_of_a_session_without_summaries(fx: Fixture) -> None:
    assert "has no summaries" in ok(fx, "tree", fx.other)


def test_expand_shows_source_messages_and_note(fx: Fixture) -> None:
    expansion = Store(fx.db).expand(fx.leaves[0], max_tokens=20_000)
    out = ok(fx, "expand", fx.leaves[0])
    for message in expansion["messages"]:
        assert f"[#{message['seq']} {message['role']}] {message['id']}" in out
    assert "Please look at the tokenizer bug number 0" in out
    assert expansion["note"] in out.replace("\n", " ")


def test_expand_within_max_tokens_says_what_was_left_out(fx: Fixture) -> None:
    expansion = Store(fx.db).expand(fx.condensed, max_tokens=60)
    assert expansion["omitted_messages"] > 0
    out = ok(fx, "expand", fx.condensed, "--max-tokens", "60")
    assert f"{len(expansion['messages'])} of {expansion['total_messages']} source messages" in out
    assert "left out" in out
    paging = f"lossless expand {fx.condensed} --after {expansion['after_cursor']} --max-tokens 60"
    assert paging in " ".join(out.split())


def test_expand_around_a_message_pages_with_the_commands_it_prints(fx: Fixture) -> None:
    store = Store(fx.db)
    history = store.history(fx.sid)
    focus = next(m["id"] for m in history if "bug number 3 " in str(m["parts"]))
    window = store.expand(fx.condensed, max_tokens=400, around=focus)
    out = ok(fx, "expand", fx.condensed, "--around", focus, "--max-tokens", "400")
    assert f"{focus} · " in out and "← focus" in out
    flat = " ".join(out.split())
    assert f"--before {window['before_cursor']} --max-tokens 400" in flat
    older = ok(
        fx, "expand", fx.condensed, "--before", window["before_cursor"], "--max-tokens", "400"
    )
    assert window["before_cursor"] + " · " not in older
    by_query = ok(fx, "expand", fx.condensed, "--query", "bug number 5", "--max-tokens", "400")
    assert "← focus" in by_query
    assert_one_line_error(
        run(fx, "expand", fx.condensed, "--around", focus, "--query", "bug"), "at most one"
    )


def test_read_pages_through_a_message(fx: Fixture) -> None:
    store = Store(fx.db)
    tool_message = next(m for m in store.history(fx.sid) if len(m["parts"]) == 2)
    message_id = tool_message["id"]
    whole = ok(fx, "read", message_id, "--max-tokens", "100000")
    assert "read_file (id call_0, completed)" in whole and "line 0 of p0.py" in whole
    assert "more:" not in whole
    first = ok(fx, "read", message_id, "--max-tokens", "30")
    more = next(line for line in first.splitlines() if line.startswith("more: "))
    cursor = more.split("--cursor ")[1].split()[0]
    assert f"lossless read {message_id} --cursor {cursor} --max-tokens 30" in more
    second = ok(fx, "read", message_id, "--max-tokens", "30", "--cursor", cursor)
    assert f"characters {int(cursor):,}–" in second
    assert_one_line_error(run(fx, "read", "msg_nope"), "msg_nope")


# ---------------------------------------------------------------- grep


def test_grep_text_names_owner_and_covering_summary(fx: Fixture) -> None:
    out = ok(fx, "grep", "tokenizer bug", "--session", fx.sid, "--limit", "50")
    # Read-only, as the CLI reads: the same rows indexed, the same rows still queued.
    hits = Store(fx.db, read_only=True).grep("tokenizer bug", session_id=fx.sid, limit=50)
    lines = out.splitlines()
    assert lines[0] == f'{len(hits)} hits for "tokenizer bug"'
    headings = [line for line in lines if line.startswith(("msg_", "sum_"))]
    expected = [
        f"{hit['owner_id']}  covered by {hit['covering_summary_id']}"
        if hit["covering_summary_id"]
        else f"{hit['owner_id']}  in view"
        for hit in hits
    ]
    assert headings == expected
    assert any(fx.condensed in line for line in headings)
    assert any(line.endswith("in view") for line in headings)
    assert "    Please look at the tokenizer bug number 0 in" in out  # snippet, indented
    assert "[tokenizer]" not in out  # match markers become bold, not brackets


def test_grep_across_sessions_shows_the_session(fx: Fixture) -> None:
    out = ok(fx, "grep", "tokenizer", "-n", "100")
    headings = [line for line in out.splitlines() if line.startswith("ses_")]
    assert {line.split()[0] for line in headings} == {fx.sid, fx.other}


def test_grep_regex_and_limit(fx: Fixture) -> None:
    out = ok(fx, "grep", "bug 1[0-3]", "--regex", "--session", fx.sid, "--limit", "2")
    assert "2 hits" in out
    assert "bug 13" in out or "bug 12" in out


def test_grep_prints_brackets_literally(fx: Fixture) -> None:
    # Queries, snippets and titles are full of brackets that rich would read as markup.
    pattern = r"\[/file\]"
    out = ok(fx, "grep", pattern, "--regex", "--session", fx.other)
    assert f'no matches for "{pattern}"' in out
    out = ok(fx, "grep", pattern, "--regex", "--session", fx.sid, "-n", "1")
    assert f'1 hit for "{pattern}"' in out and "[/file]" in out
    assert "[[/file]]" not in out  # the match marker around it is gone


def test_grep_without_matches(fx: Fixture) -> None:
    assert "no matches" in ok(fx, "grep", "xylophone")


def test_highlight_snippet_bolds_matches_and_keeps_literal_brackets() -> None:
    text = highlight_snippet("[#3 user] the [Tokenizer] broke [completed]", "tokenizer")
    assert text.plain == "[#3 user] the Tokenizer broke [completed]"
    assert [text.plain[span.start : span.end] for span in text.spans] == ["Tokenizer"]
    assert "bold" in str(text.spans[0].style)
    regex = highlight_snippet("[#1 user] at [bug 3] now", r"bug \d", regex=True)
    assert regex.plain == "[#1 user] at bug 3 now"
    nested = highlight_snippet("see [[/file]] here", r"\[/file\]", regex=True)
    assert nested.plain == "see [/file] here"
    assert [nested.plain[span.start : span.end] for span in nested.spans] == ["[/file]"]
    rust_only = highlight_snippet("a [x] b", r"\p{Greek}", regex=True)
    assert rust_only.plain == "a [x] b"
    # Python reads this Rust class differently (and warns: an error under pytest's
    # filterwarnings): no highlight, no warning.
    assert highlight_snippet("a [x] b", "[[:alpha:]]", regex=True).plain == "a [x] b"
    folded = highlight_snippet("[café] and [file]_[0a1b2c3d]", "cafe file_0a1b2c3d")
    assert folded.plain == "café and file_0a1b2c3d"


# ---------------------------------------------------------------- export


def test_export_writes_every_message_as_json_lines(fx: Fixture) -> None:
    out = ok(fx, "export", fx.sid, "--format", "jsonl")
    records = [json.loads(line) for line in out.splitlines()]
    history = Store(fx.db).history(fx.sid)
    assert len(records) == fx.messages
    assert [r["id"] for r in records] == [m["id"] for m in history]
    assert [r["seq"] for r in records] == sorted(r["seq"] for r in records)
    assert {r["type"] for r in records} == {"message"}
    kinds = {part["kind"] for r in records for part in r["parts"]}
    assert kinds == {"text", "tool", "file_ref"}
    tool = next(p for r in records for p in r["parts"] if p["kind"] == "tool")
    assert tool["output"].count("\n") == TOOL_LINES - 1


def test_export_with_summaries_to_a_file(fx: Fixture, tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    out = ok(fx, "export", fx.sid, "--with-summaries", "--output", str(target))
    assert f"wrote {fx.messages + 4} records" in out
    records = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert [r["type"] for r in records] == ["message"] * fx.messages + ["summary"] * 4
    summaries = {r["id"]: r for r in records[fx.messages :]}
    assert set(summaries) == {fx.condensed, fx.live_leaf, *fx.leaves}
    assert summaries[fx.condensed]["sources"] == list(fx.leaves)


# ---------------------------------------------------------------- demo


def test_demo_without_a_runner_fails_cleanly(fx: Fixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "lossless.demo.runner", None)  # makes the import fail
    assert_one_line_error(run(fx, "demo"), "demo is not available")


def test_demo_calls_the_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, int, str | None, bool]] = []

    def run_demo(db_path: str, *, turns: int, model: str | None, console: object) -> int:
        calls.append((db_path, turns, model, hasattr(console, "print")))
        return 3

    module = types.ModuleType("lossless.demo.runner")
    module.run_demo = run_demo  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "lossless.demo.runner", module)
    target = tmp_path / "demo.db"
    result = runner.invoke(
        app, ["demo", "--turns", "12", "--model", "m", "--db", str(target)], env=ENV
    )
    assert result.exit_code == 3
    assert calls == [(str(target), 12, "m", True)]


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "args",
    [
        ["show", "ses_nope"],
        ["tree", "ses_nope"],
        ["export", "ses_nope"],
        ["grep", "tokenizer", "--session", "ses_nope"],
    ],
)
def test_unknown_session(fx: Fixture, args: list[str]) -> None:
    assert_one_line_error(run(fx, *args), "ses_nope")


def test_unknown_session_writes_no_export_file(fx: Fixture, tmp_path: Path) -> None:
    assert_one_line_error(
        run(fx, "export", "ses_nope", "-o", str(tmp_path / "x.jsonl")), "ses_nope"
    )
    assert not (tmp_path / "x.jsonl").exists()


def test_unknown_summary(fx: Fixture) -> None:
    assert_one_line_error(run(fx, "expand", "sum_nope"), "sum_nope")


@pytest.mark.parametrize(
    "args",
    [
        ["sessions"],
        ["stats"],
        ["show", "s"],
        ["tree", "s"],
        ["grep", "x"],
        ["expand", "s"],
        ["export", "s"],
    ],
)
def test_missing_database_is_an_error_and_not_created(tmp_path: Path, args: list[str]) -> None:
    missing = tmp_path / "missing.db"
    assert_one_line_error(run(missing, *args), str(missing))
    assert list(tmp_path.iterdir()) == []


def test_not_a_database(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.db"
    bogus.write_text("these are notes, not SQLite\n" * 200)
    assert_one_line_error(run(bogus, "stats"), "not a lossless database")


def test_invalid_regex(fx: Fixture) -> None:
    # The core's message spans lines (a caret under the pattern); the CLI keeps one.
    assert_one_line_error(run(fx, "grep", "(", "--regex"), "invalid regular expression")


def test_punctuation_only_query(fx: Fixture) -> None:
    assert_one_line_error(run(fx, "grep", "!!!"), "no words")


def test_database_from_environment(fx: Fixture) -> None:
    result = runner.invoke(app, ["stats"], env={**ENV, "LOSSLESS_DB": str(fx.db)})
    # The table may wrap a long path over lines.
    assert result.exit_code == 0 and str(fx.db) in "".join(result.stdout.split())


# ---------------------------------------------------------------- processes


def _python(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=cwd, timeout=60, check=False
    )


def test_python_dash_m_exit_codes(fx: Fixture, tmp_path: Path) -> None:
    done = _python("-m", "lossless", "--db", str(fx.db), "stats")
    assert done.returncode == 0 and "sessions" in done.stdout
    failed = _python("-m", "lossless", "--db", str(fx.db), "grep", "(", "--regex")
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.startswith("error: ") and failed.stderr.count("\n") == 1
    missing = _python("-m", "lossless", "stats", cwd=tmp_path)  # default ./lossless.db
    assert missing.returncode == 1 and "no database at lossless.db" in missing.stderr
    assert not (tmp_path / "lossless.db").exists()
    assert "Usage" in _python("-m", "lossless", "--help").stdout


def test_stats_never_imports_litellm_or_the_session(fx: Fixture) -> None:
    code = (
        "import sys\n"
        "from lossless.cli import main\n"
        f"sys.argv = ['lossless', '--db', {str(fx.db)!r}, 'stats']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "heavy = ('litellm', 'lossless.session', 'lossless.compaction', 'lossless.llm')\n"
        "print('LOADED', sorted(name for name in heavy if name in sys.modules))\n"
    )
    done = _python("-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "LOADED []"
