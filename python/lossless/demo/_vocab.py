"""Word lists the demo trajectory draws its names and phrases from.

Nothing here may share a word with the recall fact in :mod:`lossless.demo.trajectory`:
the fact is only findable by search if it is the single place those words occur.
"""

from __future__ import annotations

SERVICE = "payhub"

# Each component of the fictional service and the thing it mostly deals with.
DOMAIN_NOUNS: dict[str, str] = {
    "ledger": "entry",
    "payouts": "payout",
    "refunds": "refund",
    "invoices": "invoice",
    "fx": "rate",
    "webhooks": "event",
    "accounts": "account",
    "reconcile": "match",
    "disputes": "dispute",
    "settlements": "settlement",
    "fees": "fee",
    "statements": "statement",
    "kyc": "check",
    "risk": "score",
    "transfers": "transfer",
    "subscriptions": "subscription",
}
DOMAINS: tuple[str, ...] = tuple(DOMAIN_NOUNS)

MODULE_KINDS: tuple[str, ...] = (
    "models",
    "service",
    "client",
    "repository",
    "schemas",
    "handlers",
    "validators",
    "tasks",
    "rounding",
    "limits",
)

VERBS: tuple[str, ...] = (
    "compute",
    "apply",
    "load",
    "validate",
    "normalize",
    "split",
    "merge",
    "post",
    "reverse",
    "settle",
    "schedule",
    "quantize",
    "fetch",
    "persist",
    "emit",
    "lookup",
    "build",
    "cancel",
    "expire",
    "allocate",
    "aggregate",
    "sign",
    "verify",
    "enqueue",
    "resolve",
)

NAME_SUFFIXES: tuple[str, ...] = (
    "",
    "",
    "",
    "batch",
    "lines",
    "totals",
    "for_account",
    "in_minor_units",
    "safely",
    "with_lock",
)

QUALIFIERS: tuple[str, ...] = (
    "rounding",
    "zero_amount",
    "negative_balance",
    "currency_mismatch",
    "retry_backoff",
    "idempotency_key",
    "partial_amount",
    "duplicate_event",
    "dst_boundary",
    "large_batch",
    "empty_cursor",
    "expired_token",
    "missing_account",
    "overflow",
    "concurrent_update",
    "half_even",
    "jpy_minor_units",
    "stale_rate",
    "timeout",
    "unknown_status",
    "not_found",
    "max_limit",
)

CURRENCIES: tuple[str, ...] = ("EUR", "USD", "GBP", "JPY", "CHF", "SEK", "PLN", "BRL", "INR", "KWD")
# Currencies whose minor units differ from the usual 2, the source of many rounding bugs.
MINOR_UNITS: dict[str, int] = {"JPY": 0, "KWD": 3, "CLP": 0, "BHD": 3, "ISK": 0}
STATUSES: tuple[str, ...] = ("pending", "posted", "settled", "reversed", "failed", "held")
ACTIONS: tuple[str, ...] = ("capture", "approve", "reverse", "retry", "settle", "void", "confirm")

MODULE_BLURBS: tuple[str, ...] = (
    "Amounts are Decimal throughout; floats never touch money here.",
    "Every function is safe to call twice with the same idempotency key.",
    "Callers own the database transaction; nothing in this module commits.",
    "Upstream calls go through the shared HTTP client so retries and tracing stay uniform.",
    "Times are timezone-aware UTC; naive datetimes are rejected at the boundary.",
    "Keep this module free of FastAPI imports so the batch jobs can reuse it.",
    "Minor units come from payhub.core.money, never from a hard-coded 2.",
    "The nightly job and the HTTP handlers both call into this module.",
)
