"""Configuration: one frozen pydantic model per concern, with documented defaults.

Every field has a default that works offline: no compaction model means the
built-in extractive summariser; no model limits means litellm's model map.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "ArenaConfig",
    "CompactionConfig",
    "Config",
    "FilesConfig",
    "LLMConfig",
    "MediaConfig",
    "ModelConfig",
    "OperatorsConfig",
    "RedactionConfig",
    "StoreConfig",
    "TelemetryConfig",
]


# What a conversation call sets itself (llm.py): LLMConfig.params may not name them.
_OWN_CALL_ARGUMENTS = frozenset(
    {
        "model",
        "messages",
        "stream",
        "stream_options",
        "tools",
        "max_tokens",
        "timeout",
        "num_retries",
        "max_retries",
        "api_base",
        "api_key",
        "temperature",
    }
)


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelConfig(_Section):
    """Limits of the conversation model. ``None`` means: ask litellm's model map."""

    context_limit: int | None = Field(default=None, gt=0, description="Context window in tokens.")
    max_output_tokens: int | None = Field(
        default=None, gt=0, description="Tokens reserved for the reply."
    )
    profile: Literal["auto", "default", "strict", "mistral", "llama3", "strictest", "plain"] = (
        Field(
            default="auto",
            description=(
                "How requests are rendered: 'default' suits every hosted provider; 'strict' "
                "alternates roles, 'mistral' adds 9-character call ids, 'llama3' one call per "
                "message, 'strictest' all three, 'plain' also tool exchanges as text. 'auto' "
                "chooses by the model's name on OpenAI-compatible servers, and 'strict' there "
                "for a family it does not know. A request a server refuses with a chat-template "
                "error is sent again with 'strictest', then 'plain', which the session then keeps."
            ),
        )
    )
    token_correction: float | None = Field(
        default=None,
        ge=0.5,
        le=4.0,
        description=(
            "Provider tokens per counted token. None: calibrated from the prompt tokens "
            "the provider reports, with a 15% margin until then (none for OpenAI models, "
            "whose tokenizer is the one counted with)."
        ),
    )


class LLMConfig(_Section):
    """How model calls are made (through litellm)."""

    api_base: str | None = Field(
        default=None, description="Endpoint for OpenAI-compatible servers."
    )
    api_key: str | None = Field(
        default=None, description="Key passed to litellm; None uses its environment."
    )
    timeout_s: float = Field(default=120.0, gt=0, description="Per-request timeout.")
    num_retries: int = Field(
        default=2, ge=0, description="Retries of a call that failed before streaming began."
    )
    retry_backoff_s: float = Field(
        default=0.5, ge=0, description="First retry delay; doubles each retry."
    )
    temperature: float | None = Field(default=None, ge=0, le=2)
    cache_hints: bool = Field(
        default=False,
        description=(
            "Mark the end of the system message, of the summaries and of the history with "
            "Anthropic cache_control breakpoints (litellm passes them on; others ignore them)."
        ),
    )
    params: Mapping[str, Any] = Field(
        default_factory=dict,
        description=(
            "Further keyword arguments of each conversation call, as litellm takes them: "
            "a provider's reasoning settings such as thinking={'type': 'enabled', "
            "'budget_tokens': 2048} or reasoning_effort='high'. The arguments lossless "
            "sets itself (model, messages, stream, tools, max_tokens and the fields above) "
            "are not taken here."
        ),
    )

    @field_validator("params")
    @classmethod
    def _params_leave_own_arguments(cls, params: Mapping[str, Any]) -> Mapping[str, Any]:
        taken = sorted(set(params) & _OWN_CALL_ARGUMENTS)
        if taken:
            raise ValueError(f"set by lossless itself, not through params: {', '.join(taken)}")
        return params


