//! `session_describe`: the session's own filing, its title and tags.

use serde_json::{Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;
use crate::limits::{TAG_MAX_CHARS, TAGS_MAX, TITLE_MAX_CHARS};

pub const SESSION_DESCRIBE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::SessionDescribe,
    "Read this session's title and tags, or change them; with no arguments it only reports them. title: one line (the first prompt is the title until one is set). tags replaces every tag; add_tags and remove_tags edit them and cannot go with tags. A tag is lowercased: letters, digits, `-`, `_`, `.` and `/`.",
    session_describe,
);

fn session_describe() -> Value {
    let tags = json!({"type": "array", "items": {"type": "string", "maxLength": TAG_MAX_CHARS}, "maxItems": TAGS_MAX});
    json!({
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": TITLE_MAX_CHARS},
            "tags": tags,
            "add_tags": tags,
            "remove_tags": tags
        }
    })
}

pub const SWITCH_MODEL: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::SwitchModel,
    "Switch to another model or reasoning level, only when the user asked for it. model: a configured model id, its name without the provider, or a unique part of one. reasoning: low, medium or high (default: the model's own). scope: session (default; from the next request on, kept when the session resumes) or turn (this turn only).",
    switch_model,
);

fn switch_model() -> Value {
    json!({
        "type": "object",
        "properties": {
            "model": {"type": "string", "description": "a configured model id or a unique part of one"},
            "reasoning": {"type": "string", "enum": Reasoning::NAMES},
            "scope": {"type": "string", "enum": ["session", "turn"]}
        }
    })
}

/// How hard the model reasons before it answers (`switch_model`'s `reasoning`): what an
/// OpenAI reasoning model reads as `reasoning_effort`. `default` leaves it to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reasoning {
    Low,
    Medium,
    High,
    /// The model's own level: nothing is sent.
    Default,
}

impl Reasoning {
    /// The names the tool takes, in order.
    pub const NAMES: [&'static str; 4] = ["low", "medium", "high", "default"];

    pub const fn as_str(self) -> &'static str {
        match self {
            Reasoning::Low => "low",
            Reasoning::Medium => "medium",
            Reasoning::High => "high",
            Reasoning::Default => "default",
        }
    }

    /// The level `name` names, exactly as [`Reasoning::as_str`] spells it.
    pub fn parse(name: &str) -> Option<Reasoning> {
        [
            Reasoning::Low,
            Reasoning::Medium,
            Reasoning::High,
            Reasoning::Default,
        ]
        .into_iter()
        .find(|level| level.as_str() == name)
    }
}

impl std::fmt::Display for Reasoning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
