"""Claude Code transcripts in: ``~/.claude/projects/<project>/<session>.jsonl``.

Each line is one record. ``user`` and ``assistant`` lines carry an Anthropic
Messages ``message``; an assistant reply is written one content block per line,
the lines sharing ``message.id``, and is put back together here (a tool's result
line may come between two blocks of one reply). Lines of other types
(``summary``, ``system``, ``file-history-snapshot``, ...) hold no message and are
counted as skipped, as are replies Claude Code made up itself (model
``<synthetic>``: an API error shown to the user) and lines repeated by a resume.

Lines are taken in file order, from the conversation's active branch only, as
Claude Code itself reads them back (:mod:`._branch`): a rewind leaves the
rewound lines in the file, and they are skipped and counted. A sub-agent's lines
(``isSidechain``) go to a session of their own, keyed
``claude-code:<sessionId>/agent-<agentId>``, whether they sit in the main file
(older versions) or in their own ``agent-*.jsonl``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lossless.errors import TranscriptError
from lossless.imports._branch import off_branch
from lossless.imports._common import Line, Transcript

__all__ = ["parse"]

#: The name a session gets when no line names the model (a transcript cut before
#: the first reply); litellm's map knows it.
FALLBACK_MODEL = "claude-sonnet-4-5-20250929"
_ASSISTANT_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "tool_use"})
_USER_BLOCKS = frozenset({"text", "image", "document"})
_RESULT_BLOCKS = frozenset({"text", "image", "document"})


@dataclass(slots=True)
class _Group:
    """The messages of one session (the main one or one sub-agent's) being read."""

    key: str
    header: str
    model: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: set[str] = field(default_factory=set)
    reply_id: str | None = None  # message.id of the newest assistant reply
    reply: dict[str, Any] | None = None


def parse(path: Path, lines: list[Line], skipped: Counter[str]) -> list[Transcript]:
    """The sessions of one Claude Code file: the main one first, then each
    sub-agent's. Raises :class:`TranscriptError` for a message line without a
    message object."""
    groups: dict[str, _Group] = {}
    seen: set[str] = set()
    dead = off_branch([line for line in lines if not line.data.get("isSidechain")])
    for line in lines:
        data = line.data
        kind = data.get("type")
        if line.number in dead:
            skipped["line off the active branch"] += 1
            continue
        if kind not in ("user", "assistant"):
            skipped[f"{kind} line"] += 1
            continue
        uuid = data.get("uuid")
        if isinstance(uuid, str):
            if uuid in seen:
                skipped["repeated line"] += 1
                continue
            seen.add(uuid)
        message = data.get("message")
        if not isinstance(message, Mapping):
            raise TranscriptError(str(path), line.number, f"a {kind} line without a message object")
        if kind == "assistant" and (
            message.get("model") == "<synthetic>" or data.get("isApiErrorMessage")
        ):
            skipped["synthetic reply"] += 1
            continue
        group = _group_of(groups, path, data)
        if kind == "assistant":
            _add_reply(group, message, skipped)
        else:
            _add_user(group, path, line, message, skipped)
    transcripts = [_transcript(path, group) for group in groups.values()]
    if not transcripts:  # nothing but records: reported, nothing stored
        transcripts = [_transcript(path, _Group(key=f"claude-code:{path.stem}", header=""))]
    # A file's skipped lines are reported once, with its first session.
    transcripts[0].skipped = skipped
    return transcripts


def _group_of(groups: dict[str, _Group], path: Path, data: Mapping[str, Any]) -> _Group:
    session_id = str(data.get("sessionId") or path.stem)
    if data.get("isSidechain"):
        agent = str(data.get("agentId") or "sidechain")
        key = f"claude-code:{session_id}/agent-{agent}"
        title = f"Claude Code sub-agent {agent} of session {session_id}"
    else:
        # Every main line of a file joins one session, even when a resume wrote
        # lines under another id: the file is the session a person sees.
        main = next((key for key in groups if "/agent-" not in key), None)
        key = main or f"claude-code:{session_id}"
        title = f"Claude Code session {session_id}"
    if key not in groups:
        groups[key] = _Group(key=key, header=_header(title, data))
    return groups[key]


def _header(title: str, data: Mapping[str, Any]) -> str:
    """Where the session ran, from its first line (fixed as the file grows)."""
    facts = [title]
    for label, name in (("project", "cwd"), ("git branch", "gitBranch"), ("version", "version")):
        value = data.get(name)
        if isinstance(value, str) and value:
            facts.append(f"{label}: {value}")
    return "Imported transcript. " + "; ".join(facts) + "."


def _add_reply(group: _Group, message: Mapping[str, Any], skipped: Counter[str]) -> None:
    """Adds an assistant line's blocks: to the reply it continues (same
    ``message.id``), else as a new reply."""
    model = message.get("model")
    if group.model is None and isinstance(model, str) and model:
        group.model = model
    blocks = []
    for block in _blocks(message.get("content")):
        kind = block.get("type")
        if kind not in _ASSISTANT_BLOCKS or (kind == "text" and not block.get("text")):
            skipped[f"{kind} block"] += 1
            continue
        if kind == "tool_use" and isinstance(block.get("id"), str):
            group.calls.add(block["id"])
        blocks.append(dict(block))
    reply_id = message.get("id")
    if group.reply is not None and reply_id is not None and reply_id == group.reply_id:
        content = group.reply["content"]
        # A version that repeated earlier blocks on each line: keep each once.
        content.extend(block for block in blocks if block not in content)
        return
    group.reply_id = reply_id if isinstance(reply_id, str) else None
    group.reply = None
    if blocks:
        group.reply = {"role": "assistant", "content": blocks}
        group.messages.append(group.reply)


def _add_user(
    group: _Group, path: Path, line: Line, message: Mapping[str, Any], skipped: Counter[str]
) -> None:
    content = message.get("content")
    if isinstance(content, str):
        if content:
            group.messages.append({"role": "user", "content": content})
        return
    if not isinstance(content, list):
        raise TranscriptError(str(path), line.number, "message content is neither text nor a list")
    blocks = []
    for block in _blocks(content):
        kind = block.get("type")
        if kind == "tool_result":
            if block.get("tool_use_id") not in group.calls:
                skipped["tool result without its call"] += 1
                continue
            blocks.append(_result(block, skipped))
        elif kind in _USER_BLOCKS and _keepable(block):
            blocks.append(dict(block))
        else:
            skipped[f"{kind} block"] += 1
    if blocks:
        group.messages.append({"role": "user", "content": blocks})


def _result(block: Mapping[str, Any], skipped: Counter[str]) -> dict[str, Any]:
    """A tool result with only the blocks a result can carry (``is_error`` kept:
    the stored text says the error)."""
    result = dict(block)
    content = block.get("content")
    if isinstance(content, list):
        kept = []
        for item in _blocks(content):
            if item.get("type") in _RESULT_BLOCKS and _keepable(item):
                kept.append(dict(item))
            else:
                skipped[f"{item.get('type')} block"] += 1
        result["content"] = kept
    elif content is None:
        result["content"] = ""
    return result


def _keepable(block: Mapping[str, Any]) -> bool:
    """A text block with text, or an image or document whose bytes or URL are in
    the block (one naming a file only Anthropic holds is not)."""
    if block.get("type") == "text":
        return bool(block.get("text"))
    source = block.get("source")
    return isinstance(source, Mapping) and source.get("type") in ("base64", "url")


def _blocks(content: object) -> list[Mapping[str, Any]]:
    """The dict blocks of a message's content (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, Mapping)]


def _transcript(path: Path, group: _Group) -> Transcript:
    return Transcript(
        path=path,
        key=group.key,
        model=group.model or FALLBACK_MODEL,
        format="anthropic",
        header=group.header,
        messages=group.messages,
    )