class CompactionConfig(_Section):
    """When and how the context is compacted."""

    enabled: bool = True
    soft_threshold: float = Field(
        default=0.6,
        gt=0,
        le=1,
        description="Fraction of the usable budget that starts a background round.",
    )
    model: str | None = Field(
        default=None,
        description="Summarisation model (litellm name). None: built-in extractive summariser.",
    )
    model_context_limit: int | None = Field(
        default=None,
        gt=0,
        description="Window of the compaction model; None asks litellm's model map.",
    )
    output_budget: int = Field(
        default=8_192, ge=0, description="Tokens of the window kept free for compaction output."
    )
    summary_max_tokens: int = Field(
        default=2_048, gt=0, description="Largest summary one round writes."
    )
    leaf_chunk_tokens: int = Field(
        default=20_000,
        gt=0,
        description=(
            "Most source tokens one leaf summary covers; a round over a longer span writes "
            "several leaves, so expanding any summary to its sources stays a modest read."
        ),
    )
    leaf_concurrency: int = Field(
        default=4, ge=1, description="Model calls for the leaves of one round that run at once."
    )
    reuse_conversation_prefix: bool = Field(
        default=False,
        description=(
            "When the summarisation model is the session's model, send it the session's last "
            "request with the instruction appended, so the provider serves the conversation "
            "from its prompt cache, instead of a transcript under a system message of its own."
        ),
    )
    compact_after_idle_s: float | None = Field(
        default=None,
        gt=0,
        description=(
            "Idle time after which a provider's prompt cache has expired anyway (Anthropic: "
            "300 s): the next model turn first compacts a view above the round's goal, "
            "when the rewrite costs no cache. None: never."
        ),
    )
    condense_max_children: int = Field(
        default=8,
        ge=2,
        description="Most summaries one condensed summary merges (the oldest live ones first).",
    )
    level2_enabled: bool = True
    ledger_model: bool = Field(
        default=True,
        description=(
            "With a summarisation model, also ask it for the ledger's items of each span "
            "it summarises (one call, JSON, each item checked; the built-in rules' stand)."
        ),
    )
    input_fraction: float = Field(
        default=0.75,
        gt=0,
        le=1,
        description="Share of the compaction model's window a transcript may use.",
    )
    level2_message_chars: int = Field(
        default=500, gt=0, description="Level 2 cuts each message to this."
    )
    condense_level3_max_tokens: int | None = Field(
        default=None,
        gt=0,
        description=(
            "Most tokens a deterministic (level-3) condensation keeps; None: the round's "
            "own target, what the goal leaves beside the rest of the view."
        ),
    )
    max_rounds: int = Field(default=4, ge=1, description="Rounds one compaction may run.")
    protect_user_turns: int = Field(
        default=2,
        ge=1,
        description="The protected tail reaches back at most to this many newest user turns.",
    )
    tail_tokens: int | None = Field(
        default=None,
        gt=0,
        description=(
            "Tokens of the newest messages never compacted; None: an eighth of the soft "
            "limit. The newest message is always kept, whatever its size."
        ),
    )
    tail_messages: int = Field(
        default=40, ge=1, description="Newest messages the protected tail may hold at most."
    )
    prune_protect_tokens: int = Field(
        default=40_000, ge=0, description="Newest tool output never pruned."
    )
    prune_minimum_tokens: int = Field(
        default=20_000, ge=0, description="Smallest prune worth writing."
    )
    protected_tools: tuple[str, ...] = Field(
        default=("skill",), description="Tools whose output is never pruned."
    )
    lease_ttl_s: float = Field(
        default=300.0, gt=0, description="How long a crashed holder blocks others."
    )


class StoreConfig(_Section):
    """The SQLite store."""

    synchronous: Literal["normal", "full"] = Field(
        default="normal", description="'normal' survives a process crash; 'full' also power loss."
    )
    busy_timeout_ms: int = Field(default=30_000, ge=0)
    checkpoint_interval_s: float = Field(
        default=0.25,
        gt=0,
        description="A streaming reply's text is written at least this often while it grows.",
    )
    checkpoint_chars: int = Field(
        default=4_096,
        gt=0,
        description="...and whenever it has grown by this many characters since the last write.",
    )
    stream_stale_s: float = Field(
        default=600.0,
        gt=0,
        description=(
            "A reply streamed by a process on another host counts as interrupted when its "
            "owner has not written for this long (a process on this host is asked directly)."
        ),
    )


