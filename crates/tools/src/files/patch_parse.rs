//! Parsing the two patch formats `apply_patch` takes into one list of file operations:
//! a unified diff (`---`/`+++`/`@@ -a,b +c,d @@`) and the Codex V4A format
//! (`*** Begin Patch`, `*** Add/Update/Delete File:`, `*** Move to:`, `@@ anchor`).
//!
//! A call's patch is read once, into a [`ReadPatch`], when the daemon prepares the call: its
//! targets are judged by the policy, and the same operations are applied by the run and shown
//! by the card's preview.

use std::sync::Arc;

/// One change to one block of lines.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Hunk {
    /// V4A `@@ anchor` lines: each must be found, in order, before the block.
    pub anchors: Vec<String>,
    /// Unified diff: the 1-based line the old block starts at, a hint where to look first.
    pub hint: Option<usize>,
    pub old: Vec<String>,
    pub new: Vec<String>,
    /// The block must end the file (V4A `*** End of File`).
    pub at_eof: bool,
    /// `\ No newline at end of file` after the new side: the result has no final newline.
    pub new_no_eol: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    Add {
        path: String,
        content: String,
    },
    Delete {
        path: String,
    },
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
    },
}

/// What is wrong with a patch, for the model.
pub type ParseError = String;

pub(crate) fn parse(patch: &str) -> Result<Vec<Op>, ParseError> {
    #[cfg(feature = "count-parses")]
    parse_count::record(patch);
    let patch = patch.replace("\r\n", "\n");
    let ops = if patch.lines().any(|l| l.trim() == "*** Begin Patch") {
        parse_v4a(&patch)?
    } else {
        parse_unified(&patch)?
    };
    if ops.is_empty() {
        return Err(
            "the patch changes no file (expected a unified diff or `*** Begin Patch`)".into(),
        );
    }
    Ok(ops)
}

/// How many times each patch text was parsed, for the test that a call's patch is read once.
#[cfg(feature = "count-parses")]
pub mod parse_count {
    use std::collections::HashMap;
    use std::sync::{Mutex, PoisonError};

    static COUNTS: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);

    pub(crate) fn record(patch: &str) {
        let mut counts = COUNTS.lock().unwrap_or_else(PoisonError::into_inner);
        *counts
            .get_or_insert_with(HashMap::new)
            .entry(patch.to_owned())
            .or_default() += 1;
    }

    /// How many times `patch` was parsed in this process so far.
    pub fn of(patch: &str) -> usize {
        COUNTS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(|counts| counts.get(patch).copied())
            .unwrap_or(0)
    }
}

/// A patch as read: its operations, or what is wrong with it. Cheap to clone (shared).
#[derive(Debug, Clone)]
pub struct ReadPatch(Arc<Result<Vec<Op>, ParseError>>);

impl ReadPatch {
    pub fn read(patch: &str) -> Self {
        Self(Arc::new(parse(patch)))
    }

    pub(crate) fn ops(&self) -> Result<&[Op], &ParseError> {
        self.0.as_ref().as_ref().map(Vec::as_slice)
    }

    /// Every file name the patch adds, updates, deletes, or moves from or to, in the order the
    /// patch names them, as written (relative to the directory the patch applies in). The
    /// daemon resolves these before the policy decides, and `apply_patch` applies the same
    /// operations, so what was judged is what runs.
    pub fn targets(&self) -> Result<Vec<String>, ParseError> {
        let mut names = Vec::new();
        for op in self.ops().map_err(Clone::clone)? {
            match op {
                Op::Add { path, .. } | Op::Delete { path } => names.push(path.clone()),
                Op::Update { path, move_to, .. } => {
                    names.push(path.clone());
                    names.extend(move_to.iter().cloned());
                }
            }
        }
        Ok(names)
    }
}

/// [`ReadPatch::targets`] of a patch given as text.
pub fn patch_targets(patch: &str) -> Result<Vec<String>, ParseError> {
    ReadPatch::read(patch).targets()
}

