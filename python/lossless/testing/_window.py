"""A configuration whose window a short conversation outgrows, for tests, examples
and the demo that show what happens past the window."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lossless.config import Config


def small_window(context_limit: int = 4_000, max_output_tokens: int = 300) -> Config:
    """A :class:`~lossless.config.Config` with a ``context_limit``-token window,
    ``max_output_tokens`` kept for the reply and no tokens set apart for a summary's
    output, so a dozen tool results of a few hundred tokens outgrow it."""
    from lossless.config import CompactionConfig, Config, ModelConfig

    return Config(
        model=ModelConfig(context_limit=context_limit, max_output_tokens=max_output_tokens),
        compaction=CompactionConfig(output_budget=0),
    )
