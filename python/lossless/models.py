"""Model limits and the token budget derived from them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lossless.config import Config, ModelConfig
from lossless.errors import UnknownModelError
from lossless.llm import import_litellm

__all__ = ["Budget", "ModelLimits", "resolve_limits"]


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """Context window and reply reserve of a model."""

    context_limit: int
    max_output_tokens: int


def _model_map_entry(model: str) -> dict[str, Any]:
    litellm = import_litellm()
    try:
        info: dict[str, Any] = dict(litellm.get_model_info(model))
    except Exception as err:
        raise UnknownModelError(
            f"model {model!r} is not in litellm's model map; set config.model.context_limit and "
            "config.model.max_output_tokens for it"
        ) from err
    return info


def resolve_limits(model: str, overrides: ModelConfig) -> ModelLimits:
    """Limits of ``model``: the overrides where given, litellm's model map for the rest.

    litellm is imported only when an override is missing: importing it takes seconds.
    """
    if overrides.context_limit is not None and overrides.max_output_tokens is not None:
        return ModelLimits(overrides.context_limit, overrides.max_output_tokens)
    info = _model_map_entry(model)
    context = overrides.context_limit or info.get("max_input_tokens") or info.get("max_tokens")
    if not context:
        raise UnknownModelError(f"litellm's model map has no context window for {model!r}")
    output = (
        overrides.max_output_tokens
        or info.get("max_output_tokens")
        or min(4_096, int(context) // 4)
    )
    return ModelLimits(int(context), int(output))


@dataclass(frozen=True, slots=True)
class Budget:
    """Token budget of one session's requests.

    ``usable`` is what the assembled history may hold: the window minus the reply
    reserve, the compaction reserve and the system prompt.
    """

    context_limit: int
    max_output_tokens: int
    compaction_reserve: int
    system_tokens: int
    soft_fraction: float
    # Provider tokens per counted token (see :mod:`lossless.calibration`).
    correction: float = 1.0

    @classmethod
    def of(
        cls, limits: ModelLimits, config: Config, system_tokens: int, correction: float = 1.0
    ) -> Budget:
        return cls(
            limits.context_limit,
            limits.max_output_tokens,
            config.compaction.output_budget,
            system_tokens,
            config.compaction.soft_threshold,
            correction,
        )

    @property
    def usable(self) -> int:
        """Counted tokens the history may hold: the provider's room for the prompt,
        in counted tokens, less the system prompt."""
        room = self.context_limit - self.max_output_tokens - self.compaction_reserve
        return max(0, int(room / self.correction) - self.system_tokens)

    @property
    def soft_limit(self) -> int:
        """View size above which a background compaction starts."""
        return int(self.usable * self.soft_fraction)
