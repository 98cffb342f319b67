//! Reasoning a model did before it answered: its readable text, and the block its
//! provider sent, kept verbatim. Some providers (Anthropic, and Claude on other
//! clouds) sign a reasoning block and refuse a tool loop whose last assistant turn
//! comes back without it, so the block is stored as the JSON text that arrived and
//! only ever parsed, never written again (a serializer may reorder keys).
//!
//! A reasoning part renders into no message's text: it goes out beside its
//! assistant message, and only within the tool loop that produced it and to the
//! provider that produced it (see `context/replay.rs`). Its tokens are therefore
//! counted by the request that sends it, not in its message's cost in the view.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::checks::{check_content, check_identifier};
use super::kind::{redacted_text, Columns, PartKind, Rendered, SearchSql, StoredColumns};
use super::wire::{WireSink, WireSource};
use crate::error::{Error, Result};
use crate::model::chat::{BlockKind, ReasoningBlock};
use crate::redact::{Finding, Redactor};
use crate::tokens::TokenCounter;

/// Framing of one block sent back (its entry in `thinking_blocks`).
const BLOCK_OVERHEAD: usize = 4;

/// Reasoning as one provider produced it.
#[derive(Clone, Debug, PartialEq)]
pub struct Reasoning {
    /// The provider that produced it, as litellm names providers (`anthropic`,
    /// `bedrock`, `openai`, ...).
    pub provider: String,
    /// The readable reasoning, if the provider showed any.
    pub text: Option<String>,
    /// The provider's block as JSON text, exactly as received.
    pub payload: Option<String>,
}

impl Reasoning {
    /// The block sent back to `provider` in the tool loop that produced it: only a
    /// block of that provider's, with a payload (readable text alone is no input
    /// any provider takes).
    #[must_use]
    pub fn replayed_to(&self, provider: &str) -> Option<ReasoningBlock> {
        let payload = self
            .payload
            .as_ref()
            .filter(|_| self.provider == provider)?;
        let kind = payload_type(payload);
        // A call's signature goes on its call: see `signature_for`.
        (kind.as_deref() != Some(SIGNATURE_TYPE)).then(|| ReasoningBlock {
            payload: payload.clone(),
            text: self.text.clone(),
            kind: if kind.as_deref() == Some("reasoning") {
                BlockKind::ReasoningItem
            } else {
                BlockKind::Thinking
            },
        })
    }

    /// The call id and thought signature this part keeps for `provider`, when it is
    /// a signature of the call it names (Gemini signs its function calls), sent
    /// back on that call in the tool loop that produced it.
    #[must_use]
    pub fn signature_for(&self, provider: &str) -> Option<CallSignature> {
        let payload = self.payload.as_ref()?;
        (self.provider == provider)
            .then(|| call_signature(payload))
            .flatten()
    }
}

/// A provider's signature of one function call, kept apart from the call when its
/// id could not carry it (see `THOUGHT_SEPARATOR`).
#[derive(Clone, Debug, PartialEq)]
pub struct CallSignature {
    pub call_id: String,
    pub signature: String,
}

/// How litellm carries a Gemini thought signature in a tool call's id:
/// `{id}__thought__{signature}`, which its Gemini transformation reads back.
pub const THOUGHT_SEPARATOR: &str = "__thought__";

/// The payload type of a call's signature kept apart from the call.
const SIGNATURE_TYPE: &str = "thought_signature";

impl CallSignature {
    /// The call's id as litellm reads a signature from it.
    #[must_use]
    pub fn signed_id(&self) -> String {
        format!("{}{THOUGHT_SEPARATOR}{}", self.call_id, self.signature)
    }

    /// Tokens the signature adds to a request: on the call and on its result.
    #[must_use]
    pub fn tokens(&self, counter: &TokenCounter) -> usize {
        2 * (counter.count(THOUGHT_SEPARATOR) + counter.count(&self.signature))
    }
}

/// The signature a `thought_signature` payload keeps; `None` for any other payload.
fn call_signature(payload: &str) -> Option<CallSignature> {
    let block: Value = serde_json::from_str(payload).ok()?;
    if block["type"] != SIGNATURE_TYPE {
        return None;
    }
    Some(CallSignature {
        call_id: block["id"].as_str()?.to_string(),
        signature: block["signature"].as_str()?.to_string(),
    })
}

/// The `reasoning` kind: its fields are stored as a JSON object in the body, the
/// payload as a string within it.
pub struct ReasoningKind;

