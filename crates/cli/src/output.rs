//! Writing to stdout so that a closed pipe ends the program quietly instead of panicking, and
//! so that no control character the CLI did not produce reaches the terminal.
//!
//! Much of what the CLI prints came from outside: file names, server and tool names, error
//! texts, an MCP server's stderr, a model's text, sentences read back from a ledger a forger may
//! have written. A terminal obeys escape sequences in any of them (retitle the window, rewrite
//! the screen, hide a line). So [`line`] and [`error_line`] write every control character but
//! newline and tab as visible text ([`shown`]); only [`styled`] writes a line as it is, for the
//! few the CLI colours itself, whose values are passed through [`shown`] first.

use std::borrow::Cow;
use std::io::Write;

use crate::error::CliError;

/// A turn's number as people read it, from 1; the wire, the ledger and `--json` count from 0.
/// Every line for people shows this, and a turn number a person types (`--turn N`) is this
/// one (see [`turn_from_people`]).
pub fn turn_for_people(turn: u32) -> u32 {
    turn.saturating_add(1)
}

/// The turn a person named (from 1) as the JSON and the daemon count it (from 0); `None` for
/// 0, which names no turn.
pub fn turn_from_people(turn: u32) -> Option<u32> {
    turn.checked_sub(1)
}

/// Writes `text` and a newline to stdout, its control characters shown as text ([`shown`]).
pub fn line(text: &str) -> Result<(), CliError> {
    styled(&shown(text))
}

/// Where a line for people goes: `codaris run` keeps standard output for the model's answer
/// (`codaris run "…" > answer.md`) and writes everything else to standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    /// Whether the stream is a terminal (colours, the status line).
    pub fn is_terminal(self) -> bool {
        use std::io::IsTerminal;
        match self {
            Self::Stdout => std::io::stdout().is_terminal(),
            Self::Stderr => std::io::stderr().is_terminal(),
        }
    }
}

/// [`line`] to `stream`.
pub fn line_to(stream: Stream, text: &str) -> Result<(), CliError> {
    styled_to(stream, &shown(text))
}

/// [`styled`] to `stream`. A closed standard error is not worth stopping for (as
/// [`error_line`]); a closed standard output is [`CliError::BrokenPipe`].
pub fn styled_to(stream: Stream, text: &str) -> Result<(), CliError> {
    match stream {
        Stream::Stdout => styled(text),
        Stream::Stderr => {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{text}").and_then(|()| err.flush());
            Ok(())
        }
    }
}

/// Writes `text` and a newline to stdout as it is: for lines whose escape sequences (colours)
/// the CLI produced itself; every value inside must already be [`shown`].
pub fn styled(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()?;
    Ok(())
}

/// Writes `text` and a newline to stderr, its control characters shown as text; a closed
/// stderr is not worth an error of its own.
pub fn error_line(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{}", shown(text));
}

/// `text` with every control character a terminal could obey written out as text in Rust's
/// `\u{1b}` form: the C0 controls but newline and tab, DEL, and the C1 controls (U+0080 to
/// U+009F, which some terminals obey like `ESC`). The daemon's log file does the same
/// (docs/operations.md). Borrowed when there is nothing to show.
pub fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| obeyed(c) && c != '\n' && c != '\t') {
        return Cow::Borrowed(text);
    }
    Cow::Owned(escape(text, |c| c == '\n' || c == '\t'))
}

/// [`shown`], with newline and tab shown as text too: a value that must stay on one line (a
/// finding a script counts line by line).
pub fn one_line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(obeyed) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(escape(text, |_| false))
}

/// A character a terminal may act on rather than print.
fn obeyed(c: char) -> bool {
    c.is_control()
}

fn escape(text: &str, kept: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if obeyed(c) && !kept(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// Writes one JSON value as a line. serde_json escapes the C0 controls but writes DEL and the
/// C1 controls as they are; outside strings JSON has none, so each is written as a `\u00XX`
/// escape, which reads back as the same character.
pub fn json(value: &serde_json::Value) -> Result<(), CliError> {
    let text = value.to_string();
    if !text.chars().any(obeyed) {
        return styled(&text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if obeyed(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    styled(&out)
}

/// `3h 02m`, `4m 05s`, `12s`: uptime for people.
pub fn duration(ms: u64) -> String {
    let secs = ms / 1000;
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    if h > 0 {
        format!("{h}h {m:02}m")
    } else if m > 0 {
        format!("{m}m {s:02}s")
    } else {
        format!("{s}s")
    }
}

/// `812 B`, `1.2 KiB`, `3.4 MiB`: a file's size for people.
pub fn size(bytes: u64) -> String {
    #[expect(
        clippy::cast_precision_loss,
        reason = "a size shown to one decimal place"
    )]
    let value = bytes as f64;
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KiB", value / 1024.0)
    } else {
        format!("{:.1} MiB", value / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_as_text_but_newline_and_tab() {
        assert_eq!(
            shown("a\u{1b}]0;owned\u{7}b\u{9b}2J\u{7f}\n\tc"),
            "a\\u{1b}]0;owned\\u{7}b\\u{9b}2J\\u{7f}\n\tc"
        );
        assert!(matches!(shown("plain `text` é"), Cow::Borrowed(_)));
        assert_eq!(one_line("g\u{1b}[31m\nx"), "g\\u{1b}[31m\\u{a}x");
    }

    #[test]
    fn turns_are_counted_from_one_for_people() {
        assert_eq!(turn_for_people(0), 1);
        assert_eq!(turn_for_people(u32::MAX), u32::MAX);
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(size(812), "812 B");
        assert_eq!(size(1229), "1.2 KiB");
        assert_eq!(size(3 * 1024 * 1024 + 400 * 1024), "3.4 MiB");
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(999), "0s");
        assert_eq!(duration(12_000), "12s");
        assert_eq!(duration(245_000), "4m 05s");
        assert_eq!(duration(3 * 3600 * 1000 + 120_000), "3h 02m");
    }
}