fn parse_v4a(patch: &str) -> Result<Vec<Op>, ParseError> {
    let mut lines = patch
        .lines()
        .skip_while(|l| l.trim() != "*** Begin Patch")
        .skip(1)
        .peekable();
    let mut ops = Vec::new();
    while let Some(line) = lines.next() {
        if line.trim() == "*** End Patch" {
            return Ok(ops);
        }
        if let Some(path) = line.strip_prefix("*** Add File: ") {
            let mut content = String::new();
            while let Some(next) = lines.peek().filter(|l| !l.starts_with("*** ")) {
                let Some(text) = next.strip_prefix('+') else {
                    return Err(format!(
                        "in `*** Add File: {path}` every line must start with `+`: `{next}`"
                    ));
                };
                content.push_str(text);
                content.push('\n');
                lines.next();
            }
            ops.push(Op::Add {
                path: path.trim().to_owned(),
                content,
            });
        } else if let Some(path) = line.strip_prefix("*** Delete File: ") {
            ops.push(Op::Delete {
                path: path.trim().to_owned(),
            });
        } else if let Some(path) = line.strip_prefix("*** Update File: ") {
            let mut move_to = None;
            if let Some(to) = lines.peek().and_then(|l| l.strip_prefix("*** Move to: ")) {
                move_to = Some(to.trim().to_owned());
                lines.next();
            }
            let mut hunks = Vec::new();
            let mut hunk = Hunk::default();
            while let Some(next) = lines.peek().copied() {
                if next.starts_with("*** ") && next.trim() != "*** End of File" {
                    break;
                }
                lines.next();
                if next.trim() == "*** End of File" {
                    hunk.at_eof = true;
                } else if let Some(anchor) = next.strip_prefix("@@") {
                    if !hunk.old.is_empty() || !hunk.new.is_empty() {
                        hunks.push(std::mem::take(&mut hunk));
                    }
                    let anchor = anchor.trim();
                    if !anchor.is_empty() {
                        hunk.anchors.push(anchor.to_owned());
                    }
                } else {
                    push_line(&mut hunk, next)
                        .map_err(|()| format!("in `*** Update File: {path}` a line must start with ` `, `-`, `+` or `@@`: `{next}`"))?;
                }
            }
            if !hunk.old.is_empty() || !hunk.new.is_empty() {
                hunks.push(hunk);
            }
            if hunks.is_empty() && move_to.is_none() {
                return Err(format!("`*** Update File: {path}` has no changes"));
            }
            ops.push(Op::Update {
                path: path.trim().to_owned(),
                move_to,
                hunks,
            });
        } else if !line.trim().is_empty() {
            return Err(format!("unexpected line in the patch: `{line}`"));
        }
    }
    Err("the patch has no `*** End Patch` line".into())
}

/// A context, removed or added line into a hunk. An empty line is context (editors strip the
/// space of an empty context line).
fn push_line(hunk: &mut Hunk, line: &str) -> Result<(), ()> {
    match line.chars().next() {
        None => {
            hunk.old.push(String::new());
            hunk.new.push(String::new());
        }
        Some(' ') => {
            hunk.old.push(line[1..].to_owned());
            hunk.new.push(line[1..].to_owned());
        }
        Some('-') => hunk.old.push(line[1..].to_owned()),
        Some('+') => hunk.new.push(line[1..].to_owned()),
        _ => return Err(()),
    }
    Ok(())
}

