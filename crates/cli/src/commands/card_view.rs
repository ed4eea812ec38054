//! A permission card as `codaris run` and `codaris chat` show it: what the call would do (a
//! diff in green and red on a terminal, a command line and its directory, an HTTP request)
//! above the question, and the question's choices.

use codaris_proto::v1;

use crate::output::Stream;

const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// Whether standard output takes colours: a terminal, and `NO_COLOR` unset.
pub fn colour_wanted() -> bool {
    colour_wanted_on(Stream::Stdout)
}

/// Whether `stream` takes colours: a terminal, and `NO_COLOR` unset.
pub fn colour_wanted_on(stream: Stream) -> bool {
    stream.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The card's preview as lines to print above its question, indented; empty when it has none.
pub fn preview_lines(card: &v1::Card, colour: bool) -> String {
    let Some(preview) = &card.preview else {
        return String::new();
    };
    if preview.text.trim().is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for line in preview.text.lines() {
        // The preview quotes what the model wrote: its escapes are shown, only ours act.
        let line = crate::output::shown(line);
        let painted = match preview.kind.as_str() {
            "diff" | "config" if colour => paint_diff_line(&line),
            _ => line.into_owned(),
        };
        out.push_str("    ");
        out.push_str(&painted);
        out.push('\n');
    }
    out
}

/// One line of a unified diff in colour: additions green, removals red, hunk headers cyan,
/// file headers bold.
pub(crate) fn paint_diff_line(line: &str) -> String {
    let colour = if line.starts_with("+++") || line.starts_with("---") {
        BOLD
    } else if line.starts_with('+') {
        GREEN
    } else if line.starts_with('-') {
        RED
    } else if line.starts_with("@@") {
        CYAN
    } else {
        return line.to_owned();
    };
    format!("{colour}{line}{RESET}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(kind: &str, text: &str) -> v1::Card {
        v1::Card {
            preview: Some(v1::CardPreview {
                kind: kind.to_owned(),
                text: text.to_owned(),
                path: String::new(),
            }),
            ..v1::Card::default()
        }
    }

    #[test]
    fn a_diff_is_green_and_red_on_a_terminal_and_plain_elsewhere() {
        let diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n same\n";
        let coloured = preview_lines(&card("diff", diff), true);
        assert!(
            coloured.contains("    \x1b[31m-old\x1b[0m\n"),
            "{coloured:?}"
        );
        assert!(
            coloured.contains("    \x1b[32m+new\x1b[0m\n"),
            "{coloured:?}"
        );
        assert!(coloured.contains("     same\n"));
        let plain = preview_lines(&card("diff", diff), false);
        assert!(!plain.contains('\x1b'), "{plain:?}");
        assert!(plain.contains("    -old\n    +new\n"));
        let command = preview_lines(&card("command", "$ rm -rf x\nin /w"), true);
        assert_eq!(
            command, "    $ rm -rf x\n    in /w\n",
            "only diffs are coloured"
        );
        assert_eq!(preview_lines(&v1::Card::default(), true), "");
    }
}
