//! A finding and its one-line rendering, `FILE:LINE: [RULE-ID] SEVERITY: message`.

use serde::{Deserialize, Serialize};

use super::rule::Severity;

/// One thing a rule found. `file` is relative to the pipeline, `/`-separated; `line` counts from
/// 1, and is 0 when the finding is about a whole file (a required file that is missing).
/// Ordered by file, line, rule, so a sorted list reads like a compiler's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Finding {
    pub file: String,
    pub line: usize,
    pub rule: String,
    pub severity: Severity,
    pub message: String,
    /// Why the rule exists: its description.
    #[serde(default)]
    pub why: String,
    /// Where the rule's practice is documented (nf-core's lint docs, Nextflow's reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
}

impl Finding {
    /// `FILE:LINE: [RULE-ID] SEVERITY: message`, on one line whatever the file name or message hold.
    pub fn render(&self) -> String {
        format!(
            "{}:{}: [{}] {}: {}",
            one_line(&self.file),
            self.line,
            self.rule,
            self.severity,
            one_line(&self.message)
        )
    }
}

/// Why each rule with findings exists, once per rule in order of first appearance:
/// `[RULE-ID] description (see URL)`, so every finding line has its reason and doc link
/// without repeating them on a hundred lines.
pub fn render_reasons(findings: &[Finding]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    let mut out = String::new();
    for f in findings {
        if seen.contains(&f.rule.as_str()) {
            continue;
        }
        seen.push(&f.rule);
        out.push_str(&format!("[{}] {}", f.rule, one_line(&f.why)));
        if let Some(doc) = &f.doc {
            out.push_str(&format!(" (see {})", one_line(doc)));
        }
        out.push('\n');
    }
    out
}

/// One finding per line, each ending in a newline.
pub fn render_findings(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        out.push_str(&f.render());
        out.push('\n');
    }
    out
}

/// Control characters written as escapes, so a file named `a\nb.nf` (or a message quoting
/// one) cannot forge a second finding line.
pub(crate) fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}
