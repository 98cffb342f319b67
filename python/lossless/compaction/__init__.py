"""Compaction: pruning stale tool output, summarising the oldest span, condensing summaries."""

from lossless.compaction.engine import CompactionEngine, CompactionResult
from lossless.compaction.levels import Candidate, Summariser

__all__ = ["Candidate", "CompactionEngine", "CompactionResult", "Summariser"]
