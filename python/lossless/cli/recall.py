"""``lossless tree``, ``grep``, ``expand`` and ``read``: the recall tools, for people."""

from __future__ import annotations

import re
import unicodedata
import warnings
from collections.abc import Mapping
from typing import Annotated

import typer
from rich.padding import Padding
from rich.rule import Rule
from rich.text import Text
from rich.tree import Tree

from lossless import _native
from lossless.cli._common import open_existing_store, plural, stdout_console
from lossless.store import DagRow, ExpansionRow

__all__ = ["expand", "grep", "highlight_snippet", "read", "summary_label", "tree"]

_MARKED = re.compile(r"\[([^\[\]]*)\]")
_WORD = re.compile(r"[^\W_]+")  # the core's FTS tokenizer (unicode61) splits on "_" too


def summary_label(node: DagRow) -> Text:
    """``sum_… condensed L3 depth 1 · seq 1–16 · 16 messages · 256 tokens``."""
    label = Text(node.id, style="bold")
    label.append(f"  {node.kind}", style="magenta" if node.kind == "condensed" else "cyan")
    label.append(f" L{node.level} depth {node.depth}")
    label.append(
        f" · seq {node.span_start_seq}–{node.span_end_seq}"
        f" · {node.message_count:,} messages · {node.token_count:,} tokens",
        style="dim",
    )
    return label


def _add_subtree(branch: Tree, node: DagRow, nodes: Mapping[str, DagRow]) -> None:
    if node.source_kind != "summary":
        span = f"seq {node.span_start_seq}–{node.span_end_seq}"
        branch.add(Text(f"{node.message_count:,} messages ({span})"))
        return
    children = [nodes[source] for source in node.sources if source in nodes]
    for child in sorted(children, key=lambda child: child.span_start_seq):
        _add_subtree(branch.add(summary_label(child)), child, nodes)


def tree(
    ctx: typer.Context, session: Annotated[str, typer.Argument(help="Session id (ses_...).")]
) -> None:
    """Show the summary DAG of SESSION: live summaries on top, what each one condensed
    below; and its lineage: the session it forked from and its own forks."""
    store = open_existing_store(ctx)
    described = store.describe(session)
    console = stdout_console()
    for line in _lineage_lines(store.native, session):
        console.print(line)
    if not described:
        console.print(f"{session} has no summaries: every message is still in the view")
        return
    nodes = {node.id: node for node in described}
    live = sorted((node for node in described if node.live), key=lambda node: node.span_start_seq)
    root = Tree(Text(f"{session} · {len(live)} live of {len(described)} summaries", style="bold"))
    for node in live:
        _add_subtree(root.add(summary_label(node)), node, nodes)
    console.print(root)


def _lineage_lines(native: _native.Store, session: str) -> list[Text]:
    """What SESSION forked from (up the chain) and the forks made of it."""
    lines = []
    fork = native.fork_of(session)
    while fork is not None:
        lines.append(Text(f"fork of {fork.parent_id} at message #{fork.fork_seq}", style="dim"))
        fork = native.fork_of(fork.parent_id)
    for child in native.forks_of(session):
        lines.append(Text(f"forked as {child.session_id} at message #{child.fork_seq}"))
    return lines


