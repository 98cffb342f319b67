"""Model limits and the token budget derived from them."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import partial

import anyio.to_thread

from lossless.config import Config, ModelConfig
from lossless.errors import UnknownModelError
from lossless.model_map import MAP_FILE, MapEntry, ModelMap, load_model_map

__all__ = ["Budget", "ModelLimits", "resolve_limits", "resolve_limits_async"]


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """Context window and reply reserve of a model."""

    context_limit: int
    max_output_tokens: int


def _not_in_map(model: str, model_map: ModelMap) -> UnknownModelError:
    where = (
        "litellm's model map"
        if len(model_map)
        else f"litellm's model map (no {MAP_FILE} in the installed litellm)"
    )
    return UnknownModelError(
        f"model {model!r} is not in {where}; set config.model.context_limit and "
        "config.model.max_output_tokens for it"
    )


def _registered_entry(model: str) -> MapEntry | None:
    """litellm's own answer, for models registered in this process (``register_model``).

    Asked only when litellm is imported already: importing it takes seconds.
    """
    litellm = sys.modules.get("litellm")
    if litellm is None:
        return None
    try:
        info = dict(litellm.get_model_info(model))
    except Exception:
        return None
    return MapEntry.of(info)


def _map_entry(model: str) -> MapEntry:
    model_map = load_model_map()
    entry = model_map.lookup(model) or _registered_entry(model)
    if entry is None:
        raise _not_in_map(model, model_map)
    return entry


def resolve_limits(model: str, overrides: ModelConfig) -> ModelLimits:
    """Limits of ``model``: the overrides where given, litellm's model map for the rest.

    The map is read from the file litellm ships, without importing litellm (see
    :mod:`lossless.model_map`); the first read takes ~25 ms, so async code calls
    :func:`resolve_limits_async`.
    """
    if overrides.context_limit is not None and overrides.max_output_tokens is not None:
        return ModelLimits(overrides.context_limit, overrides.max_output_tokens)
    entry = _map_entry(model)
    context = overrides.context_limit or entry.max_input_tokens or entry.max_tokens
    if not context:
        raise UnknownModelError(f"litellm's model map has no context window for {model!r}")
    output = overrides.max_output_tokens or entry.max_output_tokens or min(4_096, context // 4)
    return ModelLimits(context, output)


async def resolve_limits_async(model: str, overrides: ModelConfig) -> ModelLimits:
    """:func:`resolve_limits` in a worker thread when the model map is asked."""
    if overrides.context_limit is not None and overrides.max_output_tokens is not None:
        return resolve_limits(model, overrides)
    # The first read parses a 3 MB file, and a name the map lacks may go to litellm,
    # which can make requests (Ollama's server, Hugging Face configs): neither on the loop.
    return await anyio.to_thread.run_sync(partial(resolve_limits, model, overrides))


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
