"""``lossless proxy``: lossless context management for a client that sends its
whole history, without a change to the client (see docs/PROXY.md)."""

from __future__ import annotations

from lossless.proxy._server import LosslessProxy
from lossless.proxy._sessions import SESSION_HEADER

__all__ = ["SESSION_HEADER", "LosslessProxy"]
