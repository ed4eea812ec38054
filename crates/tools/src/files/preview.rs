//! What `edit`, `write` and `apply_patch` would change, as a unified diff a person reads on a
//! permission card. Each is worked out by the tool's own planning code (the same replacement,
//! the same hunks, the same fence), reading only: nothing is created or written.

use codaris_catalogue::BuiltinTool;
use serde_json::Value;
use similar::{DiffTag, TextDiff};

use super::edit::{plan_edit, plan_write};
use super::patch::{current, plan_patch};
use crate::context::ToolContext;
use crate::tool::ToolError;

/// Lines of context around each change.
const CONTEXT_LINES: usize = 3;
/// The most diff lines a card carries; a longer diff is cut with a note.
pub const MAX_DIFF_LINES: usize = 400;
/// The most diff bytes a card carries.
pub const MAX_DIFF_BYTES: usize = 48 * 1024;
/// The longest a diff may take to compute.
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_millis(500);
/// A file larger than this is not diffed: the diff would be too slow to compute and too long
/// to read.
const MAX_DIFFED_FILE: usize = 4 * 1024 * 1024;

/// A change to files, as a card shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// The unified diff, cut to [`MAX_DIFF_LINES`] / [`MAX_DIFF_BYTES`] with a note.
    pub diff: String,
    /// The file, as the tool would name it, when the change touches one file.
    pub path: Option<String>,
    /// The files touched.
    pub files: usize,
    /// Lines changed: a line replaced counts once, one added or removed once.
    pub changed_lines: usize,
    /// What the call does, as a verb phrase: "edit `src/main.rs`", "create `notes.md`".
    pub action: String,
}

/// The diff of `tool`'s call, for the three tools that change file contents; `None` for any
/// other tool. An `Err` says why the call would fail (it is the tool's own error).
pub fn diff_of(
    ctx: &ToolContext,
    tool: BuiltinTool,
    args: &Value,
) -> Option<Result<FileDiff, ToolError>> {
    Some(match tool {
        BuiltinTool::Edit => plan_edit(ctx, args).map(|planned| {
            let shown = planned.at.shown(ctx);
            let mut diff = Diffed::default();
            diff.file(&shown, Some(&planned.before), Some(&planned.after));
            diff.finish(Some(shown.clone()), format!("edit `{shown}`"))
        }),
        BuiltinTool::Write => plan_write(ctx, args).map(|(at, before, content)| {
            let shown = at.shown(ctx);
            let mut diff = Diffed::default();
            let verb = match &before {
                None => "create",
                Some(_) => "overwrite",
            };
            diff.bytes(&shown, before.as_deref(), Some(content.as_bytes()));
            diff.finish(Some(shown.clone()), format!("{verb} `{shown}`"))
        }),
        BuiltinTool::ApplyPatch => plan_patch(ctx, args).and_then(|(changes, _)| {
            let mut diff = Diffed::default();
            let mut shown_paths = Vec::new();
            for change in &changes {
                let shown = change.at.shown(ctx);
                let before = current(ctx, &std::collections::HashMap::new(), &change.at)?;
                diff.bytes(&shown, before.as_deref(), change.content.as_deref());
                shown_paths.push(shown);
            }
            Ok(match shown_paths.as_slice() {
                [one] => {
                    let action = format!("patch `{one}`");
                    diff.finish(Some(one.clone()), action)
                }
                many => {
                    let action = format!("patch {} files", many.len());
                    diff.finish(None, action)
                }
            })
        }),
        _ => return None,
    })
}

/// The unified diff of one file from `before` to `after` (`None`: it does not exist), cut
/// as a card's is: what `codaris undo --dry-run` shows.
pub(crate) fn unified(shown: &str, before: Option<&[u8]>, after: Option<&[u8]>) -> String {
    let mut diff = Diffed::default();
    diff.bytes(shown, before, after);
    cut(&diff.text)
}

/// A diff being put together, file by file.
#[derive(Debug, Default)]
struct Diffed {
    text: String,
    files: usize,
    changed: usize,
}

impl Diffed {
    /// One file's change from bytes: text is diffed, anything else is described.
    fn bytes(&mut self, shown: &str, before: Option<&[u8]>, after: Option<&[u8]>) {
        match (as_text(before), as_text(after)) {
            (Ok(before), Ok(after)) => self.file(shown, before, after),
            _ => {
                self.files += 1;
                self.changed += 1;
                let size = |b: Option<&[u8]>| b.map_or("nothing".to_owned(), |b| bytes_of(b.len()));
                self.text.push_str(&format!(
                    "{shown}: not text; {} become {}\n",
                    size(before),
                    size(after)
                ));
            }
        }
    }

