"""lossless: bounded context windows for long-running LLM agent sessions,
without ever losing what was said.

Heavy modules (pydantic configuration, the session, litellm) load on first use, so
``import lossless`` and the CLI start fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from lossless import errors
from lossless._native import __version__
from lossless.errors import LosslessError
from lossless.parts import (
    FileRefPart,
    MediaPart,
    Part,
    ProviderCompactionPart,
    ReasoningPart,
    TextPart,
    ToolPart,
)
from lossless.store import Store
from lossless.tokens import TokenCounter, count_tokens, extract_file_ids, merge_file_id_footer

if TYPE_CHECKING:
    from lossless.compaction import CompactionResult
    from lossless.config import Config
    from lossless.events import Event, EventBus, EventName
    from lossless.files import FileHandleResult, LargeFileHandler, StoredFile
    from lossless.operators import AgenticMap, AgentTool, LLMMap, MapResult, MapStream
    from lossless.recall import describe, expand, grep, read
    from lossless.session import (
        AnthropicContext,
        BuiltContext,
        Message,
        MessageFormat,
        RecordResult,
        ResponsesContext,
        Session,
        TurnResult,
        session_for_key,
    )

_LAZY = {
    "AgentTool": "lossless.operators",
    "AgenticMap": "lossless.operators",
    "FileHandleResult": "lossless.files",
    "LLMMap": "lossless.operators",
    "LargeFileHandler": "lossless.files",
    "MapResult": "lossless.operators",
    "MapStream": "lossless.operators",
    "StoredFile": "lossless.files",
    "AnthropicContext": "lossless.session",
    "BuiltContext": "lossless.session",
    "MessageFormat": "lossless.session",
    "ResponsesContext": "lossless.session",
    "CompactionResult": "lossless.compaction",
    "Config": "lossless.config",
    "Event": "lossless.events",
    "EventBus": "lossless.events",
    "EventName": "lossless.events",
    "Message": "lossless.session",
    "RecordResult": "lossless.session",
    "Session": "lossless.session",
    "TurnResult": "lossless.session",
    "describe": "lossless.recall",
    "erase": "lossless.governance",
    "maintain": "lossless.governance",
    "expand": "lossless.recall",
    "grep": "lossless.recall",
    "read": "lossless.recall",
    "session_for_key": "lossless.session",
}

__all__ = [
    "AgentTool",
    "AgenticMap",
    "AnthropicContext",
    "BuiltContext",
    "CompactionResult",
    "Config",
    "Event",
    "EventBus",
    "EventName",
    "FileHandleResult",
    "FileRefPart",
    "LLMMap",
    "LargeFileHandler",
    "LosslessError",
    "MapResult",
    "MapStream",
    "MediaPart",
    "Message",
    "MessageFormat",
    "Part",
    "ProviderCompactionPart",
    "ReasoningPart",
    "RecordResult",
    "ResponsesContext",
    "Session",
    "Store",
    "StoredFile",
    "TextPart",
    "TokenCounter",
    "ToolPart",
    "TurnResult",
    "__version__",
    "count_tokens",
    "describe",
    "erase",
    "errors",
    "expand",
    "extract_file_ids",
    "grep",
    "maintain",
    "merge_file_id_footer",
    "read",
    "session_for_key",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lossless' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
