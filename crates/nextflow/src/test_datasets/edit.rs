//! Byte-exact edits of a text: a span replaced or a line inserted, every other byte kept, and
//! the lines that changed reported as they read afterwards.

use std::path::Path;

/// One change to a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Edit {
    /// The bytes `start..end` become `with`.
    Replace {
        start: usize,
        end: usize,
        with: String,
    },
    /// `line` (ending with the text's own line end) goes in before the byte `at`, a line start.
    Insert { at: usize, line: String },
}

impl Edit {
    fn at(&self) -> usize {
        match self {
            Edit::Replace { start, .. } => *start,
            Edit::Insert { at, .. } => *at,
        }
    }
}

/// A line of the rewritten text, 1-based, and whether it is new.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedLine {
    pub line: u32,
    pub text: String,
    pub inserted: bool,
}

/// `text` with `edits` applied (they must not overlap) and the lines they touched.
pub(crate) fn apply(text: &str, mut edits: Vec<Edit>) -> (String, Vec<ChangedLine>) {
    edits.sort_by_key(Edit::at);
    let mut out = String::with_capacity(text.len() + 256);
    let mut marks: Vec<(usize, bool)> = Vec::new();
    let mut copied = 0;
    for edit in &edits {
        match edit {
            Edit::Replace { start, end, with } => {
                out.push_str(&text[copied..*start]);
                marks.push((out.len(), false));
                out.push_str(with);
                copied = *end;
            }
            Edit::Insert { at, line } => {
                out.push_str(&text[copied..*at]);
                marks.push((out.len(), true));
                out.push_str(line);
                copied = *at;
            }
        }
    }
    out.push_str(&text[copied..]);
    let mut changed: Vec<ChangedLine> = Vec::new();
    for (offset, inserted) in marks {
        let line = line_number(&out, offset);
        if changed.iter().any(|c| c.line == line) {
            continue;
        }
        changed.push(ChangedLine {
            line,
            text: line_text(&out, offset).to_owned(),
            inserted,
        });
    }
    (out, changed)
}

/// The 1-based line holding the byte `offset`.
pub(crate) fn line_number(text: &str, offset: usize) -> u32 {
    let count = text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count();
    u32::try_from(count + 1).unwrap_or(u32::MAX)
}

/// The byte where the 1-based `line` starts, if the text has it.
pub(crate) fn line_start(text: &str, line: u32) -> Option<usize> {
    if line <= 1 {
        return Some(0);
    }
    text.match_indices('\n')
        .nth(usize::try_from(line).ok()? - 2)
        .map(|(at, _)| at + 1)
}

/// The line holding `offset`, without its line end.
pub(crate) fn line_text(text: &str, offset: usize) -> &str {
    let start = text[..offset].rfind('\n').map_or(0, |at| at + 1);
    let end = text[offset..]
        .find('\n')
        .map_or(text.len(), |at| offset + at);
    text[start..end].trim_end_matches('\r')
}

/// The line end the text uses at the line starting at `at` (`\r\n` or `\n`).
pub(crate) fn line_end_at(text: &str, at: usize) -> &'static str {
    match text[at..].find('\n') {
        Some(end) if end > 0 && text.as_bytes()[at + end - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// `path` as the inside of a Groovy string quoted with `quote` (`'` or `"`): backslashes and
/// the quote escaped, and `$` too in a double-quoted one so nothing interpolates.
pub(crate) fn groovy_quoted(path: &str, quote: char) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '$' if quote == '"' => out.push_str("\\$"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A local directory as a base path value: the path with a final `/`, as base paths are
/// concatenated with what follows.
pub(crate) fn as_base(dir: &Path) -> String {
    let mut text = dir.to_string_lossy().into_owned();
    if !text.ends_with('/') {
        text.push('/');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_keep_every_other_byte_and_report_the_lines_they_touched() {
        let text = "a\r\nb = 'x'\r\nc\r\n";
        let at = text.find('x').unwrap_or(0);
        let (out, lines) = apply(
            text,
            vec![
                Edit::Replace {
                    start: at,
                    end: at + 1,
                    with: "yy".to_owned(),
                },
                Edit::Insert {
                    at: 3,
                    line: "n = 1\r\n".to_owned(),
                },
            ],
        );
        assert_eq!(out, "a\r\nn = 1\r\nb = 'yy'\r\nc\r\n");
        assert_eq!(
            lines,
            vec![
                ChangedLine {
                    line: 2,
                    text: "n = 1".to_owned(),
                    inserted: true
                },
                ChangedLine {
                    line: 3,
                    text: "b = 'yy'".to_owned(),
                    inserted: false
                },
            ]
        );
        assert_eq!(line_end_at(text, 3), "\r\n");
        assert_eq!(line_start(text, 3), Some(12));
    }

    #[test]
    fn paths_are_escaped_for_the_quote_they_go_in() {
        assert_eq!(groovy_quoted("/a/it's", '\''), "/a/it\\'s");
        assert_eq!(groovy_quoted("/a/$x\"y", '"'), "/a/\\$x\\\"y");
        assert_eq!(groovy_quoted("/a/$x", '\''), "/a/$x");
    }
}