    /// One file's change: `None` is a file that does not exist (before) or is removed (after).
    fn file(&mut self, shown: &str, before: Option<&str>, after: Option<&str>) {
        self.files += 1;
        let (old, new) = (before.unwrap_or(""), after.unwrap_or(""));
        if old.len().max(new.len()) > MAX_DIFFED_FILE {
            self.changed += 1;
            self.text.push_str(&format!(
                "{shown}: too large to show ({} become {})\n",
                bytes_of(old.len()),
                bytes_of(new.len())
            ));
            return;
        }
        // A deadline keeps a pathological pair of files from holding the card back; past it
        // the diff is coarser, never wrong.
        let diff = TextDiff::configure()
            .timeout(DIFF_DEADLINE)
            .diff_lines(old, new);
        self.changed += changed_lines(&diff);
        let from = if before.is_some() {
            format!("a/{shown}")
        } else {
            "/dev/null".to_owned()
        };
        let to = if after.is_some() {
            format!("b/{shown}")
        } else {
            "/dev/null".to_owned()
        };
        let mut unified = diff.unified_diff();
        let body = unified
            .context_radius(CONTEXT_LINES)
            .missing_newline_hint(true)
            .header(&from, &to)
            .to_string();
        self.text.push_str(&body);
        if !body.is_empty() && !body.ends_with('\n') {
            self.text.push('\n');
        }
    }

    fn finish(self, path: Option<String>, action: String) -> FileDiff {
        let lines = self.changed;
        let action = match lines {
            0 => format!("{action} (no lines changed)"),
            1 => format!("{action} (1 line changed)"),
            n => format!("{action} ({n} lines changed)"),
        };
        FileDiff {
            diff: cut(&self.text),
            path,
            files: self.files,
            changed_lines: lines,
            action,
        }
    }
}

/// Lines changed in a diff: a replaced run counts its longer side, an insertion or a deletion
/// its length.
fn changed_lines(diff: &TextDiff<'_, '_, '_, str>) -> usize {
    diff.ops()
        .iter()
        .map(|op| {
            let (tag, old, new) = op.as_tag_tuple();
            match tag {
                DiffTag::Equal => 0,
                DiffTag::Delete => old.len(),
                DiffTag::Insert => new.len(),
                DiffTag::Replace => old.len().max(new.len()),
            }
        })
        .sum()
}

/// The diff cut to [`MAX_DIFF_LINES`] lines and [`MAX_DIFF_BYTES`] bytes, with a note of what
/// was left out.
fn cut(diff: &str) -> String {
    let total = diff.lines().count();
    let mut kept = String::new();
    let mut shown = 0;
    for line in diff.lines() {
        if shown == MAX_DIFF_LINES || kept.len() + line.len() + 1 > MAX_DIFF_BYTES {
            break;
        }
        kept.push_str(line);
        kept.push('\n');
        shown += 1;
    }
    if shown < total {
        kept.push_str(&format!(
            "[diff cut: {} more lines not shown]\n",
            total - shown
        ));
    }
    kept
}

fn as_text(bytes: Option<&[u8]>) -> Result<Option<&str>, std::str::Utf8Error> {
    bytes.map(std::str::from_utf8).transpose()
}

fn bytes_of(n: usize) -> String {
    if n == 1 {
        "1 byte".to_owned()
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_diff_is_cut_with_a_note_and_a_short_one_is_whole() {
        let long: String = (0..1000).map(|n| format!("+line {n}\n")).collect();
        let kept = cut(&long);
        assert_eq!(kept.lines().count(), MAX_DIFF_LINES + 1);
        assert!(
            kept.ends_with(&format!(
                "[diff cut: {} more lines not shown]\n",
                1000 - MAX_DIFF_LINES
            )),
            "{kept}"
        );
        assert_eq!(cut("-a\n+b\n"), "-a\n+b\n");
        let wide: String = (0..100)
            .map(|_| format!("+{}\n", "x".repeat(2000)))
            .collect();
        assert!(cut(&wide).len() <= MAX_DIFF_BYTES + 64);
    }

    #[test]
    fn changed_lines_count_a_replacement_once() {
        let diff = TextDiff::from_lines("a\nb\nc\n", "a\nB\nc\nd\n");
        assert_eq!(changed_lines(&diff), 2);
        let mut diffed = Diffed::default();
        diffed.file("x.txt", None, Some("one\ntwo\n"));
        let done = diffed.finish(Some("x.txt".to_owned()), "create `x.txt`".to_owned());
        assert_eq!(done.action, "create `x.txt` (2 lines changed)");
        assert!(
            done.diff.starts_with("--- /dev/null\n+++ b/x.txt\n"),
            "{}",
            done.diff
        );
    }
}