class FilesConfig(_Section):
    """Large files: content above the threshold is kept outside the context as a reference."""

    inline_threshold: int = Field(
        default=10_000, gt=0, description="Tokens above which a file is referenced."
    )
    max_file_bytes: int = Field(
        default=4 * 1024**3,
        gt=0,
        description="Largest file taken; its bytes are stored compressed, streamed in chunks.",
    )
    outline_max_bytes: int = Field(
        default=1024**2,
        gt=0,
        description=(
            "Bytes of source code outlined with tree-sitter at most (its head, cut at a "
            "top-level line): parsing costs about 70 ms per MB."
        ),
    )
    summary_max_bytes: int = Field(
        default=16 * 1024**2,
        gt=0,
        description=(
            "Bytes of a file its exploration summary parses at most; a larger file's "
            "structure is read from its head, and its token count estimated from it."
        ),
    )


class RedactionConfig(_Section):
    """Secrets replaced before anything is stored (docs/GOVERNANCE.md): on by default
    for high-confidence credentials, with rules of your own beside them."""

    enabled: bool = Field(
        default=True,
        description="Replace secrets in what is stored by `[redacted:<kind>:<fingerprint>]`.",
    )
    defaults: bool = Field(
        default=True,
        description=(
            "Use the built-in rules (provider keys, cloud credentials, forge and chat "
            "tokens, private keys, JWTs, passwords in URLs, secret variables)."
        ),
    )
    rules: tuple[tuple[str, str], ...] = Field(
        default=(),
        description=(
            "Your own rules, each `(kind, pattern)`: a lowercase slug and a regular "
            "expression whose first group (or whole match) is the secret."
        ),
    )


class MediaConfig(_Section):
    """Images and documents: how many of the newest go out inline, and size limits."""

    max_inline: int = Field(
        default=3,
        ge=0,
        description=(
            "Newest images and documents a request sends inline; older ones go as a "
            "one-line reference (Anthropic's computer-use loop keeps three screenshots)."
        ),
    )
    max_inline_tokens: int = Field(
        default=12_000,
        ge=0,
        description="Tokens (the provider's count) the inline ones may take together.",
    )
    max_document_bytes: int = Field(
        default=32 * 1024**2,
        gt=0,
        description="Largest document taken (Anthropic's request limit for a PDF is 32 MB).",
    )
    max_image_bytes: int = Field(
        default=20 * 1024**2,
        gt=0,
        description="Largest image taken (OpenAI's limit per image is 20 MB).",
    )


class OperatorsConfig(_Section):
    """Parallel map operators."""

    llm_map_concurrency: int = Field(
        default=16, gt=0, description="Model calls an LLMMap makes at once."
    )
    agentic_map_concurrency: int = Field(
        default=4, gt=0, description="Sub-sessions an AgenticMap runs at once."
    )


