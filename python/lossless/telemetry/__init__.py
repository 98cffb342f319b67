"""OpenTelemetry spans and metrics of a session's work (``pip install 'lossless[otel]'``).

Turned on per session with ``Config(telemetry=TelemetryConfig(enabled=True))``
(:class:`~lossless.config.TelemetryConfig`); the session then makes a
:class:`SessionTelemetry`, importing this package and OpenTelemetry's API on the
way. With telemetry off, neither is imported. What is emitted, and under which
names, is in docs/TELEMETRY.md.
"""

from __future__ import annotations

try:
    import opentelemetry.metrics
    import opentelemetry.trace  # noqa: F401  (checked here, used by the modules below)
except ImportError as err:  # pragma: no cover - depends on the installation
    raise ImportError(
        "lossless telemetry needs the OpenTelemetry API: pip install 'lossless[otel]'"
    ) from err

from lossless.telemetry._session import RequestSpan, SessionTelemetry, error_type

__all__ = ["RequestSpan", "SessionTelemetry", "error_type"]