def _fold(word: str) -> str:
    """Case and diacritics folded, as the FTS index (``remove_diacritics 2``) compares words."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _word_markers(snippet: str, query: str) -> list[tuple[int, int]]:
    """Positions of the ``[`` and ``]`` the FTS index put around matched words.

    Stored text has brackets of its own (``[#3 user]``, ``[completed]``); a bracketed
    span is a marker only when each of its words is a word of the query.
    """
    words = {_fold(word) for word in _WORD.findall(query)}
    markers = []
    for found in _MARKED.finditer(snippet):
        inner = [_fold(word) for word in _WORD.findall(found.group(1))]
        if inner and all(word in words for word in inner):
            markers.append((found.start(), found.end() - 1))
    return markers


def _regex_marker(snippet: str, pattern: str) -> list[tuple[int, int]]:
    """Positions of the one ``[`` ``]`` pair the core put around a regex match.

    The match itself may contain brackets (``\\[/file\\]``), so pairs are tried
    until the text between them is a whole match of the pattern.
    """
    try:
        # Python warns about Rust syntax such as "[[:alpha:]]" (possible nested set);
        # the pattern was already checked by the core, so the warning is only noise.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = re.compile(pattern)
    except re.error:  # Rust regex syntax Python does not share: leave the markers
        return []
    closes = [i for i, char in enumerate(snippet) if char == "]"]
    for start in (i for i, char in enumerate(snippet) if char == "["):
        for end in closes:
            if end > start and compiled.fullmatch(snippet, start + 1, end):
                return [(start, end)]
    return []


def highlight_snippet(snippet: str, query: str, *, regex: bool = False) -> Text:
    """The snippet with its match markers removed and the matches in bold."""
    markers = _regex_marker(snippet, query) if regex else _word_markers(snippet, query)
    text = Text()
    last = 0
    for start, end in markers:
        text.append(snippet[last:start])
        text.append(snippet[start + 1 : end], style="bold red")
        last = end + 1
    text.append(snippet[last:])
    return text


def grep(
    ctx: typer.Context,
    query: Annotated[
        str, typer.Argument(help="Words to find (all of them), or a pattern with --regex.")
    ],
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="Search one session only.")
    ] = None,
    regex: Annotated[
        bool, typer.Option("--regex", "-E", help="QUERY is a regular expression.")
    ] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Most hits to show.", min=1)] = 20,
) -> None:
    """Search every stored message and summary, including what compaction took out of view.

    Each hit names its message or summary and, once compaction took it out of the
    view, the live summary that now stands for it: `lossless expand` that summary to
    read the original around the hit.
    """
    store = open_existing_store(ctx)
    hits = store.grep(query, session_id=session, mode="regex" if regex else "text", limit=limit)
    console = stdout_console()
    if not hits:
        console.print(f'no matches for "{query}"', soft_wrap=True)
        return
    # A heading per hit with the snippet indented below it, as ripgrep prints: ids stay
    # on one line and snippets get the full width, even on an 80-column terminal.
    console.print(Text(f'{plural(len(hits), "hit")} for "{query}"', style="bold"), soft_wrap=True)
    several = len({hit.session_id for hit in hits}) > 1
    for hit in hits:
        heading = Text()
        if several:
            heading.append(f"{hit.session_id} ", style="dim")
        heading.append(hit.owner_id, style="bold")
        covering = hit.covering_summary_id
        if covering:
            heading.append("  covered by ", style="dim")
            heading.append(covering, style="magenta")
        else:
            heading.append("  in view", style="dim")
        console.print(heading, soft_wrap=True)
        snippet = highlight_snippet(hit.snippet, query, regex=regex)
        console.print(Padding(snippet, (0, 0, 0, 4), expand=False))


def expand(
    ctx: typer.Context,
    summary: Annotated[str, typer.Argument(help="Summary id (sum_...).")],
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", help="Token budget for the messages shown.", min=1)
    ] = 20_000,
    around: Annotated[
        str | None, typer.Option("--around", help="Centre on this source message (msg_...).")
    ] = None,
    query: Annotated[
        str | None, typer.Option("--query", "-q", help="Centre on the best match of these words.")
    ] = None,
    before: Annotated[
        str | None, typer.Option("--before", help="The page of messages older than this one.")
    ] = None,
    after: Annotated[
        str | None, typer.Option("--after", help="The page of messages newer than this one.")
    ] = None,
) -> None:
    """Show the source messages SUMMARY stands for within --max-tokens: the oldest
    first, or centred on --around / --query; --before / --after page on."""
    store = open_existing_store(ctx)
    expansion = store.expand(
        summary, max_tokens=max_tokens, around=around, query=query, before=before, after=after
    )
    console = stdout_console()
    console.print(
        Text.assemble(
            ("summary ", "bold"),
            expansion.summary_id,
            f" · {len(expansion.messages)} of {expansion.total_messages:,} source messages"
            f" · {expansion.tokens:,} tokens",
        ),
        soft_wrap=True,
    )
    for message in expansion.messages:
        header = f"[#{message.seq} {message.role}]"
        focus = "  ← focus" if message.id == expansion.focus_id else ""
        console.print(
            Rule(
                Text(f"{header} {message.id} · {message.tokens:,} tokens{focus}"),
                align="left",
                style="dim",
            )
        )
        # The core starts each text with the same "[#seq role]" header the rule shows.
        text = message.text
        console.print(Text(text.removeprefix(header + "\n")))
    console.print(Text(_paging_note(expansion, max_tokens), style="yellow"), soft_wrap=True)


def _paging_note(expansion: ExpansionRow, max_tokens: int) -> str:
    """What was left out and the commands that show it."""
    shown, total = len(expansion.messages), expansion.total_messages
    if shown == total:
        return f"all {plural(total, 'source message')} shown"
    lines = [
        f"{shown:,} of {total:,} source messages shown within {max_tokens:,} tokens;"
        f" {total - shown:,} left out"
    ]
    command = f"lossless expand {expansion.summary_id}"
    budget = "" if max_tokens == 20_000 else f" --max-tokens {max_tokens}"
    if expansion.before_cursor:
        lines.append(
            f"{plural(expansion.messages_before, 'older message')} before:"
            f" {command} --before {expansion.before_cursor}{budget}"
        )
    if expansion.after_cursor:
        lines.append(
            f"{plural(expansion.messages_after, 'newer message')} after:"
            f" {command} --after {expansion.after_cursor}{budget}"
        )
    if shown == 0:
        at = expansion.focus_id or expansion.before_cursor or expansion.after_cursor
        lines.append(f"{at} alone is over the budget: lossless read {at}")
    return "\n".join(lines)


def read(
    ctx: typer.Context,
    message: Annotated[str, typer.Argument(help="Message id (msg_...).")],
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", help="Token budget for the page shown.", min=1)
    ] = 4_000,
    cursor: Annotated[
        int, typer.Option("--cursor", help="Start at this character (from the last page).", min=0)
    ] = 0,
) -> None:
    """Show one stored message whole: its text, tool calls (input, output, error) and
    file references, a page of --max-tokens at a time."""
    store = open_existing_store(ctx)
    page = store.read(message, max_tokens=max_tokens, cursor=cursor)
    console = stdout_console()
    console.print(
        Text.assemble(
            ("message ", "bold"),
            page.message_id,
            f" · {page.session_id} · {plural(page.parts, 'part')}"
            f" · characters {page.cursor:,}–{page.cursor + len(page.text):,}"
            f" of {page.total_chars:,}",
        ),
        soft_wrap=True,
    )
    console.print(Text(page.text))
    if page.next_cursor is not None:
        budget = "" if max_tokens == 4_000 else f" --max-tokens {max_tokens}"
        console.print(
            Text(
                f"more: lossless read {page.message_id} --cursor {page.next_cursor}{budget}",
                style="yellow",
            ),
            soft_wrap=True,
        )
