//! Answer lines: `key: value`, the value kept on one line; file content as lines of their
//! own behind a `name| ` prefix, so no byte of a file can start a line of the answer.

use std::fmt::Write;

use super::read::FileText;

/// Control characters (and the Unicode line separators) written as escapes.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}') => {
                let _ = write!(out, "\\u{{{:04x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// `key: value`, the value escaped.
pub(crate) fn fact(out: &mut String, key: &str, value: impl AsRef<str>) {
    out.push_str(key);
    out.push_str(": ");
    out.push_str(&escape(value.as_ref()));
    out.push('\n');
}

/// A file's lines, each behind `prefix| `, after a line saying what is shown.
pub(crate) fn file_block(out: &mut String, prefix: &str, label: &str, file: &FileText) {
    let lines = file.text.lines().count();
    let what = if file.text.is_empty() {
        format!("{label}: (empty, {} bytes)", file.size)
    } else if file.truncated {
        format!("{label}: last {} of {} bytes", count(lines), file.size)
    } else {
        format!("{label}: {}", count(lines))
    };
    out.push_str(&escape(&what));
    out.push('\n');
    prefixed_lines(out, prefix, &file.text);
}

/// Each line of `text` behind `prefix| `, escaped: file content never reads as an answer line.
fn prefixed_lines(out: &mut String, prefix: &str, text: &str) {
    for line in text.lines() {
        out.push_str(prefix);
        out.push_str("| ");
        out.push_str(&escape(line));
        out.push('\n');
    }
}

/// The head of a file (a script), said as such when it was cut.
pub(crate) fn head_block(out: &mut String, prefix: &str, label: &str, file: &FileText) {
    let lines = file.text.lines().count();
    let what = if file.truncated {
        format!("{label}: first {} of {} bytes", count(lines), file.size)
    } else {
        format!("{label}: {}", count(lines))
    };
    out.push_str(&escape(&what));
    out.push('\n');
    prefixed_lines(out, prefix, &file.text);
}

fn count(lines: usize) -> String {
    if lines == 1 {
        "1 line".to_string()
    } else {
        format!("{lines} lines")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_stays_on_its_line() {
        let mut out = String::new();
        fact(&mut out, "task", "X\nexit: 0\r\u{2028}\u{1b}[2J");
        assert_eq!(out, "task: X\\nexit: 0\\r\\u{2028}\\u{001b}[2J\n");
    }

    #[test]
    fn file_lines_are_prefixed() {
        let mut out = String::new();
        let file = FileText {
            text: "status: OK\nfine\n".into(),
            size: 16,
            truncated: false,
        };
        file_block(&mut out, "stderr", ".command.err", &file);
        assert_eq!(
            out,
            ".command.err: 2 lines\nstderr| status: OK\nstderr| fine\n"
        );
    }
}
