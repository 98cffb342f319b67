"""The context arena: a budgeted injection of pinned facts, task state, tool
failures, working memory and recall hits in front of a session's history.

Seven zones, filled in this order under one token cap: ``identity``, ``truth``,
``task_state``, ``tool_failures``, ``memory_working``, ``memory_recall``,
``rag_external``. Identity and truth go into the system message; the others go in
one ``<context>`` block right after the newest user message, so the front of every
request stays the same from turn to turn (see ``docs/ARENA.md``).
"""

from lossless.arena._ports import LexicalRecallPort, RecallHit, RecallPort
from lossless.arena._session import SessionArena
from lossless.arena._types import (
    ArenaEntry,
    ArenaWriteResult,
    InjectionReport,
    Priority,
    ZoneInjection,
    ZoneName,
)
from lossless.config import ZONES

__all__ = [
    "ZONES",
    "ArenaEntry",
    "ArenaWriteResult",
    "InjectionReport",
    "LexicalRecallPort",
    "Priority",
    "RecallHit",
    "RecallPort",
    "SessionArena",
    "ZoneInjection",
    "ZoneName",
]