fn parse_unified(patch: &str) -> Result<Vec<Op>, ParseError> {
    let lines: Vec<&str> = patch.lines().collect();
    let mut ops = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(old_name) = lines[i].strip_prefix("--- ") else {
            i += 1;
            continue;
        };
        let Some(new_name) = lines.get(i + 1).and_then(|l| l.strip_prefix("+++ ")) else {
            i += 1;
            continue;
        };
        let (old_name, new_name) = (file_name(old_name), file_name(new_name));
        // git's `a/` and `b/` prefixes, stripped only when both sides carry them (or the
        // other side is /dev/null), so a real directory named `a` survives.
        let prefixed = (old_name.starts_with("a/") || old_name == "/dev/null")
            && (new_name.starts_with("b/") || new_name == "/dev/null");
        let strip = |name: &str| -> String {
            if prefixed {
                name[2..].to_owned()
            } else {
                name.to_owned()
            }
        };
        i += 2;
        let mut hunks = Vec::new();
        while let Some(header) = lines.get(i).filter(|l| l.starts_with("@@")) {
            let (hint, old_len, new_len) =
                hunk_header(header).ok_or_else(|| format!("bad hunk header `{header}`"))?;
            i += 1;
            let mut hunk = Hunk {
                hint: Some(hint),
                ..Hunk::default()
            };
            // The counts in the header are a guide, not a contract: models miscount them, and
            // the hunk simply runs until a line that cannot belong to it.
            let mut last = ' ';
            while let Some(line) = lines.get(i) {
                let next_is_header = line.starts_with("--- ")
                    && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "));
                if line.starts_with("@@") || line.starts_with("diff ") || next_is_header {
                    break;
                }
                if let Some(rest) = line.strip_prefix('\\') {
                    if rest.contains("No newline") && last != '-' {
                        hunk.new_no_eol = true;
                    }
                    i += 1;
                    continue;
                }
                if push_line(&mut hunk, line).is_err() {
                    break;
                }
                last = line.chars().next().unwrap_or(' ');
                i += 1;
            }
            // Blank lines after the hunk (between files, at the end) are not context of it.
            while (hunk.old.len() > old_len || hunk.new.len() > new_len)
                && hunk.old.last().is_some_and(String::is_empty)
                && hunk.new.last().is_some_and(String::is_empty)
                && last == ' '
            {
                hunk.old.pop();
                hunk.new.pop();
            }
            if hunk.old.is_empty() && hunk.new.is_empty() {
                return Err(format!("the hunk `{header}` has no lines"));
            }
            hunks.push(hunk);
        }
        let op = if old_name == "/dev/null" {
            let content: String = hunks
                .iter()
                .flat_map(|h| h.new.iter())
                .map(|l| format!("{l}\n"))
                .collect();
            Op::Add {
                path: strip(new_name),
                content,
            }
        } else if new_name == "/dev/null" {
            Op::Delete {
                path: strip(old_name),
            }
        } else {
            let (from, to) = (strip(old_name), strip(new_name));
            let move_to = (from != to).then_some(to);
            Op::Update {
                path: from,
                move_to,
                hunks,
            }
        };
        ops.push(op);
    }
    Ok(ops)
}

/// The name on a `---`/`+++` line, without a trailing tab and timestamp.
fn file_name(line: &str) -> &str {
    line.split('\t').next().unwrap_or(line).trim()
}

/// `@@ -12,3 +12,4 @@ …` → (12, 3, 4); a missing count means 1.
fn hunk_header(header: &str) -> Option<(usize, usize, usize)> {
    let mut parts = header.trim_start_matches('@').split_whitespace();
    let range = |part: &str| -> Option<(usize, usize)> {
        let mut it = part.splitn(2, ',');
        let start = it.next()?.parse().ok()?;
        let len = it.next().map_or(Some(1), |n| n.parse().ok())?;
        Some((start, len))
    };
    let (old_start, old_len) = range(parts.next()?.strip_prefix('-')?)?;
    let (_, new_len) = range(parts.next()?.strip_prefix('+')?)?;
    Some((old_start, old_len, new_len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unified_and_v4a_parse_to_the_same_update() {
        let unified = "--- a/x.txt\n+++ b/x.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n";
        let v4a = "*** Begin Patch\n*** Update File: x.txt\n a\n-b\n+c\n*** End Patch\n";
        let (Ok(u), Ok(v)) = (parse(unified), parse(v4a)) else {
            unreachable!("both parse")
        };
        let old = vec!["a".to_owned(), "b".to_owned()];
        let new = vec!["a".to_owned(), "c".to_owned()];
        assert_eq!(
            u,
            vec![Op::Update {
                path: "x.txt".into(),
                move_to: None,
                hunks: vec![Hunk {
                    hint: Some(1),
                    old: old.clone(),
                    new: new.clone(),
                    ..Hunk::default()
                }]
            }]
        );
        assert_eq!(
            v,
            vec![Op::Update {
                path: "x.txt".into(),
                move_to: None,
                hunks: vec![Hunk {
                    old,
                    new,
                    ..Hunk::default()
                }]
            }]
        );
    }

    #[test]
    fn bad_patches_say_why() {
        assert!(parse("hello").is_err());
        assert!(parse("*** Begin Patch\n*** Update File: x\n?x\n*** End Patch").is_err());
        assert!(parse("--- a\n+++ b\n@@ -1,3 +1,1 @@\n").is_err());
    }
}
