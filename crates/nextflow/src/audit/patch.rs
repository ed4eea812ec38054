//! Reading and applying the unified diffs of a remediation plan.
//!
//! A plan may be edited by hand (or by a model) before it comes back, so its patches are
//! untrusted input: a path must stay inside the pipeline, and a hunk applies only where its
//! removed lines and context match the file. Like `patch`, a hunk may have moved (the nearest
//! match wins) and may lose up to two lines of context at either end (so two items inserting
//! next to each other both apply); it never applies over lines it does not expect.

/// Why a patch does not apply.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    #[error("line {line} of the patch: {problem}")]
    Malformed { line: usize, problem: String },
    #[error("`{path}` is not a path inside the pipeline")]
    BadPath { path: String },
    #[error("`{path}` does not exist")]
    Missing { path: String },
    #[error("`{path}` already exists")]
    Exists { path: String },
    #[error("hunk {hunk} of `{path}` does not match the file; it changed since the plan was made")]
    Conflict { path: String, hunk: usize },
}

/// The changes to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FilePatch {
    pub(crate) path: String,
    /// `--- /dev/null`: the file must not exist yet.
    creates: bool,
    hunks: Vec<Hunk>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Hunk {
    old_start: usize,
    old_len: usize,
    /// (`' '`, `'-'` or `'+'`, the line with its newline, if it has one).
    lines: Vec<(u8, String)>,
}

const MAX_FUZZ: usize = 2;

pub(crate) fn parse_patch(text: &str) -> Result<Vec<FilePatch>, PatchError> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let malformed = |line: usize, problem: &str| PatchError::Malformed {
        line: line + 1,
        problem: problem.to_string(),
    };
    let mut out: Vec<FilePatch> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(from) = line.strip_prefix("--- ") {
            let to = lines
                .get(i + 1)
                .and_then(|l| l.strip_prefix("+++ "))
                .ok_or_else(|| malformed(i + 1, "`---` is not followed by `+++`"))?;
            let from = header_path(from);
            let to = header_path(to);
            let path = to.strip_prefix("b/").unwrap_or(&to).to_string();
            let creates = from == "/dev/null";
            if !creates && from.strip_prefix("a/").unwrap_or(&from) != path {
                return Err(malformed(i, "`---` and `+++` name different files"));
            }
            check_path(&path)?;
            out.push(FilePatch {
                path,
                creates,
                hunks: Vec::new(),
            });
            i += 2;
        } else if line.starts_with("@@") {
            let file = out
                .last_mut()
                .ok_or_else(|| malformed(i, "a hunk before any `---`/`+++` header"))?;
            let (old_start, old_len, new_len) = hunk_header(line)
                .ok_or_else(|| malformed(i, "not a hunk header `@@ -a,b +c,d @@`"))?;
            let mut hunk = Hunk {
                old_start,
                old_len,
                lines: Vec::new(),
            };
            let (mut old_seen, mut new_seen) = (0, 0);
            i += 1;
            while (old_seen < old_len || new_seen < new_len) && i < lines.len() {
                let l = lines[i];
                let (tag, body) = match l.as_bytes().first() {
                    Some(b' ') | Some(b'-') | Some(b'+') => (l.as_bytes()[0], &l[1..]),
                    // Some tools strip the space of an empty context line.
                    Some(b'\n') => (b' ', "\n"),
                    _ => return Err(malformed(i, "hunk ends before its line counts")),
                };
                if tag != b'+' {
                    old_seen += 1;
                }
                if tag != b'-' {
                    new_seen += 1;
                }
                hunk.lines.push((tag, body.to_string()));
                i += 1;
                if lines.get(i).is_some_and(|l| l.starts_with('\\')) {
                    // "\ No newline at end of file": the line before has no newline.
                    if let Some((_, last)) = hunk.lines.last_mut()
                        && last.ends_with('\n')
                    {
                        last.pop();
                    }
                    i += 1;
                }
            }
            if old_seen != old_len || new_seen != new_len {
                return Err(malformed(
                    i.saturating_sub(1),
                    "hunk is shorter than its header says",
                ));
            }
            file.hunks.push(hunk);
        } else if let Some(file) = out.last()
            && file.hunks.is_empty()
            && !line.trim().is_empty()
        {
            return Err(malformed(i, "expected a hunk `@@ … @@`"));
        } else {
            // Text between file patches (a `diff --git` line, a comment) is not part of them.
            i += 1;
        }
    }
    if out.is_empty() {
        return Err(malformed(0, "no `---`/`+++` file header"));
    }
    Ok(out)
}

