"""Which session a request belongs to, and the sessions the proxy keeps open.

A client names its conversation with the ``X-Lossless-Session`` header; without
one, a conversation is known by its opening (the endpoint, the system text and the
first message), which every request of it repeats. Requests of one session take
turns; a bounded number of sessions stay open, the least recently used closed first.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from lossless.proxy._routes import Conversation, Route

__all__ = ["SESSION_HEADER", "session_key"]

SESSION_HEADER = "x-lossless-session"


def session_key(route: Route, headers: Mapping[str, str], conversation: Conversation) -> str:
    """The key of the session a request belongs to."""
    named = headers.get(SESSION_HEADER, "").strip()
    if named:
        return named
    opening = [route.format, conversation.system, _plain(conversation.messages[0])]
    digest = hashlib.sha256(json.dumps(opening, sort_keys=True).encode()).hexdigest()
    return f"proxy:{digest[:32]}"


def _plain(message: Any) -> Any:
    dump = getattr(message, "model_dump", None)
    return dump() if callable(dump) else message
