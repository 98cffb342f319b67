"""What one compaction reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from lossless.ledger import LedgerUpdate

__all__ = ["CompactionResult", "Status"]

Status = Literal["completed", "not_needed", "stalled", "busy", "aborted", "failed"]


@dataclass
class CompactionResult:
    """What one call of :meth:`CompactionEngine.run_compaction` did."""

    session_id: str
    status: Status = "completed"
    reason: str = ""
    rounds: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    summary_ids: list[str] = field(default_factory=list)
    levels: list[int] = field(default_factory=list)
    messages_covered: int = 0
    pruned_parts: int = 0
    pruned_tokens: int = 0
    duration_s: float = 0.0
    error: str | None = None
    # Why lower levels were skipped on the way to the ones in ``levels``.
    attempts: list[str] = field(default_factory=list)
    # Tokens of the session's last request a provider's prompt cache can no longer
    # serve after this compaction (what follows the first place it changed); None
    # when it changed nothing or no request was sent yet.
    invalidated_tokens: int | None = None
    # What reading the messages this compaction took out of the view did to the
    # session's ledger; None when it committed nothing or the ledger is off.
    ledger: LedgerUpdate | None = None
