//! Every kind through every codec it declares.

use std::collections::HashMap;

use super::*;
use crate::error::Result;

fn samples() -> Vec<Part> {
    vec![
        Part::Text("the plan is in file_0123456789abcdef".into()),
        Part::Tool(ToolCallPart {
            name: "read".into(),
            call_id: "call_1".into(),
            input: r#"{"path": "a.txt"}"#.into(),
            output: Some("three lines".into()),
            status: ToolStatus::Completed,
            error: Some("one warning".into()),
        }),
        Part::Tool(ToolCallPart {
            name: "wait".into(),
            call_id: "call_2".into(),
            input: String::new(),
            output: None,
            status: ToolStatus::Running,
            error: None,
        }),
        Part::FileRef(FileRef {
            file_id: "file_0123456789abcdef".into(),
            path: "notes/plan.md".into(),
            file_type: "markdown".into(),
            token_count: 4_200,
            summary: "the plan, in three steps".into(),
        }),
        Part::Reasoning(Reasoning {
            provider: "anthropic".into(),
            text: Some("the ledger first".into()),
            payload: Some(
                r#"{"type":"thinking","thinking":"the ledger first","signature":"c2ln"}"#.into(),
            ),
        }),
        Part::Reasoning(Reasoning {
            provider: "deepseek".into(),
            text: Some("weighing both".into()),
            payload: None,
        }),
        Part::Media(
            Media::from_input(
                MediaInput {
                    url: Some("https://example.com/chart.png".into()),
                    caption: Some("the chart".into()),
                    detail: Some("low".into()),
                    call_id: Some("call_7".into()),
                    ..MediaInput::default()
                },
                "parts[0]",
            )
            .unwrap(),
        ),
        Part::ProviderCompaction(ProviderCompaction {
            provider: "anthropic".into(),
            text: Some("the ledger balances".into()),
            payload: r#"{"type":"compaction","content":"the ledger balances"}"#.into(),
        }),
    ]
}

/// A wire dict as a map of optional values.
#[derive(Default)]
struct Dict(HashMap<String, Option<String>>);

impl WireSink for Dict {
    type Error = std::convert::Infallible;

    fn text(&mut self, key: &str, value: Option<&str>) -> std::result::Result<(), Self::Error> {
        self.0.insert(key.into(), value.map(str::to_string));
        Ok(())
    }

    fn int(&mut self, key: &str, value: i64) -> std::result::Result<(), Self::Error> {
        self.0.insert(key.into(), Some(value.to_string()));
        Ok(())
    }
}

impl WireSource for Dict {
    fn text(&self, key: &str, _field: &str) -> Result<Option<String>> {
        Ok(self.0.get(key).cloned().flatten())
    }

    fn int(&self, key: &str, field: &str) -> Result<Option<i64>> {
        self.text(key, field)
            .map(|value| value.and_then(|text| text.parse().ok()))
    }

    fn bytes(&self, _key: &str, _field: &str) -> Result<Option<Vec<u8>>> {
        Ok(None)
    }
}

#[test]
fn every_kind_reads_back_what_its_columns_store() {
    for part in samples() {
        let columns = part.columns();
        let stored = StoredColumns {
            id: "prt_1".into(),
            body: columns.body.into_owned(),
            tool_name: columns.tool_name.map(str::to_string),
            call_id: columns.call_id.map(str::to_string),
            tool_status: columns.tool_status.map(str::to_string),
            tool_error: columns.tool_error.map(str::to_string),
            output: columns.output,
        };
        assert!(columns.media.is_none());
        assert_eq!(Part::from_columns(part.kind(), stored).unwrap(), part);
    }
}

#[test]
fn every_kind_reads_back_what_its_wire_dict_carries() {
    for part in samples() {
        let mut dict = Dict::default();
        part.write_wire(&mut dict).unwrap();
        assert_eq!(dict.0["kind"].as_deref(), Some(part.kind()));
        assert_eq!(Part::read_wire(&dict, "parts[0]").unwrap(), part);
    }
}

#[test]
fn an_unknown_kind_is_refused_naming_the_known_ones() {
    let mut dict = Dict::default();
    dict.0.insert("kind".into(), Some("hologram".into()));
    let err = Part::read_wire(&dict, "parts[3]").unwrap_err().to_string();
    assert!(err.contains("parts[3].kind"), "{err}");
    assert!(
        err.contains("expected text, tool, file_ref, reasoning, media or provider_compaction"),
        "{err}"
    );
    let stored = StoredColumns {
        id: "prt_9".into(),
        ..StoredColumns::default()
    };
    assert!(Part::from_columns("hologram", stored).is_err());
}

#[test]
fn the_kind_constraint_lists_the_kinds_in_order_then_the_reserved_one() {
    assert_eq!(
        kind_check(),
        "'text', 'tool', 'file_ref', 'reasoning', 'media', 'provider_compaction', \
         'compaction_marker'"
    );
}

#[test]
fn the_search_text_covers_each_kind_that_declares_one() {
    for postgres in [false, true] {
        let sql = search_text_sql(postgres);
        assert!(sql.starts_with("CASE p.kind WHEN 'tool' THEN p.tool_name"));
        assert!(sql.contains("WHEN 'file_ref' THEN concat_ws"));
        assert!(sql.contains("WHEN 'reasoning' THEN COALESCE("));
        assert!(sql.contains("WHEN 'media' THEN concat_ws"));
        assert!(sql.ends_with("ELSE p.body END"));
    }
}

#[test]
fn only_a_tool_call_has_a_pruned_marker_and_only_text_is_said() {
    for part in samples() {
        let marker = part.pruned_marker("prt_1", &[]);
        assert_eq!(marker.is_some(), matches!(part, Part::Tool(_)));
        assert_eq!(part.said().is_some(), matches!(part, Part::Text(_)));
    }
}
