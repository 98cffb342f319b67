"""Type stubs for the native core (``lossless._native``).

The module is private: use the ``lossless`` package. Part dicts use the wire
format of :func:`lossless.parts.part_to_wire`.
"""

import os
from typing import Any, Literal, Self, TypeAlias, final, overload

from lossless.config import ZoneName as _ZoneName

# Payloads in a wire format rather than results: each is a JSON object whose shape
# is the format's, open by design.
#: A part as `lossless.parts.part_to_wire` writes it: ``kind`` and the fields of
#: that kind (the kinds are `PART_KINDS`).
_WirePart: TypeAlias = dict[str, Any]
#: A message in the OpenAI Chat Completions format.
_ChatMessage: TypeAlias = dict[str, Any]
#: A provider's usage object, as its response reported it.
_ProviderUsage: TypeAlias = dict[str, Any]

class _ByName:
    """What every result class answers beside its attributes: reading a field by
    name, as the dict it replaced did."""

    def __getitem__(self, key: str, /) -> Any: ...
    def get(self, key: str, default: Any = None, /) -> Any: ...
    def keys(self) -> list[str]: ...

__all__ = [
    "MARKER_TOKENS",
    "MIN_SUMMARY_TOKENS",
    "PART_KINDS",
    "SUMMARY_FRAMING_TOKENS",
    "WELL_SHRUNK_DIVISOR",
    "AppendResult",
    "ArenaEntryRow",
    "ArenaObservedRow",
    "ArenaPlanRow",
    "ArenaRules",
    "ArenaWriteRow",
    "CommitResult",
    "DagRow",
    "ErasureReceipt",
    "EventRow",
    "ExpandedRow",
    "ExpansionRow",
    "ExtractiveCommitResult",
    "FileRecord",
    "FileScan",
    "ForkRow",
    "GrepRow",
    "ItemUnits",
    "LedgerItemRow",
    "LedgerUpdateResult",
    "LexicalIndex",
    "MapOutcome",
    "MapRun",
    "MessagePageRow",
    "MessageRecord",
    "PruneResult",
    "RecallHitRow",
    "RequestPrint",
    "RetentionRuleRow",
    "RoundCommit",
    "RoundResult",
    "RoundRules",
    "SessionInfo",
    "SessionRow",
    "Span",
    "SpanTextResult",
    "Store",
    "StoreStats",
    "StreamRow",
    "SummaryRow",
    "TextResult",
    "TokenCounter",
    "TurnAppendResult",
    "ViewItemRow",
    "ViewStats",
    "ZoneReportRow",
    "ZoneReports",
    "__version__",
    "check_compaction_payload",
    "check_reasoning_payload",
    "check_summary",
    "child_sessions",
    "count_tokens",
    "create_child_session",
    "create_map",
    "enable_postgres_tenants",
    "encoding_for_model",
    "encrypt_database",
    "export_file",
    "extract_file_ids",
    "file_record",
    "format_request",
    "image_tokens",
    "item_session",
    "ledger_subject",
    "map_inputs",
    "map_outcomes",
    "map_run",
    "media_facts",
    "merge_file_id_footer",
    "model_provider",
    "normalize_usage",
    "prepare_postgres",
    "read_file",
    "record_map_outcome",
    "scan_file",
    "store_file",
    "sync_chain",
    "with_kept",
]

__version__: str
# Tokens an assembly reserves for its lead marker (messages left out, or a
# conversation that does not open with a user message).
MARKER_TOKENS: int
# The part kinds the core declares, in their order (see `lossless.parts.PART_TYPES`).
PART_KINDS: list[str]
# The smallest summary a round writes, and what a summary costs in the view beyond
# its text (its header and message framing).
MIN_SUMMARY_TOKENS: int
SUMMARY_FRAMING_TOKENS: int
WELL_SHRUNK_DIVISOR: int

def count_tokens(text: str, model: str) -> int:
    """Tokens in ``text`` under the encoding of ``model``."""

def encoding_for_model(model: str) -> str:
    """Name of the BPE encoding used for ``model`` (``o200k_base`` or ``cl100k_base``)."""

def check_reasoning_payload(payload: str, field: str) -> None:
    """Raises ``InvalidInputError`` naming ``field`` for a reasoning block (its JSON
    text) the store would refuse."""

def check_compaction_payload(payload: str, field: str) -> None:
    """Raises ``InvalidInputError`` naming ``field`` for a provider's compaction block
    (its JSON text) the store would refuse."""

def model_provider(model: str) -> str:
    """The provider requests for ``model`` go to, as litellm names it (``anthropic``
    for ``anthropic/…`` and bare ``claude-…`` names, ``bedrock``, ``openai``, ...)."""

def image_tokens(width: int, height: int, model: str, detail: str | None = None) -> int:
    """Tokens a ``width``×``height`` image costs the provider ``model`` is routed to,
    by its published rule (Anthropic, OpenAI with ``detail``, Gemini)."""

def media_facts(
    data: bytes, media_type: str | None, field: str
) -> tuple[str, str, int | None, int | None, int | None]:
    """``(kind, media_type, width, height, pages)`` of an image's or a document's
    bytes, read from their header; raises ``InvalidInputError`` naming ``field`` for
    bytes that are no PNG, JPEG, GIF, WebP or PDF, or disagree with ``media_type``."""

def extract_file_ids(text: str) -> list[str]:
    """File ids (``file_`` + 8 to 32 hex digits, on word boundaries), unique, in order."""

def merge_file_id_footer(text: str, file_ids: list[str]) -> str:
    """``text`` with a ``[LCM File IDs: ...]`` footer holding its own ids and ``file_ids``."""

def check_summary(summary: str, extractive: str, prompt: str) -> tuple[list[str], float, float]:
    """The constraints and identifiers of ``extractive`` (the built-in summary of the
    same messages) that ``summary`` left out, the share of ``summary``'s phrases found
    in ``prompt``, and the share of its phrases that repeat an earlier one."""

def with_kept(summary: str, missing: list[str]) -> str:
    """``summary`` with ``missing`` appended in a section of their own."""

@final
class TokenCounter:
    def __new__(cls, model: str, correction: float = 1.0) -> Self: ...
    @property
    def model(self) -> str: ...
    @property
    def encoding(self) -> str: ...
    @property
    def correction(self) -> float: ...
    def count(self, text: str) -> int: ...
    def count_many(self, texts: list[str]) -> list[int]: ...

