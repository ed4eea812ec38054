//! `[research]`: the engines `web_research` asks.
//!
//! ```toml
//! [research]
//! engines = ["brave", "bing"]     # what web_research asks; default: tools.websearch_engines
//! ```

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// `[research]`.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ResearchToml {
    pub engines: Option<Vec<String>>,
}

/// `[research] engines`, or `None` to use `tools.websearch_engines`.
pub fn resolve_research_engines(
    toml: Option<ResearchToml>,
    origin: &dyn Fn(&str) -> String,
) -> Result<Option<Vec<codaris_tools::Engine>>, ConfigError> {
    let Some(names) = toml.and_then(|t| t.engines) else {
        return Ok(None);
    };
    if names.is_empty() {
        return Err(ConfigError::Invalid {
            key: origin("research.engines"),
            reason: "names no engine; leave it out to use tools.websearch_engines".to_owned(),
        });
    }
    names
        .iter()
        .map(|name| {
            codaris_tools::Engine::from_name(name).ok_or_else(|| ConfigError::Invalid {
                key: origin("research.engines"),
                reason: format!(
                    "`{name}` is not an engine: use brave, bing, duckduckgo or searxng:<http(s) URL>"
                ),
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(key: &str) -> String {
        format!("`{key}`")
    }

    #[test]
    fn research_engines_default_to_none_and_refuse_an_empty_list() {
        assert!(matches!(resolve_research_engines(None, &origin), Ok(None)));
        let empty = ResearchToml {
            engines: Some(vec![]),
        };
        assert!(resolve_research_engines(Some(empty), &origin).is_err());
        let one = ResearchToml {
            engines: Some(vec!["duckduckgo".into()]),
        };
        assert!(matches!(
            resolve_research_engines(Some(one), &origin),
            Ok(Some(engines)) if engines.len() == 1
        ));
    }
}
