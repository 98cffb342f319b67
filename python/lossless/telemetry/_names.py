"""The names lossless's spans, attributes and metrics carry.

``gen_ai.*`` names follow the OpenTelemetry GenAI semantic conventions (Development
status, as published by the GenAI conventions repository in 2026); ``lossless.*``
names are the library's own figures. docs/TELEMETRY.md lists each with its meaning.
"""

from __future__ import annotations

from typing import Final

# -- GenAI semantic conventions -------------------------------------------------------

OPERATION: Final = "gen_ai.operation.name"
PROVIDER: Final = "gen_ai.provider.name"
REQUEST_MODEL: Final = "gen_ai.request.model"
REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
REQUEST_STREAM: Final = "gen_ai.request.stream"
CONVERSATION: Final = "gen_ai.conversation.id"
FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
CACHE_WRITE_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
TOKEN_TYPE: Final = "gen_ai.token.type"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
MEMORY_RECORDS: Final = "gen_ai.memory.record.count"
MEMORY_QUERY: Final = "gen_ai.memory.query.text"
ERROR_TYPE: Final = "error.type"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"

CHAT: Final = "chat"
EXECUTE_TOOL: Final = "execute_tool"
SEARCH_MEMORY: Final = "search_memory"

#: Histogram boundaries the conventions give for token counts and for durations.
TOKEN_BUCKETS: Final = (
    1,
    4,
    16,
    64,
    256,
    1_024,
    4_096,
    16_384,
    65_536,
    262_144,
    1_048_576,
    4_194_304,
    16_777_216,
    67_108_864,
)
DURATION_BUCKETS: Final = (
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
)
#: A share (0 to 1) in twentieths.
SHARE_BUCKETS: Final = tuple(step / 20 for step in range(1, 21))

# -- lossless's own figures ------------------------------------------------------------

REQUEST_PATH: Final = "lossless.request.path"
REQUEST_FORMAT: Final = "lossless.request.format"
REQUEST_TOKENS: Final = "lossless.request.tokens"
REQUEST_BUDGET: Final = "lossless.request.budget"
REQUEST_STABLE_PREFIX: Final = "lossless.request.stable_prefix_tokens"
REQUEST_PREFIX_REUSE: Final = "lossless.request.prefix_reuse"
REQUEST_ITEMS: Final = "lossless.request.items"
REQUEST_OMITTED: Final = "lossless.request.omitted"
ARENA_TOKENS: Final = "lossless.arena.injected_tokens"
SYNC_MESSAGES: Final = "lossless.sync.messages"
SYNC_STORED: Final = "lossless.sync.stored_messages"
SYNC_FORKED_FROM: Final = "lossless.sync.forked_from"
COMPACTION_TRIGGER: Final = "lossless.compaction.trigger"
COMPACTION_STATUS: Final = "lossless.compaction.status"
COMPACTION_ROUNDS: Final = "lossless.compaction.rounds"
COMPACTION_LEVEL: Final = "lossless.compaction.level"
COMPACTION_LEVELS: Final = "lossless.compaction.levels"
COMPACTION_BEFORE: Final = "lossless.compaction.tokens_before"
COMPACTION_AFTER: Final = "lossless.compaction.tokens_after"
COMPACTION_INVALIDATED: Final = "lossless.compaction.invalidated_tokens"
COMPACTION_SUMMARIES: Final = "lossless.compaction.summaries"
COMPACTION_MESSAGES: Final = "lossless.compaction.messages_covered"
COMPACTION_PRUNED_PARTS: Final = "lossless.compaction.pruned_parts"
COMPACTION_PRUNED_TOKENS: Final = "lossless.compaction.pruned_tokens"
COMPACTION_DURATION: Final = "lossless.compaction.duration"
RECALL_OPERATION: Final = "lossless.recall.operation"
RECALL_RESULTS: Final = "lossless.recall.results"
RECALL_QUERY: Final = "lossless.recall.query"
LINK_ROLE: Final = "lossless.link"

# Span names of lossless's own operations (INTERNAL spans).
CONTEXT_SPAN: Final = "lossless.context"
SYNC_SPAN: Final = "lossless.sync"
USAGE_SPAN: Final = "lossless.report_usage"
COMPACTION_SPAN: Final = "lossless.compaction"
RECALL_SPAN: Final = "lossless.recall"

# Metrics.
TOKEN_USAGE_METRIC: Final = "gen_ai.client.token.usage"
DURATION_METRIC: Final = "gen_ai.client.operation.duration"
REQUEST_TOKENS_METRIC: Final = "lossless.request.tokens"
BUDGET_METRIC: Final = "lossless.request.budget.utilization"
PREFIX_REUSE_METRIC: Final = "lossless.request.prefix_reuse"
COMPACTION_ROUNDS_METRIC: Final = "lossless.compaction.rounds"
COMPACTION_DURATION_METRIC: Final = "lossless.compaction.duration"
INVALIDATED_METRIC: Final = "lossless.compaction.invalidated_tokens"