@final
class RoundRules:
    """The limits of one compaction round: where it aims the view (``goal``, half the
    soft limit), the protected tail (``tail_tokens`` defaults to an eighth of the soft
    limit), what a prune must save and how large a summary may be."""

    def __new__(
        cls,
        soft_limit: int,
        *,
        tail_tokens: int | None = None,
        tail_messages: int,
        user_turns: int,
        prune_protect_tokens: int,
        prune_minimum_tokens: int,
        protected_tools: list[str],
        summary_max_tokens: int,
        leaf_chunk_tokens: int = 20_000,
        usable: int | None = None,
    ) -> Self: ...
    @property
    def soft_limit(self) -> int: ...
    @property
    def leaf_chunk_tokens(self) -> int:
        """The most source tokens one leaf summary covers."""
    @property
    def goal(self) -> int: ...
    @property
    def tail_tokens(self) -> int: ...
    @property
    def tail_messages(self) -> int: ...
    @property
    def user_turns(self) -> int: ...
    @property
    def min_summary(self) -> int:
        """The smallest summary a round of these rules asks for: 128 tokens, or a
        quarter of the goal in a smaller window (at least 32)."""
    def leaf_runs(self, span: Span) -> list[tuple[Span, int]]:
        """The runs of ``span`` that leaf summaries cover (at most
        ``leaf_chunk_tokens`` of messages each), oldest first, each with its summary
        budget: its share of the room the goal leaves, or a tenth of its own size."""
    def leaf_ceiling(self, target: int, input_tokens: int, condensable: bool) -> int:
        """The most text tokens (file-id footer aside) a model's leaf summary of
        ``input_tokens`` may hold when asked for ``target``: more than the target
        when it shrinks its input to a quarter and the round can condense after."""
    def condense_target(self, view_tokens: int, merged_tokens: int) -> int:
        """The text tokens a condensed summary of live summaries holding
        ``merged_tokens`` of a ``view_tokens`` view may take: what the goal leaves,
        at most half of what it merges."""
    @staticmethod
    def shrinks(summary_tokens: int, covered_tokens: int) -> bool:
        """Whether a summary of ``summary_tokens`` costs the view less than the
        ``covered_tokens`` it replaces, framing included."""

@final
class ViewStats:
    """The sizes of a session's view. Also read by name (``stats["tokens"]``)."""

    @property
    def items(self) -> int: ...
    @property
    def message_items(self) -> int: ...
    @property
    def summary_items(self) -> int: ...
    @property
    def tokens(self) -> int: ...
    @property
    def summary_tokens(self) -> int: ...
    @property
    def version(self) -> int:
        """Raised by every write that changes the view."""
    @property
    def instruction_tokens(self) -> int:
        """Tokens of the newest user message; 0 without one."""
    def __getitem__(self, key: str, /) -> int: ...
    def get(self, key: str, default: Any = None, /) -> Any: ...
    def keys(self) -> list[str]: ...

# A result below is also read by name, as the dict the call returned before it had
# a type of its own: ``row["id"]``, ``row.get("id")``, ``row.keys()``, ``dict(row)``.

