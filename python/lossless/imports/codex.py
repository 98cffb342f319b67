"""Codex CLI rollouts in: ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``.

Each line is ``{"timestamp", "type", "payload"}`` (codex-rs ``RolloutLine``). The
``response_item`` lines are what the model saw and said, OpenAI Responses items;
``session_meta`` says where the session ran, ``turn_context`` which model ran a
turn. ``event_msg`` lines repeat the items for the terminal, and ``compacted``
lines hold Codex's own summary of items the file already has: both are skipped
and counted. Rollouts written before the wrapper existed (a bare session
metadata object first, then bare items and ``record_type`` state lines) read too.

Items become the Responses items ``record_messages(format="responses")`` takes:
``message``, ``reasoning`` (verbatim: summary and encrypted content),
``function_call`` and ``function_call_output`` as they are; a freeform
``custom_tool_call`` (``apply_patch``) as a function call whose arguments are
``{"input": <its text>}``, and a ``local_shell_call`` as a call of ``local_shell``
with its action as arguments, since a stored call's arguments are a JSON object.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lossless.errors import TranscriptError
from lossless.imports._common import Line, Transcript

__all__ = ["parse"]

#: The name a session gets when no ``turn_context`` names the model (rollouts
#: older than it); Codex's default model when those were written.
FALLBACK_MODEL = "gpt-5-codex"
_LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_PARTS = frozenset({"input_text", "output_text", "input_image", "refusal"})
_ROLES = frozenset({"user", "assistant", "developer", "system"})
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def parse(path: Path, lines: list[Line], skipped: Counter[str]) -> list[Transcript]:
    """The one session of a rollout. Raises :class:`TranscriptError` for a line
    whose payload is not an object."""
    meta: Mapping[str, Any] | None = None
    model: str | None = None
    items: list[dict[str, Any]] = []
    calls: set[str] = set()
    for line in lines:
        kind, payload = _unwrap(path, line)
        if kind == "session_meta":
            meta = meta or payload
        elif kind == "turn_context":
            named = payload.get("model")
            model = model or (named if isinstance(named, str) and named else None)
        elif kind == "response_item":
            item = _item(payload, calls, skipped)
            if item is not None:
                items.append(item)
        else:
            skipped[f"{kind} line"] += 1
    session_id = _session_id(path, meta)
    transcript = Transcript(
        path=path,
        key=f"codex:{session_id}",
        model=model or FALLBACK_MODEL,
        format="responses",
        header=_header(session_id, meta or {}),
        messages=items,
        skipped=skipped,
    )
    return [transcript]


def _unwrap(path: Path, line: Line) -> tuple[str, Mapping[str, Any]]:
    """The line's type and payload; a line of the older, unwrapped rollouts gets
    the type its shape says."""
    data = line.data
    kind = data.get("type")
    if "payload" in data:
        payload = data["payload"]
        if kind not in _LINE_TYPES:
            return str(kind), data  # a line type newer than this reader: skipped
        if not isinstance(payload, Mapping):
            raise TranscriptError(
                str(path), line.number, f"the payload of a {kind} line is no object"
            )
        return str(kind), payload
    if "record_type" in data:
        return "state", data
    if isinstance(kind, str):
        return "response_item", data
    if "id" in data and "timestamp" in data:
        return "session_meta", data
    return "unknown", data


def _item(item: Mapping[str, Any], calls: set[str], skipped: Counter[str]) -> dict[str, Any] | None:
    """``item`` as a Responses item lossless stores, or None (counted) when it is
    none such."""
    kind = item.get("type")
    if kind == "message" and item.get("role") in _ROLES:
        content = _parts(item.get("content"), skipped)
        return {"type": "message", "role": item["role"], "content": content} if content else None
    if kind == "reasoning":
        return dict(item)
    call = _call(item)
    if call is not None:
        calls.add(call["call_id"])
        return call
    if kind in ("function_call_output", "custom_tool_call_output"):
        if item.get("call_id") not in calls:
            skipped["output without its call"] += 1
            return None
        output = _output(item.get("output"), skipped)
        return {"type": "function_call_output", "call_id": item["call_id"], "output": output}
    skipped[f"{kind} item"] += 1
    return None


def _call(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """A call of any kind as a ``function_call`` item; None for other items."""
    kind = item.get("type")
    call_id = item.get("call_id") or item.get("id")
    if not isinstance(call_id, str):
        return None
    if kind == "function_call":
        name, arguments = item.get("name"), item.get("arguments")
    elif kind == "custom_tool_call":
        name, arguments = item.get("name"), json.dumps({"input": item.get("input")})
    elif kind == "local_shell_call":
        name, arguments = "local_shell", json.dumps(item.get("action") or {})
    else:
        return None
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def _parts(content: object, skipped: Counter[str]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}] if content else []
    kept = []
    for part in content if isinstance(content, list) else ():
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind in _PARTS and not (kind in ("input_text", "output_text") and not part.get("text")):
            kept.append(dict(part))
        else:
            skipped[f"{kind} part"] += 1
    return kept


def _output(output: object, skipped: Counter[str]) -> str | list[dict[str, Any]]:
    """A call's output: text as it is; content items as parts; the older
    ``{"content", "success"}`` object as its content."""
    if isinstance(output, str):
        return output
    if isinstance(output, Mapping) and isinstance(output.get("content"), str):
        return str(output["content"])
    if isinstance(output, list):
        return _parts(output, skipped) or ""
    return json.dumps(output)


def _session_id(path: Path, meta: Mapping[str, Any] | None) -> str:
    if meta is not None and isinstance(meta.get("id"), str) and meta["id"]:
        return str(meta["id"])
    found = _UUID.findall(path.stem)  # rollout-<time>-<uuid>
    return found[-1] if found else path.stem


def _header(session_id: str, meta: Mapping[str, Any]) -> str:
    """Where the session ran, from its ``session_meta`` (written once, first)."""
    facts = [f"Codex session {session_id}"]
    git = meta.get("git")
    branch = git.get("branch") if isinstance(git, Mapping) else None
    for label, value in (
        ("project", meta.get("cwd")),
        ("git branch", branch),
        ("version", meta.get("cli_version")),
        ("started by", meta.get("originator")),
        ("sub-agent", meta.get("agent_nickname")),
        ("forked from", meta.get("forked_from_id")),
    ):
        if isinstance(value, str) and value:
            facts.append(f"{label}: {value}")
    return "Imported transcript. " + "; ".join(facts) + "."
