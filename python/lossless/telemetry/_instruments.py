"""The tracer and the metric instruments a session's telemetry records with.

Instruments are made once per meter provider and shared by every session that
reports to it: the API's stand-in provider (before an SDK is installed) keeps every
instrument made through it, so one set per session would grow with the sessions.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.metrics import Counter, Histogram, Meter
from opentelemetry.trace import Tracer

from lossless._native import __version__
from lossless.telemetry import _names as n

__all__ = ["Instruments", "instruments_for", "tracer_for"]

_SCOPE = "lossless"

_made: weakref.WeakKeyDictionary[Any, Instruments] = weakref.WeakKeyDictionary()


@dataclass(frozen=True, slots=True)
class Instruments:
    """Every metric a session records."""

    token_usage: Histogram
    operation_duration: Histogram
    request_tokens: Histogram
    budget_utilization: Histogram
    prefix_reuse: Histogram
    compaction_rounds: Counter
    compaction_duration: Histogram
    invalidated_tokens: Histogram

    @classmethod
    def of(cls, meter: Meter) -> Instruments:
        tokens = list(n.TOKEN_BUCKETS)
        share = list(n.SHARE_BUCKETS)
        durations = list(n.DURATION_BUCKETS)
        return cls(
            token_usage=meter.create_histogram(
                n.TOKEN_USAGE_METRIC,
                unit="{token}",
                description="Input and output tokens of the model calls lossless makes.",
                explicit_bucket_boundaries_advisory=tokens,
            ),
            operation_duration=meter.create_histogram(
                n.DURATION_METRIC,
                unit="s",
                description="Duration of the model calls lossless makes.",
                explicit_bucket_boundaries_advisory=durations,
            ),
            request_tokens=meter.create_histogram(
                n.REQUEST_TOKENS_METRIC,
                unit="{token}",
                description="Tokens of each request lossless assembles, as it counts them.",
                explicit_bucket_boundaries_advisory=tokens,
            ),
            budget_utilization=meter.create_histogram(
                n.BUDGET_METRIC,
                unit="1",
                description="Share of the session's request budget each request takes.",
                explicit_bucket_boundaries_advisory=share,
            ),
            prefix_reuse=meter.create_histogram(
                n.PREFIX_REUSE_METRIC,
                unit="1",
                description=(
                    "Share of each request's tokens repeated from the start of the "
                    "previous request (what a provider's prompt cache can serve)."
                ),
                explicit_bucket_boundaries_advisory=share,
            ),
            compaction_rounds=meter.create_counter(
                n.COMPACTION_ROUNDS_METRIC,
                unit="{round}",
                description="Compaction rounds run.",
            ),
            compaction_duration=meter.create_histogram(
                n.COMPACTION_DURATION_METRIC,
                unit="s",
                description="Duration of each compaction (its rounds under one lease).",
                explicit_bucket_boundaries_advisory=durations,
            ),
            invalidated_tokens=meter.create_histogram(
                n.INVALIDATED_METRIC,
                unit="{token}",
                description=(
                    "Tokens of the last request a provider's prompt cache can no longer "
                    "serve after a compaction changed the view."
                ),
                explicit_bucket_boundaries_advisory=tokens,
            ),
        )


def instruments_for(meter_provider: Any) -> Instruments:
    """The instruments of ``meter_provider`` (None: the global one), made on first use."""
    provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
    found = _made.get(provider)
    if found is None:
        found = Instruments.of(provider.get_meter(_SCOPE, __version__))
        _made[provider] = found
    return found


def tracer_for(tracer_provider: Any) -> Tracer:
    """The tracer of ``tracer_provider`` (None: the global one, which follows a
    provider installed later)."""
    return trace.get_tracer(_SCOPE, __version__, tracer_provider=tracer_provider)
