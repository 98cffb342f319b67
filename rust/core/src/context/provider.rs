//! Which provider a session's requests go to, named as litellm names providers.
//!
//! A provider's signed reasoning goes back only to that provider (see
//! `context/replay.rs`), so the store needs the provider of a session's model:
//! litellm's own routing (`litellm.get_llm_provider`) read from the model name
//! alone. The same function names the provider of the reasoning a session stores,
//! so the two always agree.

/// The provider `model` is routed to: the prefix of `provider/name` (`anthropic`,
/// `bedrock`, `vertex_ai`, `openrouter`, ...), else the provider of a bare name's
/// family as litellm resolves it (`claude-…` is Anthropic's, a Bedrock model id
/// such as `us.anthropic.claude-…` Bedrock's, `gemini-…` Vertex AI's), else
/// `openai`, whose bare names litellm takes as they are.
#[must_use]
pub fn provider_of(model: &str) -> &str {
    if let Some((prefix, name)) = model.split_once('/') {
        if !prefix.is_empty() && !name.is_empty() {
            return prefix;
        }
    }
    let name = model.trim();
    if starts_with_ignoring_case(name, "claude") {
        "anthropic"
    } else if name.to_ascii_lowercase().contains("anthropic.") {
        "bedrock"
    } else if starts_with_ignoring_case(name, "gemini") {
        "vertex_ai"
    } else if starts_with_ignoring_case(name, "deepseek") {
        "deepseek"
    } else {
        "openai"
    }
}

fn starts_with_ignoring_case(text: &str, prefix: &str) -> bool {
    text.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_names_the_provider_and_bare_names_their_family() {
        for (model, provider) in [
            ("anthropic/claude-sonnet-4-5", "anthropic"),
            ("claude-opus-4-1-20250805", "anthropic"),
            (
                "bedrock/us.anthropic.claude-3-7-sonnet-20250219-v1:0",
                "bedrock",
            ),
            ("us.anthropic.claude-3-7-sonnet-20250219-v1:0", "bedrock"),
            ("anthropic.claude-3-5-sonnet-20240620-v1:0", "bedrock"),
            ("vertex_ai/claude-3-7-sonnet@20250219", "vertex_ai"),
            ("openrouter/anthropic/claude-3.7-sonnet", "openrouter"),
            ("gemini/gemini-2.5-pro", "gemini"),
            ("gemini-2.5-pro", "vertex_ai"),
            ("deepseek/deepseek-reasoner", "deepseek"),
            ("openai/lossless-test", "openai"),
            ("gpt-4o", "openai"),
            ("o3-mini", "openai"),
            ("/odd", "openai"),
        ] {
            assert_eq!(provider_of(model), provider, "{model}");
        }
    }
}
