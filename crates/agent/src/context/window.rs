//! The context windows of known models, by name.

/// The window assumed for a model this table does not know and the configuration does not name
/// (`context_window` in the provider's section). Small on purpose: a local server started with
/// its defaults often holds no more, and a window guessed too small costs some evicted results,
/// while one guessed too large gets every long session refused by the API.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 32_768;

/// Model name prefixes and their input windows in tokens, the most specific first. Matched
/// against the model's last `/`-separated segment, case-insensitively (so a router's
/// `anthropic/claude-…` counts). Where a vendor gives a total window shared with the answer,
/// the figure is what the input may use.
const KNOWN: &[(&str, u64)] = &[
    ("claude-", 200_000),
    ("gpt-5", 272_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("sonar", 127_072),
    ("llama3.1", 131_072),
    ("llama3.2", 131_072),
    ("llama3.3", 131_072),
    ("qwen2.5", 32_768),
    ("qwen3", 40_960),
    ("mistral", 32_768),
    ("gemma", 8_192),
];

/// The window of `model` when the table knows it.
pub fn known_context_window(model: &str) -> Option<u64> {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    KNOWN
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|(_, window)| *window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_specific_prefix_wins_and_unknown_models_get_none() {
        assert_eq!(known_context_window("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(
            known_context_window("anthropic/Claude-Opus-4-1"),
            Some(200_000)
        );
        assert_eq!(known_context_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(known_context_window("gpt-4-turbo-preview"), Some(128_000));
        assert_eq!(known_context_window("gpt-4"), Some(8_192));
        assert_eq!(known_context_window("gpt-4.1-nano"), Some(1_047_576));
        assert_eq!(known_context_window("o1-mini"), Some(128_000));
        assert_eq!(known_context_window("local-model"), None);
        assert_eq!(known_context_window(""), None);
    }
}