impl PartKind for ReasoningKind {
    /// The readable text only: the provider's payload is sent back byte for byte,
    /// and a signed one refused once changed (docs/GOVERNANCE.md says what that
    /// leaves on the disk).
    fn redacted(
        reasoning: &Reasoning,
        redactor: &Redactor,
        found: &mut Vec<Finding>,
    ) -> Option<Reasoning> {
        let text = redacted_text(reasoning.text.as_deref()?, redactor, found)?;
        Some(Reasoning {
            provider: reasoning.provider.clone(),
            text: Some(text),
            payload: reasoning.payload.clone(),
        })
    }

    type Data = Reasoning;
    const NAME: &'static str = "reasoning";
    // The readable text only: never a signature or redacted data.
    const SEARCH_SQL: SearchSql = SearchSql {
        sqlite: Some("COALESCE(p.body ->> '$.text', '')"),
        postgres: Some("COALESCE(CAST(p.body AS jsonb) ->> 'text', '')"),
    };
    const COUNTED_IN_VIEW: bool = false;

    fn validate(reasoning: &Reasoning, field: &str) -> Result<()> {
        check_identifier(&format!("{field}.provider"), &reasoning.provider)?;
        if let Some(text) = &reasoning.text {
            check_content(&format!("{field}.text"), text)?;
        }
        match &reasoning.payload {
            Some(payload) => check_payload(&format!("{field}.payload"), payload),
            None if reasoning
                .text
                .as_deref()
                .is_some_and(|text| !text.is_empty()) =>
            {
                Ok(())
            }
            None => Err(Error::invalid(
                field.to_string(),
                "a reasoning part needs readable text or a payload",
            )),
        }
    }

    fn text_bytes(reasoning: &Reasoning) -> usize {
        reasoning.text.as_ref().map_or(0, String::len)
            + reasoning.payload.as_ref().map_or(0, String::len)
    }

    fn file_ids(_reasoning: &Reasoning) -> Vec<String> {
        Vec::new()
    }

    fn tokens(reasoning: &Reasoning, counter: &TokenCounter) -> (usize, usize) {
        let block = ReasoningBlock {
            payload: reasoning.payload.clone().unwrap_or_default(),
            text: reasoning.text.clone(),
            kind: BlockKind::Thinking,
        };
        (replay_tokens(std::slice::from_ref(&block), counter), 0)
    }

    fn columns(reasoning: &Reasoning) -> Columns<'_> {
        let body = serde_json::json!({
            "provider": reasoning.provider,
            "text": reasoning.text,
            "payload": reasoning.payload,
        });
        Columns {
            body: Cow::Owned(body.to_string()),
            ..Columns::default()
        }
    }

    fn from_columns(columns: StoredColumns) -> Result<Reasoning> {
        let value: Value = serde_json::from_str(&columns.body)
            .map_err(|err| Error::Sqlite(format!("corrupt reasoning part: {err}")))?;
        let text = |key: &str| value[key].as_str().map(str::to_string);
        Ok(Reasoning {
            provider: text("provider").unwrap_or_default(),
            text: text("text"),
            payload: text("payload"),
        })
    }

    fn write_wire<S: WireSink>(
        reasoning: &Reasoning,
        sink: &mut S,
    ) -> std::result::Result<(), S::Error> {
        sink.text("provider", Some(&reasoning.provider))?;
        sink.text("text", reasoning.text.as_deref())?;
        sink.text("payload", reasoning.payload.as_deref())
    }

    fn read_wire<S: WireSource>(source: &S, field: &str) -> Result<Reasoning> {
        Ok(Reasoning {
            provider: source.required_text("provider", field)?,
            text: source.text("text", field)?,
            payload: source.text("payload", field)?,
        })
    }

    fn render<'a>(reasoning: &'a Reasoning, _pruned: Option<&'a str>) -> Rendered<'a> {
        Rendered::Reasoning(reasoning)
    }

    fn transcript<'a>(reasoning: &'a Reasoning, _pruned: Option<&'a str>) -> Cow<'a, str> {
        Cow::Owned(readable(reasoning))
    }

    fn write_full(reasoning: &Reasoning, _pruned: bool, out: &mut String) {
        let _ = write!(
            out,
            "reasoning ({})\n{}",
            reasoning.provider,
            readable(reasoning)
        );
    }
}

/// What a reader is shown of reasoning: its readable text, marked as reasoning, or
/// a one-line marker when it has none. Never a signature or redacted data.
fn readable(reasoning: &Reasoning) -> String {
    match reasoning.text.as_deref() {
        Some(text) if !text.trim().is_empty() => format!("[reasoning] {text}"),
        _ => "[reasoning: redacted]".to_string(),
    }
}