class TelemetryConfig(_Section):
    """OpenTelemetry spans and metrics of a session's work (docs/TELEMETRY.md).

    Off unless enabled; off, nothing of OpenTelemetry is imported and a turn pays one
    check. On, it needs ``opentelemetry-api`` (``pip install 'lossless[otel]'``).
    Never stored with the session: whoever opens a session decides whether it is
    traced, as with ``llm.api_key``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    enabled: bool = Field(
        default=False,
        description=(
            "Emit spans and metrics. Giving a tracer or meter provider turns it on "
            "unless ``enabled=False`` is given as well."
        ),
    )
    tracer_provider: Any = Field(
        default=None,
        exclude=True,
        description=(
            "The TracerProvider spans go to; None: the global one "
            "(``opentelemetry.trace.get_tracer_provider()``), looked up when a session opens."
        ),
    )
    meter_provider: Any = Field(
        default=None,
        exclude=True,
        description="The MeterProvider metrics go to; None: the global one.",
    )
    capture_content: bool = Field(
        default=False,
        description=(
            "Also record what was said: the messages of each request and reply, recall "
            "queries and tool arguments (GenAI opt-in attributes). Off by default: "
            "conversations carry personal data and secrets a trace backend should not hold."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _on_with_a_provider(cls, values: Any) -> Any:
        if (
            isinstance(values, dict)
            and "enabled" not in values
            and (
                values.get("tracer_provider") is not None
                or values.get("meter_provider") is not None
            )
        ):
            return {**values, "enabled": True}
        return values

    @field_validator("tracer_provider")
    @classmethod
    def _tracer_provider(cls, provider: Any) -> Any:
        if provider is not None and not callable(getattr(provider, "get_tracer", None)):
            raise ValueError("expected an OpenTelemetry TracerProvider (with get_tracer)")
        return provider

    @field_validator("meter_provider")
    @classmethod
    def _meter_provider(cls, provider: Any) -> Any:
        if provider is not None and not callable(getattr(provider, "get_meter", None)):
            raise ValueError("expected an OpenTelemetry MeterProvider (with get_meter)")
        return provider


ZoneName = Literal[
    "identity",
    "truth",
    "task_state",
    "tool_failures",
    "memory_working",
    "memory_recall",
    "rag_external",
]

#: The zones in the order the allocator fills them.
ZONES: tuple[ZoneName, ...] = (
    "identity",
    "truth",
    "task_state",
    "tool_failures",
    "memory_working",
    "memory_recall",
    "rag_external",
)

# Each default cap holds what its default source produces: three tool failures of
# 160 tokens with their headers, four recall hits of 200 tokens, working memory up to
# 768 tokens (longer text is cut to the cap when it is set).
_DEFAULT_CAPS: dict[ZoneName, int] = {
    "identity": 512,
    "truth": 1_024,
    "task_state": 512,
    "tool_failures": 640,
    "memory_working": 768,
    "memory_recall": 1_024,
    "rag_external": 768,
}
_DEFAULT_FLOORS: dict[ZoneName, int] = {"truth": 256, "task_state": 128}


class ArenaConfig(_Section):
    """The context arena: pinned facts, task state, tool failures, working memory and
    recall hits injected in front of the history under one token cap."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    enabled: bool = True
    ledger: bool = Field(
        default=True,
        description=(
            "Keep the session ledger: rules, constraints, facts, decisions, preferences, "
            "goals and the tools' records, read from what compaction takes out of the view."
        ),
    )
    ledger_tokens: int = Field(
        default=1_536,
        ge=0,
        description="Tokens the ledger's stable part (rules to preferences) may take in `truth`.",
    )
    ledger_work_tokens: int = Field(
        default=384,
        ge=0,
        description="Tokens its work in progress (goals to files) may take in `task_state`.",
    )
    injection_cap_tokens: int = Field(
        default=4_096,
        ge=0,
        description="Tokens the whole injection may take (less when the window has less free).",
    )
    caps: dict[ZoneName, int] = Field(
        default_factory=lambda: dict(_DEFAULT_CAPS),
        description="Most tokens per zone; zones not named keep their default.",
    )
    floors: dict[ZoneName, int] = Field(
        default_factory=lambda: dict(_DEFAULT_FLOORS),
        description="Tokens a zone with demand gets before the others; zones not named: 0.",
    )
    relax_order: tuple[ZoneName, ...] = Field(
        default=("memory_recall", "tool_failures", "memory_working"),
        description="Zones whose floors give way, in order, when the floors do not fit.",
    )
    floor_cascade: bool = True
    compact_on_floor_unmet: bool = Field(
        default=True, description="Compact the history when even the critical floors do not fit."
    )
    min_cut_tokens: int = Field(
        default=32, ge=1, description="Smallest piece of an entry worth injecting cut."
    )
    max_entries: int = Field(default=4_096, ge=1, description="Live keys a session may hold.")
    degradation_policy: Literal["drop_recall", "drop_low_priority", "force_compact"] = "drop_recall"
    adaptive: bool = Field(default=True, description="Move cap between zones by their use.")
    reset_on_compaction: bool = Field(
        default=False,
        description=(
            "When a compaction round commits a summary, forget the learned caps and "
            "offer once-per-session entries again (their injection may now be summarised)."
        ),
    )
    ema_alpha: float = Field(default=0.3, gt=0, le=1)
    warmup_turns: int = Field(default=3, ge=1)
    step_tokens: int = Field(default=32, gt=0)
    max_shift_tokens: int = Field(default=96, ge=0)
    upshift_truncation_ratio: float = Field(default=0.25, ge=0, le=1)
    downshift_idle_ratio: float = Field(default=0.15, ge=0, le=1)
    tool_failures_kept: int = Field(default=3, ge=0, description="Newest failed tools shown.")
    tool_failure_tokens: int = Field(
        default=160, gt=0, description="A failure's output is cut to this, head and tail."
    )
    recall: bool = Field(default=True, description="Fill memory_recall from the session's store.")
    recall_hits: int = Field(default=4, ge=0)
    recall_hit_tokens: int = Field(default=200, gt=0)
    external_recall: bool = Field(
        default=False,
        description=(
            "Ask `recall_port` (or the built-in lexical port) when internal recall is weak."
        ),
    )
    recall_port: Any = Field(
        default=None,
        exclude=True,
        description="A RecallPort (``search(query, k)``); not stored with the session.",
    )
    external_min_internal_score: float = Field(
        default=0.62,
        ge=0,
        le=1,
        description="External recall runs only when the best internal score is below this.",
    )
    external_hits: int = Field(default=4, ge=1)
    external_timeout_s: float = Field(default=2.0, gt=0)

    @model_validator(mode="after")
    def _limits_consistent(self) -> ArenaConfig:
        for zone, floor in self.floors.items():
            if floor < 0 or floor > self.cap(zone):
                raise ValueError(f"arena.floors[{zone}]: must be between 0 and the zone's cap")
        if any(cap < 0 for cap in self.caps.values()):
            raise ValueError("arena.caps: must not be negative")
        return self

    def cap(self, zone: ZoneName) -> int:
        """The zone's cap; external recall's is 0 while it is off."""
        if zone == "rag_external" and not (self.external_recall or self.recall_port):
            return 0
        return self.caps.get(zone, _DEFAULT_CAPS[zone]) + self.ledger_cap(zone)

    def ledger_cap(self, zone: ZoneName) -> int:
        """The share of the zone's cap the ledger brings (0 without it)."""
        if not self.ledger:
            return 0
        return {"truth": self.ledger_tokens, "task_state": self.ledger_work_tokens}.get(zone, 0)

    def floor(self, zone: ZoneName) -> int:
        return self.floors.get(zone, 0) if self.cap(zone) > 0 else 0


