"""The demo's configuration and system prompt, shared by its acts."""

from __future__ import annotations

from lossless.config import CompactionConfig, Config, LLMConfig, ModelConfig

__all__ = ["DEMO_CONTEXT_LIMIT", "DEMO_MAX_OUTPUT", "SYSTEM_PROMPT", "demo_config"]

DEMO_CONTEXT_LIMIT = 32_000
DEMO_MAX_OUTPUT = 4_000

SYSTEM_PROMPT = (
    "You are a careful coding agent working on the payhub service. Follow every constraint "
    "the user states, read before you edit, and run the tests after each change."
)


def demo_config(model: str | None, api_base: str | None = None) -> Config:
    """The demo's configuration: a 32k window, compaction scaled to it."""
    return Config(
        model=ModelConfig(context_limit=DEMO_CONTEXT_LIMIT, max_output_tokens=DEMO_MAX_OUTPUT),
        llm=LLMConfig(api_base=api_base, api_key="unused" if api_base else None),
        compaction=CompactionConfig(
            model=model,
            output_budget=4_000,
            summary_max_tokens=1_500,
            prune_protect_tokens=6_000,
            prune_minimum_tokens=2_000,
            model_context_limit=DEMO_CONTEXT_LIMIT if model else None,
        ),
    )