/// Tokens of reasoning blocks as a request sends them beside their message: each
/// block's JSON (what the provider is sent; how it counts a signature or redacted
/// data is not known, so the JSON text is counted, never less than it costs) and
/// the readable text sent along as `reasoning_content`.
#[must_use]
pub fn replay_tokens(blocks: &[ReasoningBlock], counter: &TokenCounter) -> usize {
    let payloads: usize = blocks
        .iter()
        // A compaction block is counted in its message's cost in the view.
        .filter(|block| block.kind != BlockKind::Compaction)
        .map(|block| counter.count(&block.payload) + BLOCK_OVERHEAD)
        .sum();
    payloads + crate::model::chat::reasoning_content(blocks).map_or(0, |text| counter.count(&text))
}

/// The `type` of a stored payload (checked when stored to be a JSON object with a
/// string `type`); `None` for one that no longer parses.
fn payload_type(payload: &str) -> Option<String> {
    let block: Value = serde_json::from_str(payload).ok()?;
    block["type"].as_str().map(str::to_string)
}

/// Rejects a reasoning payload the store must not keep: text that is not a JSON
/// object with a string `type`, a `thinking` block without its text or signature,
/// a `redacted_thinking` block without its data, a Responses API `reasoning` item
/// with neither its `encrypted_content` nor the `id` the provider stored it under,
/// a `thought_signature` without the `id` of its call or its `signature`. Other
/// types are kept as they came. `field` names it in errors.
pub fn check_payload(field: &str, payload: &str) -> Result<()> {
    check_content(field, payload)?;
    let Ok(Value::Object(block)) = serde_json::from_str::<Value>(payload) else {
        return Err(Error::invalid(field.to_string(), "expected a JSON object"));
    };
    let Some(Value::String(kind)) = block.get("type") else {
        return Err(Error::invalid(
            format!("{field}.type"),
            "expected the block's type as a string",
        ));
    };
    match kind.as_str() {
        "thinking" => {
            string_field(field, &block, "thinking", false)?;
            string_field(field, &block, "signature", true).map_err(|_| {
                Error::invalid(
                    format!("{field}.signature"),
                    "a thinking block without its signature cannot be sent back; \
                     store its text alone",
                )
            })
        }
        "redacted_thinking" => string_field(field, &block, "data", true),
        SIGNATURE_TYPE => {
            string_field(field, &block, "id", true)?;
            string_field(field, &block, "signature", true)
        }
        "reasoning" => string_field(field, &block, "encrypted_content", true)
            .or_else(|_| string_field(field, &block, "id", true))
            .map_err(|_| {
                Error::invalid(
                    format!("{field}.encrypted_content"),
                    "a reasoning item needs its encrypted_content or its id to be sent back",
                )
            }),
        _ => Ok(()),
    }
}

