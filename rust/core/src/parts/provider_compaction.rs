//! What a provider's own compaction returned: Anthropic's `compaction` block (its
//! summary of the conversation before it, signed) or an OpenAI Responses
//! `compaction` item (encrypted). The provider reads it back in place of every
//! message before it, so it is kept verbatim, as the JSON text that arrived, and
//! only ever parsed.
//!
//! It goes back to the provider that made it, as that provider requires it (see
//! `context/render.rs`); to another provider its readable summary goes as text, and
//! a block without one goes nowhere. The messages it stands for stay stored,
//! searchable and expandable: lossless never deletes what was said.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::Value;

use super::checks::{check_content, check_identifier};
use super::kind::{Columns, PartKind, Rendered, SearchSql, StoredColumns};
use super::wire::{WireSink, WireSource};
use crate::error::{Error, Result};
use crate::tokens::TokenCounter;

/// Framing of the block as sent (its entry in the provider's list).
const BLOCK_OVERHEAD: usize = 4;

/// A provider's compaction block, as that provider sent it.
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderCompaction {
    /// The provider that made it, as litellm names providers (`anthropic`, `openai`).
    pub provider: String,
    /// Its readable summary, if the provider showed one (Anthropic's `content`).
    pub text: Option<String>,
    /// The block or item as JSON text, exactly as received.
    pub payload: String,
}

impl ProviderCompaction {
    /// What a request to `provider` carries of it: the block itself to the provider
    /// that made it, its readable summary as text to another, or nothing.
    #[must_use]
    pub fn sent_to(&self, provider: &str) -> Option<CompactionSent<'_>> {
        if self.provider == provider {
            return Some(CompactionSent::Block(&self.payload));
        }
        self.text
            .as_deref()
            .filter(|text| !text.trim().is_empty())
            .map(|text| {
                CompactionSent::Text(format!(
                    "[the conversation before this point, as {} compacted it]\n{text}",
                    self.provider
                ))
            })
    }
}

/// How a compaction block goes into a request.
#[derive(Clone, Debug, PartialEq)]
pub enum CompactionSent<'a> {
    /// The block as its provider takes it back (litellm's `compaction_blocks`).
    Block(&'a str),
    /// Its readable summary, as a block of the message's text.
    Text(String),
}

/// The `provider_compaction` kind: its fields are stored as a JSON object in the
/// body, the payload as a string within it.
pub struct ProviderCompactionKind;

impl PartKind for ProviderCompactionKind {
    type Data = ProviderCompaction;
    const NAME: &'static str = "provider_compaction";
    // The readable summary only: never a signature or encrypted content.
    const SEARCH_SQL: SearchSql = SearchSql {
        sqlite: Some("COALESCE(p.body ->> '$.text', '')"),
        postgres: Some("COALESCE(CAST(p.body AS jsonb) ->> 'text', '')"),
    };

    fn validate(block: &ProviderCompaction, field: &str) -> Result<()> {
        check_identifier(&format!("{field}.provider"), &block.provider)?;
        if let Some(text) = &block.text {
            check_content(&format!("{field}.text"), text)?;
        }
        check_payload(&format!("{field}.payload"), &block.payload)
    }

    fn text_bytes(block: &ProviderCompaction) -> usize {
        block.text.as_ref().map_or(0, String::len) + block.payload.len()
    }

    fn file_ids(_block: &ProviderCompaction) -> Vec<String> {
        Vec::new()
    }

    /// The block's JSON (which holds its summary): what it costs sent to its
    /// provider, never less than its summary sent as text to another.
    fn tokens(block: &ProviderCompaction, counter: &TokenCounter) -> (usize, usize) {
        let text = block.text.as_deref().map_or(0, |text| counter.count(text));
        (counter.count(&block.payload).max(text) + BLOCK_OVERHEAD, 0)
    }

    fn columns(block: &ProviderCompaction) -> Columns<'_> {
        let body = serde_json::json!({
            "provider": block.provider,
            "text": block.text,
            "payload": block.payload,
        });
        Columns {
            body: Cow::Owned(body.to_string()),
            ..Columns::default()
        }
    }

    fn from_columns(columns: StoredColumns) -> Result<ProviderCompaction> {
        let value: Value = serde_json::from_str(&columns.body)
            .map_err(|err| Error::Sqlite(format!("corrupt compaction part: {err}")))?;
        let text = |key: &str| value[key].as_str().map(str::to_string);
        Ok(ProviderCompaction {
            provider: text("provider").unwrap_or_default(),
            text: text("text"),
            payload: text("payload").unwrap_or_default(),
        })
    }

    fn write_wire<S: WireSink>(
        block: &ProviderCompaction,
        sink: &mut S,
    ) -> std::result::Result<(), S::Error> {
        sink.text("provider", Some(&block.provider))?;
        sink.text("text", block.text.as_deref())?;
        sink.text("payload", Some(&block.payload))
    }

    fn read_wire<S: WireSource>(source: &S, field: &str) -> Result<ProviderCompaction> {
        Ok(ProviderCompaction {
            provider: source.required_text("provider", field)?,
            text: source.text("text", field)?,
            payload: source.required_text("payload", field)?,
        })
    }

    fn render<'a>(block: &'a ProviderCompaction, _pruned: Option<&'a str>) -> Rendered<'a> {
        Rendered::ProviderCompaction(block)
    }

    fn transcript<'a>(block: &'a ProviderCompaction, _pruned: Option<&'a str>) -> Cow<'a, str> {
        Cow::Owned(readable(block))
    }

    fn write_full(block: &ProviderCompaction, _pruned: bool, out: &mut String) {
        let _ = write!(out, "compaction ({})\n{}", block.provider, readable(block));
    }
}

