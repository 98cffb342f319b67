"""Deterministic demo data: a long, realistic coding-agent trajectory."""

from __future__ import annotations

from lossless.demo.trajectory import (
    RECALL_FACT,
    RECALL_QUERY,
    RECALL_TURN,
    Turn,
    generate_trajectory,
)

__all__ = ["RECALL_FACT", "RECALL_QUERY", "RECALL_TURN", "Turn", "generate_trajectory"]