@final
class SessionInfo(_ByName):
    """A session's row, as ``Store.get_session`` reads it."""

    @property
    def id(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def created_at(self) -> int: ...
    @property
    def config_json(self) -> str: ...
    @property
    def system_prompt(self) -> str | None: ...

@final
class LedgerItemRow(_ByName):
    """One value of a ledger subject: its ``kind``, ``text`` and ``origin``
    (extracted, model or caller), whether it ``changed`` an earlier value or
    ``removed`` the subject, where it came from (``seq``, ``message_ids``) and where
    the subject was first seen (``first_seq``)."""

    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def subject(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def origin(self) -> str: ...
    @property
    def changed(self) -> bool: ...
    @property
    def removed(self) -> bool: ...
    @property
    def seq(self) -> int: ...
    @property
    def first_seq(self) -> int: ...
    @property
    def ord(self) -> int: ...
    @property
    def message_ids(self) -> list[str]: ...

@final
class LedgerUpdateResult(_ByName):
    """What a write to the ledger did: values ``added`` (of which ``changed``
    replaced one), subjects ``removed``, whether the request's ledger text changed
    (``rendered``), the tokens of its two parts, what was left out for room
    (``(kind, count)`` pairs) and how far the messages have been read into it."""

    @property
    def added(self) -> int: ...
    @property
    def changed(self) -> int: ...
    @property
    def removed(self) -> int: ...
    @property
    def rendered(self) -> bool: ...
    @property
    def stable_tokens(self) -> int: ...
    @property
    def volatile_tokens(self) -> int: ...
    @property
    def left_out(self) -> list[tuple[str, int]]: ...
    @property
    def absorbed_seq(self) -> int: ...

@final
class ErasureReceipt(_ByName):
    """One erasure: what (``target_kind``, ``target``), by whom, why and when, the
    JSON ``counts`` of what went, and whether the bytes were scrubbed after it."""

    @property
    def id(self) -> str: ...
    @property
    def target_kind(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def erased_by(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def erased_at(self) -> int: ...
    @property
    def counts(self) -> str: ...
    @property
    def scrubbed(self) -> bool: ...

@final
class RetentionRuleRow(_ByName):
    """A time to live in force for a ``session`` or a ``subject``."""

    @property
    def target_kind(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def ttl_ms(self) -> int: ...

@final
class ForkRow(_ByName):
    """Where a fork joins its parent: the parent's last shared message seq and the
    first position of a handed-over history the fork holds itself."""

    @property
    def session_id(self) -> str: ...
    @property
    def parent_id(self) -> str: ...
    @property
    def fork_seq(self) -> int: ...
    @property
    def sync_from(self) -> int: ...
    @property
    def created_at(self) -> int: ...

@final
class SessionRow(_ByName):
    """A session as listed: its row with its message and summary counts."""

    @property
    def id(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def created_at(self) -> int: ...
    @property
    def messages(self) -> int: ...
    @property
    def summaries(self) -> int: ...

@final
class StreamRow(_ByName):
    """A reply still streaming."""

    @property
    def message_id(self) -> str: ...
    @property
    def owner(self) -> str | None:
        """Who streams it; None for a reply begun before checkpoints existed."""
    @property
    def beat_at(self) -> int | None:
        """When its owner last wrote a checkpoint (ms since the epoch)."""
    @property
    def chars(self) -> int:
        """Characters of text checkpointed so far."""

@final
class AppendResult(_ByName):
    """A message just written: its id, place in the session, tokens and part ids."""

    @property
    def id(self) -> str: ...
    @property
    def seq(self) -> int: ...
    @property
    def token_count(self) -> int: ...
    @property
    def part_ids(self) -> list[str]: ...
    @property
    def redacted(self) -> list[tuple[str, int]]: ...

@final
class TurnAppendResult(_ByName):
    """A turn just written, as ``AppendResult``, with the view's size in tokens read
    right after in the same call."""

    @property
    def id(self) -> str: ...
    @property
    def seq(self) -> int: ...
    @property
    def token_count(self) -> int: ...
    @property
    def part_ids(self) -> list[str]: ...
    @property
    def redacted(self) -> list[tuple[str, int]]: ...
    @property
    def view_tokens(self) -> int: ...

@final
class MessageRecord(_ByName):
    """A stored message with its usage and its parts, each part the wire dict
    :func:`lossless.parts.part_from_wire` reads."""

    @property
    def id(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def seq(self) -> int: ...
    @property
    def role(self) -> str: ...
    @property
    def status(self) -> Literal["complete", "streaming", "incomplete"]:
        """As the schema allows: a reply still streaming, or one that ended early."""
    @property
    def created_at(self) -> int: ...
    @property
    def model(self) -> str | None: ...
    @property
    def token_count(self) -> int | None: ...
    @property
    def input_tokens(self) -> int | None: ...
    @property
    def output_tokens(self) -> int | None: ...
    @property
    def cost(self) -> float | None: ...
    @property
    def finish_reason(self) -> str | None: ...
    @property
    def parts(self) -> list[_WirePart]: ...

@final
class EventRow(_ByName):
    """One event of a session's tape, its payload as JSON text."""

    @property
    def id(self) -> str: ...
    @property
    def seq(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def payload_json(self) -> str: ...
    @property
    def created_at(self) -> int: ...

@final
class StoreStats:
    """Counts over the whole database."""

    @property
    def sessions(self) -> int: ...
    @property
    def messages(self) -> int: ...
    @property
    def parts(self) -> int: ...
    @property
    def summaries(self) -> int: ...
    @property
    def live_summaries(self) -> int: ...
    @property
    def compactions(self) -> int: ...
    @property
    def tokens_stored(self) -> int: ...
    @property
    def tokens_in_view(self) -> int: ...
    @property
    def tombstones(self) -> int: ...
    @property
    def events(self) -> int: ...
    def __getitem__(self, key: str, /) -> int: ...
    def get(self, key: str, default: Any = None, /) -> Any: ...
    def keys(self) -> list[str]: ...

@final
class FileScan(_ByName):
    """One streamed pass over a file: its hash and id, its size, and its content's kind."""

    @property
    def sha256(self) -> str: ...
    @property
    def file_id(self) -> str: ...
    @property
    def bytes(self) -> int: ...
    @property
    def lines(self) -> int: ...
    @property
    def has_nul(self) -> bool: ...
    @property
    def utf8(self) -> bool: ...

@final
class FileRecord(_ByName):
    """A stored file: its reference (path, type, tokens, summary) and its bytes' size."""

    @property
    def file_id(self) -> str: ...
    @property
    def content_hash(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def file_type(self) -> str: ...
    @property
    def token_count(self) -> int: ...
    @property
    def summary(self) -> str: ...
    @property
    def created_at(self) -> int: ...
    @property
    def byte_count(self) -> int: ...
    @property
    def line_count(self) -> int: ...
    @property
    def stored_bytes(self) -> int: ...
    @property
    def is_text(self) -> bool: ...

@final
class MapRun(_ByName):
    """A map run: its kind, parent, spec and item count."""

    @property
    def map_id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def parent_id(self) -> str | None: ...
    @property
    def spec(self) -> str: ...
    @property
    def item_count(self) -> int: ...
    @property
    def created_at(self) -> int: ...

@final
class MapOutcome(_ByName):
    """One finished attempt at an item of a run: a success or a failure."""

    @property
    def idx(self) -> int: ...
    @property
    def succeeded(self) -> bool: ...
    @property
    def output(self) -> str | None: ...
    @property
    def error_kind(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def attempts(self) -> int: ...
    @property
    def usage(self) -> str: ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def created_at(self) -> int: ...

@final
class GrepRow(_ByName):
    """A part or summary that matched a search, with the summaries covering it."""

    @property
    def session_id(self) -> str: ...
    @property
    def owner_kind(self) -> Literal["message", "summary"]: ...
    @property
    def owner_id(self) -> str: ...
    @property
    def part_id(self) -> str | None: ...
    @property
    def snippet(self) -> str: ...
    @property
    def rank(self) -> float: ...
    @property
    def covering_summary_id(self) -> str | None: ...
    @property
    def leaf_summary_id(self) -> str | None: ...

@final
class DagRow(_ByName):
    """A summary of the DAG: its row, whether it is in the view, and what it covers."""

    @property
    def id(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def kind(self) -> Literal["leaf", "condensed"]: ...
    @property
    def level(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def token_count(self) -> int: ...
    @property
    def span_start_seq(self) -> int: ...
    @property
    def span_end_seq(self) -> int: ...
    @property
    def message_count(self) -> int: ...
    @property
    def depth(self) -> int: ...
    @property
    def file_ids(self) -> list[str]: ...
    @property
    def created_at(self) -> int: ...
    @property
    def superseded_by(self) -> str | None: ...
    @property
    def live(self) -> bool: ...
    @property
    def source_kind(self) -> Literal["message", "summary"]: ...
    @property
    def sources(self) -> list[str]: ...

@final
class ExpandedRow(_ByName):
    """One source message of an expansion, written out as text."""

    @property
    def id(self) -> str: ...
    @property
    def seq(self) -> int: ...
    @property
    def role(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def tokens(self) -> int: ...

@final
class ExpansionRow(_ByName):
    """A window of a summary's source messages, with what lies before and after it."""

    @property
    def summary_id(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def messages(self) -> list[ExpandedRow]: ...
    @property
    def tokens(self) -> int: ...
    @property
    def total_messages(self) -> int: ...
    @property
    def omitted_messages(self) -> int: ...
    @property
    def messages_before(self) -> int: ...
    @property
    def messages_after(self) -> int: ...
    @property
    def focus_id(self) -> str | None: ...
    @property
    def before_cursor(self) -> str | None: ...
    @property
    def after_cursor(self) -> str | None: ...
    @property
    def note(self) -> str: ...

@final
class MessagePageRow(_ByName):
    """A page of one message written out whole; ``next_cursor`` is None on the last."""

    @property
    def message_id(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def seq(self) -> int: ...
    @property
    def role(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def parts(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def tokens(self) -> int: ...
    @property
    def cursor(self) -> int: ...
    @property
    def total_chars(self) -> int: ...
    @property
    def next_cursor(self) -> int | None: ...

@final
class PruneResult:
    """What a prune pass did: the tool outputs it could tombstone, those it did, and
    the tokens the view shrank by."""

    @property
    def candidates(self) -> int: ...
    @property
    def pruned_parts(self) -> int:
        """Tool outputs tombstoned (0 when the pass saved too little to write)."""
    @property
    def tokens_saved(self) -> int: ...
    def __getitem__(self, key: str, /) -> int: ...
    def get(self, key: str, default: Any = None, /) -> Any: ...
    def keys(self) -> list[str]: ...

@final
class TextResult(_ByName):
    """A text written from messages named by a list of ids (or from summaries), with
    the ids of the messages it covers. ``in`` answers whether it has a key."""

    @property
    def text(self) -> str: ...
    @property
    def token_count(self) -> int: ...
    @property
    def message_count(self) -> int: ...
    @property
    def file_ids(self) -> list[str]: ...
    @property
    def message_ids(self) -> list[str]: ...
    def __contains__(self, key: object, /) -> bool: ...

@final
class SpanTextResult(_ByName):
    """A text written from a span: it covers ``span.head(message_count)`` and, unlike
    :class:`TextResult`, has no ``message_ids``. ``in`` answers whether it has a key."""

    @property
    def text(self) -> str: ...
    @property
    def token_count(self) -> int: ...
    @property
    def message_count(self) -> int: ...
    @property
    def file_ids(self) -> list[str]: ...
    def __contains__(self, key: object, /) -> bool: ...

@final
class SummaryRow(_ByName):
    """A summary still in its session's view, as ``Store.live_summaries`` lists it."""

    @property
    def id(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def kind(self) -> Literal["leaf", "condensed"]: ...
    @property
    def level(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def token_count(self) -> int: ...
    @property
    def span_start_seq(self) -> int: ...
    @property
    def span_end_seq(self) -> int: ...
    @property
    def message_count(self) -> int: ...
    @property
    def depth(self) -> int: ...
    @property
    def file_ids(self) -> list[str]: ...
    @property
    def created_at(self) -> int: ...
    @property
    def superseded_by(self) -> str | None: ...

@final
class CommitResult(_ByName):
    """A committed summary: its id and size, the view's size before and after, the
    messages it covers and the file ids of its footer."""

    @property
    def summary_id(self) -> str: ...
    @property
    def token_count(self) -> int: ...
    @property
    def tokens_before(self) -> int: ...
    @property
    def tokens_after(self) -> int: ...
    @property
    def messages_covered(self) -> int: ...
    @property
    def file_ids(self) -> list[str]: ...

@final
class ExtractiveCommitResult(_ByName):
    """A span's built-in summary and its commit."""

    @property
    def text(self) -> str: ...
    @property
    def token_count(self) -> int: ...
    @property
    def message_count(self) -> int: ...
    @property
    def file_ids(self) -> list[str]: ...
    @property
    def committed(self) -> CommitResult | None:
        """None when the summary did not fit its budget or would not shrink the view."""

@final
class RoundCommit(_ByName):
    """A leaf summary a compaction round committed: the commit, with its level and the
    messages it covers."""

    @property
    def summary_id(self) -> str: ...
    @property
    def token_count(self) -> int: ...
    @property
    def tokens_before(self) -> int: ...
    @property
    def tokens_after(self) -> int: ...
    @property
    def messages_covered(self) -> int: ...
    @property
    def file_ids(self) -> list[str]: ...
    @property
    def level(self) -> int: ...
    @property
    def messages(self) -> int: ...

@final
class RoundResult(_ByName):
    """A round's store work up to its first model call (``Store.compaction_round``)."""

    @property
    def pruned(self) -> PruneResult: ...
    @property
    def span(self) -> Span | None:
        """The span for the model; None when the round's store work is finished."""
    @property
    def target(self) -> int:
        """The span's summary budget (0 when no span was read)."""
    @property
    def span_messages(self) -> int:
        """Messages in the span the round read (0 when it ended at the prune)."""
    @property
    def committed(self) -> list[RoundCommit]:
        """The leaf summaries the round committed, oldest first."""
    @property
    def attempts(self) -> list[str]:
        """Why the built-in levels committed nothing, level by level."""
    @property
    def view_after(self) -> int | None:
        """The view's size read after the round's last write, when the round's store
        work is finished."""
    @property
    def saved(self) -> int:
        """Tokens the round took out of the view."""

@final
class Span:
    """The oldest unprotected run of messages in a view: what the next summary covers.

    Methods that take message ids take a span too; their results then give
    ``message_count`` (the covered messages are ``span.head(message_count)``)
    instead of a list of ids.
    """

    @property
    def session_id(self) -> str: ...
    @property
    def message_ids(self) -> list[str]: ...
    @property
    def message_count(self) -> int: ...
    @property
    def tokens(self) -> int: ...
    @property
    def first_seq(self) -> int: ...
    @property
    def last_seq(self) -> int: ...
    @property
    def view_version(self) -> int: ...
    @property
    def view_tokens(self) -> int: ...
    @property
    def summary_ids(self) -> list[str]: ...
    @property
    def summary_tokens(self) -> int: ...
    def chunks(self, max_tokens: int) -> list[Span]:
        """The runs of the span that leaf summaries of at most ``max_tokens`` of source
        each cover, oldest first."""
    def head(self, count: int) -> Span: ...
    def __len__(self) -> int: ...

@final
class ArenaRules:
    """A session's arena configuration, converted once."""

    def __new__(
        cls,
        floors: list[int],
        caps: list[int],
        *,
        relax_order: list[str],
        cascade: bool,
        min_cut_tokens: int,
        max_entries: int,
        policy: str,
        adaptive: bool,
        alpha: float,
        warmup_turns: int,
        step_tokens: int,
        max_shift_tokens: int,
        truncation_ratio: float,
        idle_ratio: float,
        max_cap: int,
    ) -> ArenaRules: ...

@final
class LexicalIndex:
    """Feature-hashed word vectors searched by cosine similarity."""

    def __new__(cls, dims: int = 1024, legacy: bool = False) -> LexicalIndex: ...
    def add(self, id: str, text: str) -> None: ...
    def __len__(self) -> int: ...
    def search(
        self, query: str, k: int, min_similarity: float = 0.08
    ) -> list[tuple[str, float]]: ...

def normalize_usage(
    percent: float | None = None, tokens: int | None = None, window: int | None = None
) -> float | None: ...

@final
class ArenaWriteRow(_ByName):
    """What became of one arena write, as the core applied it."""

    @property
    def key(self) -> str: ...
    @property
    def seq(self) -> int: ...
    @property
    def accepted(self) -> bool: ...
    @property
    def tokens(self) -> int: ...
    @property
    def cut_from(self) -> int | None: ...
    @property
    def evicted(self) -> list[str]: ...
    @property
    def enforced(self) -> bool: ...
    @property
    def compact(self) -> bool: ...

@final
class ArenaEntryRow(_ByName):
    """A live entry of a session's arena."""

    @property
    def seq(self) -> int: ...
    @property
    def zone(self) -> _ZoneName: ...
    @property
    def key(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def priority(self) -> Literal["critical", "high", "normal", "low"]: ...
    @property
    def text(self) -> str: ...
    @property
    def tokens(self) -> int: ...
    @property
    def once(self) -> bool: ...
    @property
    def external(self) -> bool: ...

@final
class ZoneReportRow(_ByName):
    """What happened to one zone in a turn's plan."""

    @property
    def demand(self) -> int: ...
    @property
    def floor(self) -> int: ...
    @property
    def cap(self) -> int: ...
    @property
    def allocated(self) -> int: ...
    @property
    def accepted(self) -> int: ...
    @property
    def cut_at_write(self) -> int: ...
    @property
    def cut(self) -> list[str]: ...
    @property
    def dropped(self) -> list[str]: ...
    @property
    def dropped_count(self) -> int: ...

@final
class ZoneReports:
    """A plan's report per zone, one field a zone."""

    @property
    def identity(self) -> ZoneReportRow: ...
    @property
    def truth(self) -> ZoneReportRow: ...
    @property
    def task_state(self) -> ZoneReportRow: ...
    @property
    def tool_failures(self) -> ZoneReportRow: ...
    @property
    def memory_working(self) -> ZoneReportRow: ...
    @property
    def memory_recall(self) -> ZoneReportRow: ...
    @property
    def rag_external(self) -> ZoneReportRow: ...
    def __getitem__(self, key: str, /) -> ZoneReportRow: ...
    def get(self, key: str, default: Any = None, /) -> Any: ...
    def keys(self) -> list[_ZoneName]: ...

@final
class ArenaPlanRow(_ByName):
    """A turn's plan, rendered, named by its generation: equal generations are the
    same plan."""

    @property
    def generation(self) -> int: ...
    @property
    def stable(self) -> str: ...
    @property
    def volatile(self) -> str: ...
    @property
    def stable_tokens(self) -> int: ...
    @property
    def volatile_tokens(self) -> int: ...
    @property
    def tokens(self) -> int: ...
    @property
    def cap(self) -> int: ...
    @property
    def stage(self) -> Literal["met", "relaxed", "critical_only", "unrecoverable"]: ...
    @property
    def relaxed(self) -> list[_ZoneName]: ...
    @property
    def once(self) -> list[tuple[_ZoneName, str, int]]: ...
    @property
    def injected(self) -> list[str]: ...
    @property
    def ledger_tokens(self) -> int: ...
    @property
    def zones(self) -> ZoneReports: ...

@final
class ArenaObservedRow(_ByName):
    """What observing a sent turn changed: shifts (from, to, tokens), the caps per
    zone when they moved, and the turns seen."""

    @property
    def shifts(self) -> list[tuple[_ZoneName, _ZoneName, int]]: ...
    @property
    def caps(self) -> list[int] | None: ...
    @property
    def turns(self) -> int: ...

@final
class RecallHitRow(_ByName):
    """A part out of the view that matches a question."""

    @property
    def message_id(self) -> str: ...
    @property
    def part_id(self) -> str: ...
    @property
    def seq(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def tokens(self) -> int: ...
    @property
    def score(self) -> float: ...
    @property
    def tombstoned(self) -> bool: ...

@final
class ViewItemRow(_ByName):
    """An item of a session's view, in the order the request holds them."""

    @property
    def position(self) -> int: ...
    @property
    def kind(self) -> Literal["message", "summary"]: ...
    @property
    def id(self) -> str: ...
    @property
    def tokens(self) -> int: ...
    @property
    def role(self) -> str | None: ...
    @property
    def seq(self) -> int: ...

def format_request(
    items: ItemUnits, layout: list[int | dict[str, str]], format: str, marks: list[int]
) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """The request of ``items`` laid out as ``layout`` in ``format`` (``anthropic``:
    ``(system, messages)``; ``responses``: ``(None, input)``)."""

@final
class ItemUnits:
    """The view items of one assembly as units of a request's print."""

    @property
    def summary_end(self) -> int:
        """Index of the last summary's message among the assembled messages; -1 if none."""
    @property
    def message_count(self) -> int:
        """How many chat messages the items render as."""
    @property
    def newest_user_id(self) -> str | None:
        """The id of the item holding the newest user message, if any."""
    def user_place(self, id: str) -> tuple[int, int] | None:
        """Where the user message ``id`` is: its index among the items and among the
        assembled messages; None when it is not in this assembly."""

@final
class RequestPrint:
    """A request as a provider's prompt cache sees it: tool definitions, system
    message, view items and the arena's block, each hashed with its tokens;
    ``earlier`` blocks (item index, text, tokens) follow the items they name."""

    def __new__(
        cls,
        items: ItemUnits,
        tools: str,
        tool_tokens: int,
        system: str,
        system_tokens: int,
        block: str,
        block_tokens: int,
        merged: bool,
        earlier: list[tuple[int, str, int]] = ...,
    ) -> RequestPrint: ...
    @property
    def tokens(self) -> int:
        """Every token of the request."""
    def common_prefix_tokens(self, other: RequestPrint) -> int:
        """Tokens from the start of this request that ``other`` has too, in place."""
    def invalidated_by(self, next: RequestPrint) -> int:
        """Tokens of this request past its common prefix with ``next``."""

@final
class Store:
    def __new__(
        cls,
        path: str,
        synchronous: str = "normal",
        busy_timeout_ms: int = 30000,
        read_only: bool = False,
        key: bytes | None = None,
    ) -> Self:
        """Opens ``path``; with ``read_only`` an existing database only, which is
        neither created, migrated nor written (``DatabaseNotFoundError`` when missing).
        ``key`` (32 bytes) opens or creates an encrypted file (``EncryptionKeyError``
        when it does not open it, or when the file is plain)."""
    def reopen(self, read_only: bool = False) -> Store:
        """Another connection to this store's database, opened with the same options
        and key; read-only with ``read_only``."""
    def close(self) -> None:
        """Ends the connection once the call using it (if any) returns; a later call
        connects again. The last store of this process on a SQLite file first empties
        the write-ahead log into the file. A private ``:memory:`` database stays open."""
    @property
    def path(self) -> str: ...
    @property
    def read_only(self) -> bool:
        """Whether this store was opened read-only."""
    def schema_version(self) -> int: ...
    # sessions
    def create_session(self, model: str, config_json: str, system_prompt: str | None) -> str: ...
    def get_session(self, session_id: str) -> SessionInfo: ...
    def list_sessions(self) -> list[SessionRow]: ...
    def session_for_key(self, key: str) -> str | None:
        """The session ``key`` names now, or ``None``."""
    def key_of(self, session_id: str) -> str | None:
        """The key that names ``session_id`` now, or ``None``."""
    def named_session(
        self,
        key: str,
        model: str,
        config_json: str,
        system_prompt: str | None,
        reuse: bool,
    ) -> tuple[str, bool]:
        """A session named ``key``: with ``reuse``, the one ``key`` names when there is
        one, else a new one ``key`` names from now on: ``(id, created)``."""
    def fork_session(
        self, parent_id: str, fork_seq: int, sync_from: int = 0, key: str | None = None
    ) -> str:
        """A new session sharing ``parent_id``'s history up to its message ``fork_seq``."""
    def fork_of(self, session_id: str) -> ForkRow | None:
        """How ``session_id`` joins its parent, or ``None`` when it is no fork."""
    def forks_of(self, parent_id: str) -> list[ForkRow]:
        """The forks of ``parent_id``, oldest first."""
    def ledger_items(self, session_id: str) -> list[LedgerItemRow]:
        """The live items of ``session_id``'s ledger, in the order they were written."""
    def ledger_history(self, session_id: str, subject: str | None = None) -> list[LedgerItemRow]:
        """Every stored value of ``session_id``'s ledger (of ``subject`` alone, when
        given), oldest first, removals included."""
    def ledger_edit(
        self,
        session_id: str,
        edits: list[tuple[str, str, str, str]],
        stable_cap: int,
        volatile_cap: int,
        origin: str = "caller",
    ) -> LedgerUpdateResult:
        """Applies ``edits`` (``("set", kind, subject, text)`` or ``("remove", "",
        subject, "")``) in one transaction and renders the ledger again; ``origin``
        is ``caller`` or ``model``."""
    def absorb_ledger(
        self, session_id: str, stable_cap: int, volatile_cap: int
    ) -> LedgerUpdateResult:
        """Reads the messages compaction took out of the view since the last call
        into the ledger and renders it again, in one transaction."""
    def ledger_render(
        self, session_id: str, stable_cap: int, volatile_cap: int
    ) -> tuple[str, str, LedgerUpdateResult]:
        """The ledger as the request carries it: ``(stable, volatile, counts)``."""
    def erase(self, kind: str, target: str, by: str, reason: str) -> ErasureReceipt:
        """Erases a ``session``, ``message`` or ``subject`` (``kind``) in one
        transaction; its receipt."""
    def configure_redaction(
        self, session_id: str, enabled: bool, defaults: bool, rules: list[tuple[str, str]]
    ) -> None:
        """Sets how ``session_id``'s writes through this store are redacted."""
    def erasure_receipts(self) -> list[ErasureReceipt]:
        """Every erasure receipt, oldest first."""
    def add_subject(self, session_id: str, subject: str) -> None:
        """Attaches ``subject`` to session ``session_id``."""
    def subjects(self, session_id: str) -> list[str]:
        """The subjects attached to ``session_id``."""
    def set_retention(self, target_kind: str, target: str, ttl_ms: int | None) -> None:
        """Sets (or with ``None`` lifts) the time to live of a ``session`` or ``subject``."""
    def retention_rules(self) -> list[RetentionRuleRow]:
        """The retention rules in force."""
    def expired_sessions(self, now_ms: int) -> list[str]:
        """The sessions past their time to live at ``now_ms``."""
    def apply_retention(self, now_ms: int, by: str) -> list[ErasureReceipt]:
        """Erases the sessions past their time to live in short transactions; one
        receipt per session."""
    def call_seq(self, session_id: str, call_id: str) -> int | None:
        """The seq of the message of ``session_id`` holding tool call ``call_id``."""
    def sync_match(self, session_id: str, chain: bytes) -> tuple[int, int | None]:
        """``(stored, first_difference)`` of the history whose digests are ``chain``."""
    def sync_append(
        self,
        session_id: str,
        start: int,
        chain: bytes,
        seqs: list[tuple[int | None, int]],
        wait: bool = True,
    ) -> bool | None:
        """Stores positions ``start..`` of a handed-over history, each with the seqs
        it wrote ``(oldest or None, newest after it)``; without ``wait``, ``None``
        where the write would wait."""
    def sync_fork_point(
        self, session_id: str, k: int, extra_low: int | None = None
    ) -> tuple[int, int]:
        """``(fork_seq, replay_from)`` for a history that differs from position ``k``."""
    def message_seq(self, session_id: str, message_id: str) -> int:
        """The seq of message ``message_id`` in ``session_id``'s history."""
    def sync_positions_within(self, session_id: str, seq: int) -> int:
        """Leading positions of the handed-over history that wrote only up to ``seq``."""
    def newest_seq(self, session_id: str) -> int:
        """The newest message seq of ``session_id`` (0: none yet)."""
    def flag_interrupted(self, session_id: str, message_ids: list[str]) -> int:
        """Closes the named streaming replies as incomplete, each with its last
        checkpoint as text, in one transaction; returns how many were closed."""
    def streams(self, session_id: str) -> list[StreamRow]:
        """The session's replies still streaming."""
    def checkpoint_message(self, message_id: str, owner: str, appended: str | None = None) -> None:
        """Adds the text a streaming reply received since its last checkpoint, with its
        owner's heartbeat (None: only the heartbeat)."""
    # messages
    def append_message(
        self, session_id: str, role: str, parts: list[_WirePart], model: str | None = None
    ) -> AppendResult: ...
    @overload
    def append_turn(
        self,
        session_id: str,
        role: str,
        parts: list[_WirePart],
        event: str,
        payload_json: str,
        wait: Literal[True] = True,
    ) -> TurnAppendResult:
        """A turn as one transaction: the message, the event ``event`` (its payload given
        the new message's id) and, read right after, the view's size (``view_tokens``).
        With ``wait=False`` the write is made at once, the interpreter held, or not at
        all (``None``, nothing written): where it would wait on another writer's lock,
        a checkpoint, the search index, or a part of more than 64 KiB."""
    @overload
    def append_turn(
        self,
        session_id: str,
        role: str,
        parts: list[_WirePart],
        event: str,
        payload_json: str,
        wait: bool,
    ) -> TurnAppendResult | None: ...
    @overload
    def begin_message(
        self,
        session_id: str,
        role: str,
        model: str | None = None,
        owner: str = "local",
        wait: Literal[True] = True,
    ) -> str: ...
    @overload
    def begin_message(
        self,
        session_id: str,
        role: str,
        model: str | None = None,
        owner: str = "local",
        *,
        wait: bool,
    ) -> str | None: ...
    def finish_message(
        self,
        message_id: str,
        parts: list[_WirePart],
        complete: bool,
        usage: _ProviderUsage | None = None,
    ) -> AppendResult: ...
    @overload
    def finish_turn(
        self,
        session_id: str,
        message_id: str,
        parts: list[_WirePart],
        complete: bool,
        usage: _ProviderUsage | None,
        event: str,
        payload_json: str,
        wait: Literal[True] = True,
    ) -> TurnAppendResult:
        """A reply finished as one transaction with its event, and the view's size
        (``view_tokens``) read right after; ``wait`` as in ``append_turn``."""
    @overload
    def finish_turn(
        self,
        session_id: str,
        message_id: str,
        parts: list[_WirePart],
        complete: bool,
        usage: _ProviderUsage | None,
        event: str,
        payload_json: str,
        wait: bool,
    ) -> TurnAppendResult | None: ...
    def update_tool(
        self,
        session_id: str,
        call_id: str,
        status: str,
        output: str | None = None,
        error: str | None = None,
    ) -> None: ...
    @overload
    def update_tool_turn(
        self,
        session_id: str,
        call_id: str,
        status: str,
        output: str | None,
        error: str | None,
        event: str,
        payload_json: str,
        wait: Literal[True] = True,
        media: list[dict[str, Any]] | None = None,
    ) -> int:
        """``update_tool`` as one transaction with the event ``event``; returns the view's
        size in tokens, read right after; ``wait`` as in ``append_turn``. ``media``
        (media part dicts) are added to the call's message as parts of its result."""
    @overload
    def update_tool_turn(
        self,
        session_id: str,
        call_id: str,
        status: str,
        output: str | None,
        error: str | None,
        event: str,
        payload_json: str,
        wait: bool,
        media: list[dict[str, Any]] | None = None,
    ) -> int | None: ...
    def get_message(self, message_id: str) -> MessageRecord: ...
    def history(self, session_id: str) -> list[MessageRecord]: ...
    def history_range(self, session_id: str, low: int, high: int) -> list[MessageRecord]:
        """The messages of ``session_id`` whose seqs are ``low..=high``, oldest first
        (a fork's shared ones from its parent's rows): a page of a long history,
        read alone."""
    # context view
    def assemble(
        self, session_id: str, budget_tokens: int, profile: str = "default"
    ) -> tuple[list[_ChatMessage], int, list[str], int]: ...
    def assemble_placed(
        self, session_id: str, budget_tokens: int, profile: str = "default"
    ) -> tuple[list[_ChatMessage], int, list[str], int, int, ItemUnits]: ...
    def assemble_items(
        self, session_id: str, budget_tokens: int
    ) -> tuple[int, list[str], int, int, ItemUnits]: ...
    def arena_write(
        self,
        session_id: str,
        writes: list[tuple[str, str, str, str, str | None, bool, bool, int]],
        rules: ArenaRules,
        event: str | None = None,
        payload_json: str | None = None,
    ) -> list[ArenaWriteRow]: ...
    def arena_entries(self, session_id: str) -> list[ArenaEntryRow]: ...
    def arena_plan(
        self,
        session_id: str,
        rules: ArenaRules,
        cap: int,
        transient: list[tuple[str, str, str, str, str]],
    ) -> ArenaPlanRow: ...
    def arena_observe(
        self,
        session_id: str,
        rules: ArenaRules,
        zones: list[tuple[int, int, int]],
        once: list[tuple[str, str, int]],
        event: str | None = None,
    ) -> ArenaObservedRow: ...
    def open_tool_calls(self, session_id: str) -> list[tuple[str, str]]: ...
    def arena_reset(self, session_id: str, event: str, payload: str) -> None: ...
    def recall_newest(
        self, session_id: str, k: int, max_tokens: int
    ) -> tuple[str | None, list[RecallHitRow], int]:
        """(question, hits, the recall's generation: equal while it is the same recall; 0
        without a question)."""
    def recall(
        self, session_id: str, question: str, k: int, max_tokens: int
    ) -> list[RecallHitRow]: ...
    def view_stats(self, session_id: str) -> ViewStats: ...
    # images and documents
    def read_media(self, media_id: str) -> tuple[str, bytes] | None:
        """The MIME type and exact bytes of the image or document ``media_id``."""
    def media_part(
        self, media_id: str, session_id: str | None = None
    ) -> tuple[str, dict[str, Any]] | None:
        """The session that first stored ``media_id`` (in ``session_id``, when given)
        and that part's wire dict."""
    def set_media_policy(self, max_inline: int, max_inline_tokens: int) -> None:
        """How many of a view's newest images and documents a request sends inline,
        within how many tokens."""
    def view_items(self, session_id: str) -> list[ViewItemRow]: ...
    # events
    @overload
    def append_event(
        self, session_id: str, name: str, payload_json: str, wait: Literal[True] = True
    ) -> int:
        """Appends an event to the session's tape; its seq. With ``wait=False``,
        ``None`` where the write would wait (see ``append_turn``)."""
    @overload
    def append_event(
        self, session_id: str, name: str, payload_json: str, wait: bool
    ) -> int | None: ...
    def events(self, session_id: str) -> list[EventRow]: ...
    def events_page(
        self,
        session_id: str,
        *,
        after: int | None = None,
        before: int | None = None,
        name: str | None = None,
        limit: int = 100,
        newest_first: bool = False,
    ) -> list[EventRow]:
        """At most ``limit`` events of the session's tape whose seq is above ``after``
        and below ``before``, named ``name`` when given; the oldest first, or the
        newest first with ``newest_first``."""
    # compaction
    def acquire_compaction_lease(self, session_id: str, holder: str, ttl_ms: int) -> bool: ...
    def release_compaction_lease(self, session_id: str, holder: str) -> None: ...
    def prune(
        self,
        session_id: str,
        protect_tokens: int,
        minimum_tokens: int,
        protected_tools: list[str],
        protect_user_turns: int = 2,
        tail_tokens: int | None = None,
        tail_messages: int | None = None,
    ) -> PruneResult: ...
    def compaction_span(
        self,
        session_id: str,
        protect_user_turns: int = 2,
        tail_tokens: int | None = None,
        tail_messages: int | None = None,
    ) -> Span: ...
    # Messages named by a list give a TextResult (with their ids), a span a
    # SpanTextResult (without).
    @overload
    def transcript(
        self,
        message_ids: list[str],
        max_chars_per_message: int | None = None,
        max_tokens: int | None = None,
    ) -> TextResult: ...
    @overload
    def transcript(
        self,
        message_ids: Span,
        max_chars_per_message: int | None = None,
        max_tokens: int | None = None,
    ) -> SpanTextResult: ...
    @overload
    def truncate_summary(self, message_ids: list[str], target_tokens: int) -> TextResult: ...
    @overload
    def truncate_summary(self, message_ids: Span, target_tokens: int) -> SpanTextResult: ...
    @overload
    def extractive_summary(self, message_ids: list[str], max_tokens: int) -> TextResult: ...
    @overload
    def extractive_summary(self, message_ids: Span, max_tokens: int) -> SpanTextResult: ...
    def live_summaries(self, session_id: str) -> list[SummaryRow]: ...
    def condense_merge(self, summary_ids: list[str], max_tokens: int) -> TextResult: ...
    def condense_truncate(self, summary_ids: list[str], max_tokens: int) -> TextResult: ...
    def commit_summary(
        self,
        session_id: str,
        text: str,
        level: int,
        source_message_ids: list[str] | Span,
        source_summary_ids: list[str],
        expected_view_version: int | None = None,
    ) -> CommitResult: ...
    def commit_extractive_summary(self, span: Span, max_tokens: int) -> ExtractiveCommitResult: ...
    def compaction_round(
        self,
        session_id: str,
        rules: RoundRules,
        before: int,
        model_summary: bool,
    ) -> RoundResult:
        """A round's store work up to its first model call: the prune (which ends the
        round when it writes: a round changes the view once), the span, and, unless
        ``model_summary``, its built-in summary or truncation, committed when it
        shrinks the view."""
    def session_file_ids(self, session_id: str) -> list[str]: ...
    # recall
    def grep(
        self, query: str, session_id: str | None = None, mode: str = "text", limit: int = 20
    ) -> list[GrepRow]:
        """Hits with the fields of :class:`lossless.recall.GrepHit`."""
    def describe(
        self, session_id: str | None = None, summary_id: str | None = None
    ) -> list[DagRow]: ...
    def summary_node(self, summary_id: str) -> DagRow:
        """One summary of the DAG with the ids of its sources, without its subtree
        (``depth`` as stored)."""
    def expand(
        self,
        summary_id: str,
        max_tokens: int,
        around: str | None = None,
        query: str | None = None,
        before: str | None = None,
        after: str | None = None,
    ) -> ExpansionRow:
        """A window of a summary's source messages within ``max_tokens``: the
        oldest first, or centred on ``around`` (a message id) or on the best match
        of ``query``, or the page older than ``before`` / newer than ``after``."""
    def read_message(
        self, message_id: str, max_tokens: int, cursor: int | None = None
    ) -> MessagePageRow:
        """One stored message written out whole, from character ``cursor``, as much
        as ``max_tokens`` holds; ``next_cursor`` is None on the last page."""
    def set_checkpoint_pages(self, pages: int) -> None:
        """How many pages the write-ahead log may hold before a commit on this
        connection copies them into the database file (SQLite's automatic checkpoint)."""
    def flush_search_index(self) -> int: ...
    def search_backlog(self) -> int: ...
    def stats(self) -> StoreStats: ...

# -- PostgreSQL (rust/py/src/postgres.rs) ------------------------------------------

def enable_postgres_tenants(url: str) -> None:
    """Creates or upgrades the schema at ``url`` and turns row-level security by
    tenant on for it."""

def prepare_postgres(url: str) -> int:
    """Creates or upgrades the lossless schema at a postgresql:// URL; returns its version."""

# -- encryption at rest (rust/py/src/encryption.rs) --------------------------------

def ledger_subject(text: str) -> str:
    """The subject the built-in rules give ``text``: what a later text must be
    about to replace it in the ledger."""

def encrypt_database(src: str, dst: str, key: bytes) -> None:
    """Writes an encrypted copy of the plain lossless database ``src`` to the new file
    ``dst``, keyed with the 32 bytes ``key``."""

# -- files kept whole (rust/py/src/files.rs) --------------------------------------

def scan_file(path: str | os.PathLike[str]) -> FileScan:
    """One streamed pass over a file."""

def store_file(
    store: Store,
    source: str | os.PathLike[str],
    sha256: str,
    path: str,
    file_type: str,
    token_count: int,
    summary: str,
) -> tuple[FileRecord, bool]:
    """Stores a file's bytes (compressed, in chunks) and its reference in one
    transaction; returns its record and whether it was stored now."""

def file_record(store: Store, file_id: str) -> FileRecord | None:
    """The stored file ``file_id``, or ``None``."""

def read_file(
    store: Store, file_id: str, first: int | None = None, last: int | None = None
) -> bytes:
    """A stored file's bytes, whole or lines ``first..=last`` (from 1)."""

def export_file(store: Store, file_id: str, dest: str | os.PathLike[str]) -> int:
    """Writes a stored file's bytes to ``dest``; returns how many."""

# -- map runs (rust/py/src/maps.rs) -------------------------------------------------

def create_map(store: Store, kind: str, parent_id: str | None, spec: str, inputs: list[str]) -> str:
    """Stores a new map run over ``inputs`` (JSON texts); returns its id."""

def map_run(store: Store, map_id: str) -> MapRun:
    """A map run."""

def map_inputs(store: Store, map_id: str) -> list[str]:
    """The inputs of a run (JSON texts), by index."""

def map_outcomes(store: Store, map_id: str) -> list[MapOutcome]:
    """Every outcome stored for a run, by item then in the order written."""

@overload
def record_map_outcome(
    store: Store,
    map_id: str,
    idx: int,
    succeeded: bool,
    output: str | None,
    error_kind: str | None,
    error: str | None,
    attempts: int,
    usage: str,
    session_id: str | None = None,
    wait: Literal[True] = True,
) -> bool:
    """Stores one item's outcome (``True``); a second success raises ``MapConflictError``. With
    ``wait=False``, ``None`` where the write would wait (see ``Store.append_turn``)."""

@overload
def record_map_outcome(
    store: Store,
    map_id: str,
    idx: int,
    succeeded: bool,
    output: str | None,
    error_kind: str | None,
    error: str | None,
    attempts: int,
    usage: str,
    session_id: str | None = None,
    *,
    wait: bool,
) -> bool | None: ...
@overload
def create_child_session(
    store: Store,
    model: str,
    config: str,
    system_prompt: str | None,
    parent_id: str,
    map_id: str,
    idx: int,
    wait: Literal[True] = True,
) -> str:
    """Creates the session of item ``idx`` of a run, linked to ``parent_id``. With
    ``wait=False``, ``None`` where the write would wait (see ``Store.append_turn``)."""

@overload
def create_child_session(
    store: Store,
    model: str,
    config: str,
    system_prompt: str | None,
    parent_id: str,
    map_id: str,
    idx: int,
    wait: bool,
) -> str | None: ...
def item_session(store: Store, map_id: str, idx: int) -> str | None:
    """The session item ``idx`` of a run ran in, if it started."""

def child_sessions(store: Store, parent_id: str) -> list[SessionRow]:
    """The sessions linked to ``parent_id``, with their counts."""

def sync_chain(messages: list[Any], system: object = None) -> bytes:
    """The digest of ``messages[..=i]`` for each ``i`` (16 bytes each), after that of
    ``system``, in the core's canonical encoding of JSON values."""
