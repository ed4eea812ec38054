//! The gate's result and its answer text (issue 15, item 7).

use std::fmt;
use std::path::PathBuf;

use super::read::SheetFormat;

/// nf-schema shortens a value quoted in an error past this many characters
/// (`validation.maxErrValSize`, default 150): the first half, `...`, the last half.
pub(crate) const MAX_ERROR_VALUE: usize = 150;

/// One validation error, shaped as nf-schema prints it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// The 1-based entry (row) the error is about; `None` for the sheet as a whole.
    pub entry: Option<usize>,
    /// The field (column) the error is about; `None` for the entry as a whole.
    pub field: Option<String>,
    /// The field's value as nf-schema quotes it (shortened past 150 characters).
    pub value: Option<String>,
    /// The message, in the words of nf-schema's validator.
    pub message: String,
    /// The schema's `errorMessage` for the failing keyword, appended in parentheses.
    pub custom: Option<String>,
}

impl fmt::Display for Finding {
    /// `-> Entry N: Error for field 'F' (value): msg (custom)`, `-> Entry N: msg`, or
    /// `-> msg` for the sheet as a whole. Raw: [`GateReport::render`] escapes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.entry, &self.field) {
            (Some(n), Some(field)) => write!(
                f,
                "-> Entry {n}: Error for field '{field}' ({}): {}",
                self.value.as_deref().unwrap_or(""),
                self.message
            )?,
            (Some(n), None) => write!(f, "-> Entry {n}: {}", self.message)?,
            (None, _) => write!(f, "-> {}", self.message)?,
        }
        if let Some(custom) = &self.custom {
            write!(f, " ({custom})")?;
        }
        Ok(())
    }
}

/// The outcome of a samplesheet gate. A passing report is what the daemon records in the
/// ledger, bound to both digests: a launch later checks the sheet's bytes still hash the same.
/// Serialises with the same field names (`format` as `"csv"`, …), for the ledger record.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GateReport {
    /// The sheet that was read (as given, resolved against the launch directory).
    pub sheet_path: PathBuf,
    /// The schema it was validated against.
    pub schema_path: PathBuf,
    /// How the sheet was read.
    pub format: SheetFormat,
    /// Entries (data rows) in the sheet.
    pub rows: usize,
    /// Errors; the gate passes when there is none.
    pub errors: Vec<Finding>,
    /// Warnings (an unknown column, a remote path not checked, …); they never fail a gate.
    pub warnings: Vec<String>,
    /// SHA-256 of the sheet's bytes, lowercase hex.
    pub sheet_sha256: String,
    /// SHA-256 of the schema's bytes, lowercase hex.
    pub schema_sha256: String,
}

impl GateReport {
    /// Whether the sheet passed.
    pub fn passed(&self) -> bool {
        self.errors.is_empty()
    }

    /// The pinned answer: `passed` or `failed` on the first line, then one line per error in
    /// nf-schema's wording, then one line per warning starting `warning:`. Control characters
    /// (a newline inside a quoted cell, say) are escaped, so no value can forge a line.
    pub fn render(&self) -> String {
        let mut out = String::from(if self.passed() { "passed" } else { "failed" });
        for error in &self.errors {
            out.push('\n');
            out.push_str(&escape_line(&error.to_string()));
        }
        for warning in &self.warnings {
            out.push_str("\nwarning: ");
            out.push_str(&escape_line(warning));
        }
        out.push('\n');
        out
    }
}

/// One line of answer text: every control character, and the Unicode line and paragraph
/// separators, written as an escape.
pub(crate) fn escape_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') => {
                out.push_str(&format!("\\u{{{:04x}}}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out
}

/// nf-schema's shortening of a quoted value.
pub(crate) fn shorten_value(value: &str) -> String {
    let count = value.chars().count();
    if count <= MAX_ERROR_VALUE {
        return value.to_owned();
    }
    let half = MAX_ERROR_VALUE / 2;
    let head: String = value.chars().take(half).collect();
    let tail: String = value.chars().skip(count - half).collect();
    format!("{head}...{tail}")
}

/// Lowercase hex of a digest.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_read_as_nf_schema_prints_them() {
        let field = Finding {
            entry: Some(2),
            field: Some("sample".into()),
            value: Some("test 2".into()),
            message: "\"test 2\" does not match regular expression ^\\S+$".into(),
            custom: Some("Sample name must be provided and cannot contain spaces".into()),
        };
        assert_eq!(
            field.to_string(),
            "-> Entry 2: Error for field 'sample' (test 2): \"test 2\" does not match regular expression ^\\S+$ (Sample name must be provided and cannot contain spaces)"
        );
        let entry = Finding {
            entry: Some(1),
            field: None,
            value: None,
            message: "Missing required field(s): sample".into(),
            custom: None,
        };
        assert_eq!(
            entry.to_string(),
            "-> Entry 1: Missing required field(s): sample"
        );
    }

    #[test]
    fn escaping_leaves_one_line() {
        assert_eq!(
            escape_line("a\nfailed\r\tb\u{0}\u{2028}"),
            "a\\nfailed\\r\\tb\\u{0000}\\u{2028}"
        );
    }

    #[test]
    fn long_values_are_shortened_in_the_middle() {
        let long = "x".repeat(100) + &"y".repeat(100);
        let short = shorten_value(&long);
        assert_eq!(short, "x".repeat(75) + "..." + &"y".repeat(75));
        assert_eq!(shorten_value("short"), "short");
    }
}
