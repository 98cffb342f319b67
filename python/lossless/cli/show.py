"""``lossless show``: the active context of a session, as the model receives it."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import typer
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from lossless.cli._common import open_existing_store, stdout_console
from lossless.store import EventRow, SessionInfo, Store
from lossless.tokens import TokenCounter

__all__ = [
    "DEFAULT_BUDGET",
    "recorded_usable",
    "render_message",
    "show",
    "token_bar",
    "usable_budget",
]

# The documented defaults (DESIGN.md "Context assembly", config.CompactionConfig):
# a 200k window, minus 16k reserved for the reply, minus 8k kept for compaction output.
DEFAULT_CONTEXT_LIMIT = 200_000
DEFAULT_MAX_OUTPUT_TOKENS = 16_384
DEFAULT_COMPACTION_OUTPUT_BUDGET = 8_192
DEFAULT_BUDGET = (
    DEFAULT_CONTEXT_LIMIT - DEFAULT_MAX_OUTPUT_TOKENS - DEFAULT_COMPACTION_OUTPUT_BUDGET
)

# A session takes its system prompt out of the usable budget, counted with the session
# model's tokenizer plus this per-message overhead (lossless.models.Budget,
# lossless.session); `show` applies the same rule so it assembles what the model gets.
SYSTEM_MESSAGE_OVERHEAD = 4

TOOL_RESULT_LINES = 20
SOFT_THRESHOLD = 0.6  # compaction starts in the background here (DESIGN.md "Compaction")

ROLE_STYLES = {"system": "blue", "user": "cyan", "assistant": "green", "tool": "yellow"}
SUMMARY_STYLE = "magenta"
# How the core renders a summary into the view: "[summary sum_... of N earlier messages; ...]".
_SUMMARY_HEADER = re.compile(r"\[summary (sum_\w+)")


def _find_int(config: Any, names: tuple[str, ...]) -> int | None:
    """The first positive int under any of ``names``, searching nested sections breadth-first.

    The session stores its config snapshot as JSON whose shape is owned by the session
    code (flat keys, or sections such as ``{"model": {"context_limit": ...}}``); a
    breadth-first search reads both without depending on one layout.
    """
    queue = [config]
    while queue:
        node = queue.pop(0)
        if not isinstance(node, Mapping):
            continue
        for name in names:
            value = node.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        queue.extend(node.values())
    return None


def usable_budget(config_json: str) -> tuple[int, str]:
    """The session's usable token budget and where it came from.

    A stored ``budget`` (or ``usable``) wins; else ``context_limit`` minus the reply
    and compaction reserves (stored, or their defaults); else the default window.
    """
    try:
        config: Any = json.loads(config_json)
    except ValueError:
        config = {}
    budget = _find_int(config, ("budget", "usable"))
    if budget is not None:
        return budget, "session config"
    limit = _find_int(config, ("context_limit",))
    if limit is None:
        return DEFAULT_BUDGET, "default"
    output = _find_int(config, ("max_output_tokens",)) or DEFAULT_MAX_OUTPUT_TOKENS
    reserve = _find_int(config, ("compaction_output_budget", "output_budget"))
    usable = limit - output - (reserve or DEFAULT_COMPACTION_OUTPUT_BUDGET)
    return (usable, "session config") if usable > 0 else (DEFAULT_BUDGET, "default")


def recorded_usable(events: Sequence[EventRow]) -> int | None:
    """The usable budget a session announced in its ``session_created`` event, if any.

    That number is the session's own (window from litellm's model map when the config
    names none, less reserves and system prompt); the CLI cannot recompute it without
    importing litellm.
    """
    for event in reversed(events):
        if not event.name.startswith("session_"):
            continue
        try:
            payload: Any = json.loads(event.payload_json)
        except ValueError:
            continue
        usable = payload.get("usable") if isinstance(payload, dict) else None
        if isinstance(usable, int) and not isinstance(usable, bool) and usable > 0:
            return usable
    return None


def _session_budget(store: Store, info: SessionInfo) -> tuple[int, str]:
    """The budget the session itself assembles with, and where the number came from."""
    recorded = recorded_usable(store.events(info.id))
    if recorded is not None:
        return recorded, "recorded by the session"
    budget, source = usable_budget(info.config_json or "{}")
    prompt = info.system_prompt
    if not prompt:
        return budget, source
    system_tokens = TokenCounter(info.model).count(prompt) + SYSTEM_MESSAGE_OVERHEAD
    return max(0, budget - system_tokens), f"{source}, less {system_tokens:,} for the system prompt"


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _clip(text: str, max_lines: int | None) -> Text:
    lines = text.splitlines()
    if max_lines is None or len(lines) <= max_lines:
        return Text(text)
    clipped = Text("\n".join(lines[:max_lines]))
    clipped.append(
        f"\n… {len(lines) - max_lines} more lines (--full shows them)", style="dim italic"
    )
    return clipped


def render_message(message: Mapping[str, Any], index: int, *, full: bool) -> Panel:
    """One chat message as a panel titled with its position and role.

    Tool calls are listed as ``name(arguments)``; tool results are cut to
    20 lines unless ``full``. Text is never read as rich markup: stored content
    such as ``[/file]`` must print as itself.
    """
    role = str(message.get("role", "?"))
    text = _content_text(message.get("content"))
    title = f"#{index} {role}"
    style = ROLE_STYLES.get(role, "white")
    if summary := _SUMMARY_HEADER.match(text):
        title, style = f"#{index} summary {summary.group(1)} (as {role})", SUMMARY_STYLE
    parts: list[RenderableType] = []
    if role == "tool":
        title += f" · {message.get('tool_call_id', '?')}"
        parts.append(_clip(text, None if full else TOOL_RESULT_LINES))
    elif text:
        parts.append(Text(text))
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        line = Text("→ ", style="bold")
        line.append(str(function.get("name", "?")), style="bold")
        line.append(f"({function.get('arguments', '')})")
        line.append(f"  {call.get('id', '')}", style="dim")
        parts.append(line)
    body: RenderableType = Group(*parts) if parts else Text("(empty)", style="dim")
    return Panel(body, title=Text(title), title_align="left", border_style=style)


def token_bar(used: int, budget: int, *, width: int = 40) -> Text:
    """``████░░░░ 1,234 / 175,424 tokens (0.7%)``.

    Drawn with block characters rather than a colour-only progress bar so it still
    reads when piped or printed without colour.
    """
    ratio = used / budget if budget > 0 else 1.0
    filled = min(width, int(width * ratio))  # floor: a full bar means the budget is reached
    style = "red" if ratio > 1 else "yellow" if ratio >= SOFT_THRESHOLD else "green"
    bar = Text("█" * filled, style=style)
    bar.append("░" * (width - filled), style="dim")
    bar.append(f" {used:,} / {budget:,} tokens ({ratio:.1%})")
    return bar


def show(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="Session id (ses_...).")],
    budget: Annotated[
        int | None,
        typer.Option(
            help="Token budget to assemble for; default: the session's usable budget.", min=1
        ),
    ] = None,
    full: Annotated[bool, typer.Option("--full", help="Show tool results in full.")] = False,
) -> None:
    """Show the active context of SESSION as the model sees it, then its token use.

    Summaries stand in for older messages; expand them with `lossless expand`.
    """
    store = open_existing_store(ctx)
    info = store.native.get_session(session)
    prompt = info.system_prompt or ""
    budget, source = (budget, "--budget") if budget is not None else _session_budget(store, info)
    messages, tokens, item_ids, omitted = store.assemble(session, budget)
    console = stdout_console()
    header = Text.assemble(
        ("session ", "bold"),
        info.id,
        (" · model ", "bold"),
        info.model,
        (" · budget ", "bold"),
        f"{budget:,} ({source})",
    )
    console.print(header, soft_wrap=True)
    if prompt:
        # Stored with the session rather than as a message; the model reads it first.
        console.print(render_message({"role": "system", "content": prompt}, 0, full=full))
    for index, message in enumerate(messages, start=1):
        console.print(render_message(message, index, full=full))
    summaries = sum(1 for item in item_ids if item.startswith("sum_"))
    console.print(token_bar(tokens, budget))
    console.print(
        f"{len(messages)} messages from {len(item_ids)} items · {summaries} summaries · "
        f"{omitted} items omitted (over budget)",
        soft_wrap=True,
    )
