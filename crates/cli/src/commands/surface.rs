//! `codaris tools surface`: what the always-on tools cost the model, in tokens, every round.
//!
//! Each tool is measured as the provider sends it (name, description, JSON schema) with the
//! cl100k BPE as the yardstick; the real cost differs a little per model, the ranking does not.

use codaris_agent::{ToolDefinition, catalogue_spec};
use serde_json::json;

use super::Outcome;
use crate::error::CliError;
use crate::output;

/// What the nine always-on tools may cost together.
pub const BUDGET: usize = 3_500;

/// The always-on tools' specs, in the order they are sent: the catalogue's text, so nothing
/// (no shell runtime, no tool) is built to print it.
pub fn always_on() -> Vec<ToolDefinition> {
    codaris_policy::ALWAYS_ON
        .iter()
        .filter_map(|name| catalogue_spec(name))
        .collect()
}

/// Tokens of one tool as sent: `{"name", "description", "input_schema"}`.
pub fn tokens(bpe: &tiktoken_rs::CoreBPE, spec: &ToolDefinition) -> usize {
    let sent = json!({
        "name": spec.name,
        "description": spec.description,
        "input_schema": spec.input_schema,
    });
    bpe.encode_with_special_tokens(&sent.to_string()).len()
}

pub fn print(json_out: bool) -> Result<Outcome, CliError> {
    let bpe = tiktoken_rs::cl100k_base().map_err(|e| CliError::Terminal {
        message: format!("cannot load the cl100k tokenizer: {e}"),
    })?;
    let specs = always_on();
    let rows: Vec<(String, usize)> = specs
        .iter()
        .map(|spec| (spec.name.clone(), tokens(&bpe, spec)))
        .collect();
    let total: usize = rows.iter().map(|(_, n)| n).sum();
    if json_out {
        output::json(&json!({
            "encoding": "cl100k_base",
            "tools": rows.iter().map(|(name, n)| json!({"name": name, "tokens": n})).collect::<Vec<_>>(),
            "total": total,
            "budget": BUDGET,
        }))?;
    } else {
        let mut lines = vec!["TOOL                 TOKENS".to_owned()];
        lines.extend(rows.iter().map(|(name, n)| format!("{name:<20} {n:>6}")));
        lines.push(format!(
            "total                {total:>6}  (budget {BUDGET}, cl100k_base; {} tools)",
            rows.len()
        ));
        output::line(&lines.join("\n"))?;
    }
    Ok(Outcome::Success)
}
