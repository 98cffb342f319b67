//! Whether a tool call's arguments can go out as they were recorded.

use serde::de::IgnoredAny;

/// Deepest nesting of arguments sent on: `serde_json`'s own limit. Parsers in the
/// request's path recurse per level (litellm's `json.loads` for Anthropic and
/// Gemini, bounded by Python's recursion limit of 1,000 frames), so a deeper value
/// fails there, outside this library, on every turn that sends it.
pub const MAX_ARGUMENT_DEPTH: usize = 128;

/// Whether `text` is one JSON object, the only arguments every provider accepts
/// (Anthropic and Gemini take the arguments as an object, not as text). Nesting
/// deeper than [`MAX_ARGUMENT_DEPTH`] counts as not usable: the providers' own
/// parsers would fail on it too.
#[must_use]
pub fn is_json_object(text: &str) -> bool {
    // `serde_json` skips an `IgnoredAny` without recursion, so without its depth limit:
    // the depth is checked on its own.
    text.trim_start().starts_with('{')
        && nesting_depth(text) <= MAX_ARGUMENT_DEPTH
        && serde_json::from_str::<IgnoredAny>(text).is_ok()
}

/// The deepest nesting of objects and arrays in JSON `text`, brackets inside
/// strings left out. One pass over the bytes; on text that is not JSON the
/// number means nothing, and the parse that follows refuses the text anyway.
fn nesting_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0_usize, 0_usize);
    let (mut in_string, mut escaped) = (false, false);
    for byte in text.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub fn nested(depth: usize) -> String {
        format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth))
    }

    #[test]
    fn arguments_nested_past_the_limit_are_not_usable() {
        assert!(is_json_object(&nested(MAX_ARGUMENT_DEPTH)));
        assert!(!is_json_object(&nested(MAX_ARGUMENT_DEPTH + 1)));
        assert!(!is_json_object(&nested(5_000)));
    }

    #[test]
    fn brackets_in_strings_do_not_count_as_nesting() {
        let brackets = "[{".repeat(MAX_ARGUMENT_DEPTH);
        assert!(is_json_object(&format!(r#"{{"text": "{brackets}"}}"#)));
        assert!(is_json_object(r#"{"quote": "a \" [ {", "b": [1]}"#));
        assert_eq!(nesting_depth(r#"{"a": "\\", "b": [[1]]}"#), 3);
    }
}
