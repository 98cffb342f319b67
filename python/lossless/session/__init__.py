"""Session: the object agents are written against (see :class:`Session`).

The class is composed of one layer per concern, each a module of this package:
``_base`` (the state and shared steps), ``_request`` (composing the request),
``_record`` (the write path), ``_turn`` (the model turn and the own loop's calls),
``_session`` (opening, closing, files and the arena's shortcuts); ``_open`` opens
the stores.
"""

from __future__ import annotations

from lossless.formats import MessageFormat
from lossless.results import (
    AnthropicContext,
    BuiltContext,
    Message,
    PartCallback,
    RecordResult,
    ResponsesContext,
    TurnResult,
)
from lossless.session._open import (
    SharedSessionParts,
    flush_search_index,
    session_for_key,
    shared_session_parts,
)
from lossless.session._session import Session

__all__ = [
    "AnthropicContext",
    "BuiltContext",
    "Message",
    "MessageFormat",
    "PartCallback",
    "RecordResult",
    "ResponsesContext",
    "Session",
    "SharedSessionParts",
    "TurnResult",
    "flush_search_index",
    "session_for_key",
    "shared_session_parts",
]