fn header_path(rest: &str) -> String {
    // `+++ b/path\t2026-…` — a timestamp after a tab is not part of the path.
    rest.trim_end_matches(['\n', '\r'])
        .split('\t')
        .next()
        .unwrap_or("")
        .to_string()
}

fn check_path(path: &str) -> Result<(), PatchError> {
    let bad = path.is_empty()
        || path.starts_with('/')
        || path.contains(['\\', '\0'])
        || path
            .split('/')
            .any(|part| part.is_empty() || part == ".." || part == "." || part == ".git");
    if bad {
        return Err(PatchError::BadPath {
            path: path.to_string(),
        });
    }
    Ok(())
}

fn hunk_header(line: &str) -> Option<(usize, usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(usize, usize)> {
        match r.split_once(',') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (old_start, old_len) = range(old)?;
    let (_, new_len) = range(new)?;
    Some((old_start, old_len, new_len))
}

/// The file's new text, or why the patch does not apply to `current` (`None`: no such file).
pub(crate) fn apply_file_patch(
    fp: &FilePatch,
    current: Option<&str>,
) -> Result<String, PatchError> {
    let text = match (current, fp.creates) {
        (Some(_), true) => {
            return Err(PatchError::Exists {
                path: fp.path.clone(),
            });
        }
        (None, false) => {
            return Err(PatchError::Missing {
                path: fp.path.clone(),
            });
        }
        (Some(t), false) => t,
        (None, true) => "",
    };
    let file: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::with_capacity(text.len());
    let mut cursor = 0usize;
    let mut offset: isize = 0;
    for (n, hunk) in fp.hunks.iter().enumerate() {
        let conflict = || PatchError::Conflict {
            path: fp.path.clone(),
            hunk: n + 1,
        };
        let (at, old, new) = place(hunk, &file, cursor, offset).ok_or_else(conflict)?;
        for l in &file[cursor..at] {
            out.push_str(l);
        }
        for l in &new {
            out.push_str(l);
        }
        cursor = at + old;
        offset += new.len() as isize - old as isize;
    }
    for l in &file[cursor..] {
        out.push_str(l);
    }
    Ok(out)
}

/// Where the hunk applies: (first line, lines replaced, lines written). Tries the full
/// context first, then with up to `MAX_FUZZ` context lines dropped at each end; at each fuzz,
/// the match nearest the hunk's own position wins.
fn place<'h>(
    hunk: &'h Hunk,
    file: &[&str],
    cursor: usize,
    offset: isize,
) -> Option<(usize, usize, Vec<&'h str>)> {
    let lead = hunk.lines.iter().take_while(|(t, _)| *t == b' ').count();
    let trail = hunk
        .lines
        .iter()
        .rev()
        .take_while(|(t, _)| *t == b' ')
        .count();
    // A pure insertion without context: the position is all there is to go by.
    let base = if hunk.old_len == 0 {
        hunk.old_start
    } else {
        hunk.old_start.saturating_sub(1)
    };
    let expected = (base as isize + offset).max(0) as usize;
    for fuzz in 0..=MAX_FUZZ {
        let (drop_lead, drop_trail) = (fuzz.min(lead), fuzz.min(trail));
        if fuzz > 0 && drop_lead == 0 && drop_trail == 0 {
            break;
        }
        let end = hunk.lines.len().saturating_sub(drop_trail);
        let body = hunk.lines.get(drop_lead..end.max(drop_lead))?;
        let old: Vec<&str> = body
            .iter()
            .filter(|(t, _)| *t != b'+')
            .map(|(_, l)| l.as_str())
            .collect();
        let new: Vec<&str> = body
            .iter()
            .filter(|(t, _)| *t != b'-')
            .map(|(_, l)| l.as_str())
            .collect();
        let want = expected + drop_lead;
        if old.is_empty() {
            if want >= cursor && want <= file.len() {
                return Some((want, 0, new));
            }
            continue;
        }
        let last_start = file.len().checked_sub(old.len())?;
        if cursor > last_start {
            continue;
        }
        let matches = |at: usize| file[at..at + old.len()] == old[..];
        let mut candidates: Vec<usize> = (cursor..=last_start).collect();
        candidates.sort_by_key(|&at| at.abs_diff(want));
        if let Some(at) = candidates.into_iter().find(|&at| matches(at)) {
            return Some((at, old.len(), new));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(path: &str, old: &str, new: &str) -> String {
        crate::audit::file_diff(path, true, old, new)
    }

    #[test]
    fn a_patch_applies_to_its_own_base_and_to_a_shifted_file() -> Result<(), PatchError> {
        let old = "a\nb\nc\nd\ne\nf\ng\n";
        let new = "a\nb\nc\nD\ne\nf\ng\n";
        let patches = parse_patch(&diff("x.nf", old, new))?;
        assert_eq!(apply_file_patch(&patches[0], Some(old))?, new);
        let shifted = format!("0\n1\n{old}");
        assert_eq!(
            apply_file_patch(&patches[0], Some(&shifted))?,
            format!("0\n1\n{new}")
        );
        Ok(())
    }

    #[test]
    fn a_patch_over_changed_lines_is_a_conflict() -> Result<(), PatchError> {
        let patches = parse_patch(&diff("x.nf", "a\nb\nc\n", "a\nB\nc\n"))?;
        let err = apply_file_patch(&patches[0], Some("a\nX\nc\n"));
        assert!(
            matches!(err, Err(PatchError::Conflict { hunk: 1, .. })),
            "{err:?}"
        );
        Ok(())
    }

    #[test]
    fn two_insertions_at_one_place_both_apply() -> Result<(), PatchError> {
        let old = "x\nparams {\n    a = 1\n    b = 2\n}\n";
        let first = parse_patch(&diff(
            "n.config",
            old,
            "x\nparams {\n    p = null\n    a = 1\n    b = 2\n}\n",
        ))?;
        let second = parse_patch(&diff(
            "n.config",
            old,
            "x\nparams {\n    q = null\n    a = 1\n    b = 2\n}\n",
        ))?;
        let once = apply_file_patch(&first[0], Some(old))?;
        let twice = apply_file_patch(&second[0], Some(&once))?;
        assert_eq!(
            twice,
            "x\nparams {\n    p = null\n    q = null\n    a = 1\n    b = 2\n}\n"
        );
        Ok(())
    }

    #[test]
    fn paths_outside_the_pipeline_are_refused() {
        for path in [
            "../etc/passwd",
            "/etc/passwd",
            "a/../../b",
            ".git/hooks/pre-commit",
            "a//b",
        ] {
            let text = format!("--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-x\n+y\n");
            assert!(
                matches!(
                    parse_patch(&text),
                    Err(PatchError::BadPath { .. } | PatchError::Malformed { .. })
                ),
                "{path}"
            );
        }
    }

    #[test]
    fn missing_newline_markers_are_honoured() -> Result<(), PatchError> {
        let patches = parse_patch(&diff("x", "a\nb", "a\nc"))?;
        assert_eq!(apply_file_patch(&patches[0], Some("a\nb"))?, "a\nc");
        Ok(())
    }

    #[test]
    fn creating_a_file_needs_it_absent() -> Result<(), PatchError> {
        let text = crate::audit::file_diff("NEW.md", false, "", "hello\n");
        let patches = parse_patch(&text)?;
        assert_eq!(apply_file_patch(&patches[0], None)?, "hello\n");
        assert!(matches!(
            apply_file_patch(&patches[0], Some("x")),
            Err(PatchError::Exists { .. })
        ));
        Ok(())
    }
}