fn string_field(field: &str, block: &Map<String, Value>, key: &str, non_empty: bool) -> Result<()> {
    match block.get(key) {
        Some(Value::String(value)) if !non_empty || !value.is_empty() => Ok(()),
        _ => Err(Error::invalid(
            format!("{field}.{key}"),
            if non_empty {
                "expected a non-empty string"
            } else {
                "expected a string"
            },
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parts::Part;

    /// A thinking block as Anthropic sends it, keys in its order and spaced as it
    /// spaces them.
    const THINKING: &str =
        r#"{"type": "thinking", "thinking": "check the ledger", "signature": "RXVzaWduZWQ="}"#;

    fn part(text: Option<&str>, payload: Option<&str>) -> Part {
        Part::Reasoning(Reasoning {
            provider: "anthropic".into(),
            text: text.map(str::to_string),
            payload: payload.map(str::to_string),
        })
    }

    fn refusal(part: &Part) -> String {
        part.validate("parts[1]").unwrap_err().to_string()
    }

    #[test]
    fn a_thinking_block_without_its_signature_is_refused() {
        let unsigned = r#"{"type": "thinking", "thinking": "check the ledger"}"#;
        let err = refusal(&part(Some("check the ledger"), Some(unsigned)));
        assert!(err.starts_with("parts[1].payload.signature:"), "{err}");
        let blank = r#"{"type": "thinking", "thinking": "x", "signature": ""}"#;
        assert!(refusal(&part(None, Some(blank))).contains("signature"));
        part(Some("check the ledger"), Some(THINKING))
            .validate("parts[1]")
            .unwrap();
    }

    #[test]
    fn each_field_is_named_when_refused() {
        let cases = [
            (part(None, None), "parts[1]:"),
            (part(Some(""), None), "parts[1]:"),
            (part(None, Some("[1, 2]")), "parts[1].payload:"),
            (
                part(None, Some("{\"thinking\": \"x\"}")),
                "parts[1].payload.type:",
            ),
            (
                part(None, Some(r#"{"type": "thinking", "signature": "s"}"#)),
                "parts[1].payload.thinking:",
            ),
            (
                part(None, Some(r#"{"type": "redacted_thinking", "data": ""}"#)),
                "parts[1].payload.data:",
            ),
            (
                part(None, Some(r#"{"type": "thought_signature", "id": "c1"}"#)),
                "parts[1].payload.signature:",
            ),
            (
                part(
                    None,
                    Some(r#"{"type": "thought_signature", "signature": "s"}"#),
                ),
                "parts[1].payload.id:",
            ),
        ];
        for (part, field) in cases {
            assert!(
                refusal(&part).starts_with(field),
                "{field}: {}",
                refusal(&part)
            );
        }
        let mut nameless = part(Some("x"), None);
        if let Part::Reasoning(reasoning) = &mut nameless {
            reasoning.provider.clear();
        }
        assert!(refusal(&nameless).starts_with("parts[1].provider:"));
        // A block of another provider's making is kept as it came.
        part(None, Some(r#"{"type": "summary", "encrypted": "e"}"#))
            .validate("parts[1]")
            .unwrap();
        // A Responses API item needs what the provider reads it back by.
        let bare = part(Some("x"), Some(r#"{"type": "reasoning", "summary": []}"#));
        assert!(refusal(&bare).starts_with("parts[1].payload.encrypted_content:"));
        for item in [
            r#"{"type": "reasoning", "encrypted_content": "gAAA"}"#,
            r#"{"type": "reasoning", "id": "rs_1", "summary": []}"#,
        ] {
            part(None, Some(item)).validate("parts[1]").unwrap();
        }
    }

    #[test]
    fn the_payload_reads_back_byte_for_byte() {
        let stored = part(Some("check the ledger"), Some(THINKING));
        let columns = stored.columns();
        let back = Part::from_columns(
            "reasoning",
            StoredColumns {
                id: "prt_1".into(),
                body: columns.body.into_owned(),
                ..StoredColumns::default()
            },
        )
        .unwrap();
        let Part::Reasoning(back) = back else {
            panic!("expected reasoning")
        };
        assert_eq!(back.payload.as_deref(), Some(THINKING));
    }

    #[test]
    fn readers_see_the_readable_text_and_never_the_signature() {
        let signed = part(Some("check the ledger"), Some(THINKING));
        assert_eq!(signed.transcript(None), "[reasoning] check the ledger");
        let mut full = String::new();
        signed.write_full(false, &mut full);
        assert!(full.contains("check the ledger") && !full.contains("RXVzaWduZWQ="));
        let redacted = part(
            None,
            Some(r#"{"type": "redacted_thinking", "data": "c2VjcmV0"}"#),
        );
        assert_eq!(redacted.transcript(None), "[reasoning: redacted]");
        assert!(signed.said().is_none() && signed.pruned_marker("prt_1", &[]).is_none());
        assert!(!signed.counted_in_view());
    }

    #[test]
    fn a_block_is_sent_back_only_to_its_provider_and_costs_its_json_at_least() {
        let Part::Reasoning(signed) = part(Some("check the ledger"), Some(THINKING)) else {
            unreachable!()
        };
        assert!(signed.replayed_to("openai").is_none());
        let block = signed.replayed_to("anthropic").unwrap();
        let counter = TokenCounter::new("gpt-4o", 1.0);
        let cost = replay_tokens(std::slice::from_ref(&block), &counter);
        assert!(cost >= counter.count(THINKING) + counter.count("check the ledger"));
        assert_eq!(block.kind, BlockKind::Thinking);
        let readable = Reasoning {
            payload: None,
            ..signed
        };
        assert!(readable.replayed_to("anthropic").is_none());
        let item = Reasoning {
            provider: "openai".into(),
            text: Some("plan".into()),
            payload: Some(r#"{"id": "rs_1", "type": "reasoning", "summary": []}"#.into()),
        };
        assert_eq!(
            item.replayed_to("openai").unwrap().kind,
            BlockKind::ReasoningItem
        );
        // A call's signature goes on its call, never beside the message.
        let signed = Reasoning {
            provider: "gemini".into(),
            text: None,
            payload: Some(r#"{"type":"thought_signature","id":"c1","signature":"c2ln"}"#.into()),
        };
        assert!(
            signed.replayed_to("gemini").is_none() && signed.signature_for("vertex_ai").is_none()
        );
        let signature = signed.signature_for("gemini").unwrap();
        assert_eq!(signature.signed_id(), "c1__thought__c2ln");
    }
}
