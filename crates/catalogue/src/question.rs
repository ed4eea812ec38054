//! `question`: the model asks the person one or more multiple-choice questions and the turn
//! waits for the answers. The bounds are constants here that the tool enforces.

use serde_json::{Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;

/// The most questions one call asks; a person answers a short form, not a survey.
pub const QUESTIONS_MAX: usize = 4;
/// The most options one question offers.
pub const OPTIONS_MAX: usize = 8;
/// The longest `header` (a few words shown as the question's title).
pub const HEADER_MAX_CHARS: usize = 40;
/// The longest option `label` (what the person picks, and what `--answer` names).
pub const LABEL_MAX_CHARS: usize = 80;
/// The longest `question` or option `description`.
pub const TEXT_MAX_CHARS: usize = 1000;

pub const QUESTION: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::Question,
    "Ask the user one or more multiple-choice questions and wait for the answers, when a choice is theirs to make. Each question: header (a few words), question, options (label and description), multiple (more than one may be chosen), custom (the user may answer in their own words). The result names the chosen labels, a custom answer, or that nobody answered.",
    question,
);

fn question() -> Value {
    let option = json!({
        "type": "object",
        "properties": {
            "label": {"type": "string", "maxLength": LABEL_MAX_CHARS},
            "description": {"type": "string", "maxLength": TEXT_MAX_CHARS}
        },
        "required": ["label"]
    });
    json!({
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "minItems": 1,
                "maxItems": QUESTIONS_MAX,
                "items": {
                    "type": "object",
                    "properties": {
                        "header": {"type": "string", "maxLength": HEADER_MAX_CHARS},
                        "question": {"type": "string", "maxLength": TEXT_MAX_CHARS},
                        "options": {"type": "array", "minItems": 1, "maxItems": OPTIONS_MAX, "items": option},
                        "multiple": {"type": "boolean"},
                        "custom": {"type": "boolean"}
                    },
                    "required": ["question", "options"]
                }
            }
        },
        "required": ["questions"]
    })
}