class Config(_Section):
    """Everything a session can be configured with."""

    model: ModelConfig = ModelConfig()
    llm: LLMConfig = LLMConfig()
    compaction: CompactionConfig = CompactionConfig()
    store: StoreConfig = StoreConfig()
    files: FilesConfig = FilesConfig()
    media: MediaConfig = MediaConfig()
    operators: OperatorsConfig = OperatorsConfig()
    arena: ArenaConfig = ArenaConfig()
    redaction: RedactionConfig = RedactionConfig()
    telemetry: TelemetryConfig = Field(
        default=TelemetryConfig(),
        exclude=True,
        description="Spans and metrics; not stored with the session (see TelemetryConfig).",
    )
    doom_loop_threshold: int = Field(
        default=3,
        ge=2,
        description="Identical consecutive tool calls that raise a doom-loop event.",
    )
    recall_max_rounds: int = Field(
        default=4, ge=1, description="Recall tool rounds one send may answer."
    )

    @model_validator(mode="after")
    def _limits_consistent(self) -> Config:
        limit, output = self.model.context_limit, self.model.max_output_tokens
        if (
            limit is not None
            and output is not None
            and limit - output - self.compaction.output_budget <= 0
        ):
            raise ValueError(
                "model.context_limit leaves no usable budget after max_output_tokens and "
                "compaction.output_budget"
            )
        return self