/// What a reader is shown: the readable summary, marked as the provider's, or a
/// one-line marker. Never a signature or encrypted content.
fn readable(block: &ProviderCompaction) -> String {
    match block.text.as_deref() {
        Some(text) if !text.trim().is_empty() => {
            format!("[{} compaction] {text}", block.provider)
        }
        _ => format!("[{} compaction: encrypted]", block.provider),
    }
}

/// Rejects a payload that is not a provider's compaction block: a JSON object whose
/// `type` is `compaction`, with what its provider reads it back by (Anthropic's
/// `content`, a Responses item's `encrypted_content`). `field` names it in errors.
pub fn check_payload(field: &str, payload: &str) -> Result<()> {
    check_content(field, payload)?;
    let Ok(Value::Object(block)) = serde_json::from_str::<Value>(payload) else {
        return Err(Error::invalid(field.to_string(), "expected a JSON object"));
    };
    if block.get("type").and_then(Value::as_str) != Some("compaction") {
        return Err(Error::invalid(
            format!("{field}.type"),
            "expected \"compaction\": a provider's compaction block or item",
        ));
    }
    let holds = |key: &str| {
        block
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|value| !value.is_empty())
    };
    if holds("content") || holds("encrypted_content") {
        Ok(())
    } else {
        Err(Error::invalid(
            format!("{field}.content"),
            "a compaction block needs its content (or an item its encrypted_content)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parts::Part;

    const BLOCK: &str =
        r#"{"type": "compaction", "content": "The ledger balances.", "signature": "c2ln"}"#;
    const ITEM: &str = r#"{"id": "cmp_1", "type": "compaction", "encrypted_content": "gAAA"}"#;

    fn part(provider: &str, text: Option<&str>, payload: &str) -> Part {
        Part::ProviderCompaction(ProviderCompaction {
            provider: provider.into(),
            text: text.map(str::to_string),
            payload: payload.into(),
        })
    }

    #[test]
    fn a_payload_that_is_no_compaction_block_is_refused_naming_the_field() {
        for (payload, field) in [
            ("[1]", "parts[0].payload:"),
            (r#"{"type": "thinking"}"#, "parts[0].payload.type:"),
            (r#"{"type": "compaction"}"#, "parts[0].payload.content:"),
            (
                r#"{"type": "compaction", "content": ""}"#,
                "parts[0].payload.content:",
            ),
        ] {
            let err = part("anthropic", None, payload)
                .validate("parts[0]")
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(field), "{payload}: {err}");
        }
        part("anthropic", Some("The ledger balances."), BLOCK)
            .validate("parts[0]")
            .unwrap();
        part("openai", None, ITEM).validate("parts[0]").unwrap();
    }

    #[test]
    fn the_block_reads_back_byte_for_byte_and_readers_never_see_secrets() {
        let stored = part("anthropic", Some("The ledger balances."), BLOCK);
        let back = Part::from_columns(
            "provider_compaction",
            StoredColumns {
                id: "prt_1".into(),
                body: stored.columns().body.into_owned(),
                ..StoredColumns::default()
            },
        )
        .unwrap();
        assert_eq!(back, stored);
        assert_eq!(
            stored.transcript(None),
            "[anthropic compaction] The ledger balances."
        );
        let sealed = part("openai", None, ITEM);
        let mut full = String::new();
        sealed.write_full(false, &mut full);
        assert!(full.contains("encrypted") && !full.contains("gAAA"));
    }

    #[test]
    fn the_block_goes_to_its_provider_and_its_summary_alone_elsewhere() {
        let Part::ProviderCompaction(block) = part("anthropic", Some("Balanced."), BLOCK) else {
            unreachable!()
        };
        assert_eq!(
            block.sent_to("anthropic"),
            Some(CompactionSent::Block(BLOCK))
        );
        let Some(CompactionSent::Text(text)) = block.sent_to("openai") else {
            panic!("expected the summary as text")
        };
        assert!(text.ends_with("\nBalanced.") && !text.contains("c2ln"));
        let Part::ProviderCompaction(item) = part("openai", None, ITEM) else {
            unreachable!()
        };
        assert_eq!(item.sent_to("anthropic"), None);
    }
}
