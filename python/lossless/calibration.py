"""How far this library's token counts are from a provider's own.

Counts come from tiktoken's tables, which are the real tokenizer only for OpenAI's
models; another provider's tokenizer and chat template can count more. A session
keeps its view within ``window / correction``: until the provider has reported
what a request cost, with a margin; afterwards, with what it reported.
"""

from __future__ import annotations

__all__ = ["UNCALIBRATED_MARGIN", "TokenCalibration", "counts_exactly"]

# Until a provider reported a prompt's cost: room for a tokenizer that counts up to
# 15% more than tiktoken (Anthropic's, Llama's and Gemini's run 5-15% above it on
# English prose and code).
UNCALIBRATED_MARGIN = 1.15
# Above a measured ratio: prompts differ from the one measured.
CALIBRATED_MARGIN = 1.02
# A measured ratio outside these bounds is a broken report, not a tokenizer.
MIN_RATIO, MAX_RATIO = 0.5, 4.0
# OpenAI models whose tokenizer is the one counted with.
_OPENAI_PREFIXES = ("gpt-", "o1", "o3", "o4", "chatgpt-")


def counts_exactly(model: str) -> bool:
    """Whether ``model`` (a litellm name) uses the tokenizer these counts come from."""
    provider, _, name = model.rpartition("/")
    return provider in ("", "openai", "azure") and name.startswith(_OPENAI_PREFIXES)


class TokenCalibration:
    """The correction one session applies to its budget: provider tokens per counted
    token, never below 1.0 (counting high only costs room; counting low overflows).

    ``fixed`` (``Config.model.token_correction``) turns calibration off.
    """

    def __init__(self, model: str, fixed: float | None = None) -> None:
        self._fixed = fixed
        self._ratio: float | None = None
        self._default = 1.0 if counts_exactly(model) else UNCALIBRATED_MARGIN

    @property
    def calibrated(self) -> bool:
        """Whether a provider's report has been taken into account."""
        return self._ratio is not None

    @property
    def correction(self) -> float:
        if self._fixed is not None:
            return self._fixed
        if self._ratio is None:
            return self._default
        return max(1.0, self._ratio * CALIBRATED_MARGIN)

    def observe(self, counted: int, reported: int) -> bool:
        """Takes in a request counted at ``counted`` tokens that the provider reported
        as ``reported``. Returns whether the correction changed. A larger ratio is
        taken at once; a smaller one moves the estimate halfway, so one short prompt
        cannot undo what a long one showed."""
        if self._fixed is not None or counted <= 0 or reported <= 0:
            return False
        ratio = reported / counted
        if not MIN_RATIO <= ratio <= MAX_RATIO:
            return False
        before = self.correction
        if self._ratio is None or ratio >= self._ratio:
            self._ratio = ratio
        else:
            self._ratio = (self._ratio + ratio) / 2
        return self.correction != before
