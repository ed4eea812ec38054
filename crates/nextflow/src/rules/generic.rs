//! The data-only checks: what they find, how they fix, what they tell a person to do.

use super::checks::{Proposal, Report};
use super::config::is_empty_value;
use super::pipeline::{SourceTree, line_at};
use super::rule::GenericCheck;
use crate::parse::parse_config;

pub(crate) fn run_generic(check: &GenericCheck, p: &SourceTree, r: &mut Report<'_>) {
    match check {
        GenericCheck::ForbiddenPattern {
            files,
            pattern,
            message,
            ..
        } => {
            for (path, text) in p.files().filter(|(path, _)| files.matches(path)) {
                let mut last_line = 0;
                for m in pattern.find_iter(text) {
                    let line = line_at(text, m.start());
                    // One finding per line, however many matches it holds.
                    if line != last_line {
                        r.at(path, line, message.clone());
                        last_line = line;
                    }
                }
            }
        }
        GenericCheck::RequiredFile {
            any_of,
            matcher,
            message,
            when_any,
            ..
        } => {
            if applies(p, when_any.as_ref()) && !p.files().any(|(path, _)| matcher.is_match(path)) {
                let first = any_of.first().map_or("", String::as_str);
                r.at(&report_path(first), 0, message.clone());
            }
        }
        GenericCheck::RequiredConfigKey { file, keys } => {
            let Some(text) = p.file(file) else {
                r.at(
                    file,
                    0,
                    format!("file is missing, so {} cannot be set", quoted_list(keys)),
                );
                return;
            };
            let config = parse_config(file, text);
            for key in keys {
                match config.get(key) {
                    None => r.at(file, 0, format!("`{key}` is not set")),
                    Some(s) if is_empty_value(&s.value) => {
                        r.at(file, s.line as usize, format!("`{key}` is empty"));
                    }
                    Some(_) => {}
                }
            }
        }
        GenericCheck::RequiredLines { file, lines, when } => match p.file(file) {
            None => {
                let wanted = required_lines(p, lines, when);
                if !wanted.is_empty() {
                    r.at(
                        file,
                        0,
                        format!("file is missing; it should hold {}", quoted_list(&wanted)),
                    );
                }
            }
            Some(text) => {
                let wanted = required_lines(p, lines, when);
                for line in wanted.iter().filter(|l| !has_required_line(file, text, l)) {
                    r.at(file, 0, format!("no line `{line}`"));
                }
            }
        },
    }
}

/// The new text of each file the check would change, in path order.
pub(crate) fn fix_generic(check: &GenericCheck, p: &SourceTree) -> Vec<(String, String)> {
    match check {
        GenericCheck::ForbiddenPattern {
            files,
            pattern,
            replacement: Some(replacement),
            ..
        } => p
            .files()
            .filter(|(path, _)| files.matches(path))
            .filter_map(|(path, text)| {
                let new = pattern.replace_all(text, replacement.as_str());
                (new != text).then(|| (path.to_string(), new.into_owned()))
            })
            .collect(),
        GenericCheck::RequiredFile {
            any_of,
            matcher,
            create_with: Some(content),
            when_any,
            ..
        } => {
            let present =
                !applies(p, when_any.as_ref()) || p.files().any(|(path, _)| matcher.is_match(path));
            match any_of.first() {
                Some(first) if !present => vec![(first.clone(), content.clone())],
                _ => Vec::new(),
            }
        }
        GenericCheck::RequiredLines { file, lines, when } => {
            let old = p.file(file).unwrap_or("");
            let wanted = required_lines(p, lines, when);
            if wanted.is_empty() {
                return Vec::new();
            }
            let missing: Vec<&String> = wanted
                .iter()
                .filter(|l| !has_required_line(file, old, l))
                .collect();
            if missing.is_empty() && p.contains(file) {
                return Vec::new();
            }
            let mut new = old.to_string();
            if !new.is_empty() && !new.ends_with('\n') {
                new.push('\n');
            }
            for line in missing {
                new.push_str(line);
                new.push('\n');
            }
            vec![(file.clone(), new)]
        }
        _ => Vec::new(),
    }
}

/// What a person should do about a finding of a check that cannot fix it.
pub(crate) fn propose_generic(check: &GenericCheck, file: &str, line: usize) -> Proposal {
    let instruction = match check {
        GenericCheck::ForbiddenPattern { pattern, .. } => format!(
            "edit `{file}` line {line} so that it no longer matches `{}`",
            pattern.as_str().trim_start_matches("(?m)")
        ),
        GenericCheck::RequiredFile { any_of, .. } => {
            format!("add one of {} to the pipeline", quoted_list(any_of))
        }
        GenericCheck::RequiredConfigKey { file, keys } => {
            format!("set {} to a non-empty value in `{file}`", quoted_list(keys))
        }
        GenericCheck::RequiredLines { file, lines, .. } => {
            format!("add the lines {} to `{file}`", quoted_list(lines))
        }
    };
    Proposal::instruction(instruction)
}

/// Whether a check with this condition applies to the pipeline: always without one, else when
/// some file matches.
fn applies(p: &SourceTree, when_any: Option<&globset::GlobSet>) -> bool {
    when_any.is_none_or(|set| p.files().any(|(path, _)| set.is_match(path)))
}

/// The lines required of this pipeline: every line, but a conditional one only where its
/// condition holds.
fn required_lines(
    p: &SourceTree,
    lines: &[String],
    when: &[(String, globset::GlobSet)],
) -> Vec<String> {
    lines
        .iter()
        .filter(|l| {
            let condition = when.iter().find(|(line, _)| line == *l).map(|(_, set)| set);
            applies(p, condition)
        })
        .cloned()
        .collect()
}

/// The file a missing-file finding names: the path itself, or for a glob the directory it
/// searches (`tests/` for `tests/**/*.nf.test`), `.` for the root.
fn report_path(glob: &str) -> String {
    let parts: Vec<&str> = glob.split('/').collect();
    let literal: Vec<&str> = parts
        .iter()
        .take_while(|p| !p.contains(['*', '?', '[', '{']))
        .copied()
        .collect();
    if literal.len() == parts.len() {
        glob.to_string()
    } else if literal.is_empty() {
        ".".to_string()
    } else {
        format!("{}/", literal.join("/"))
    }
}

/// Whether `text` (the file `file`) already has `want`: the line itself, or, in a `.gitignore`,
/// any line that ignores what `want` ignores.
fn has_required_line(file: &str, text: &str, want: &str) -> bool {
    has_line(text, want) || (is_gitignore(file) && ignores_same(text, want))
}

fn has_line(text: &str, want: &str) -> bool {
    text.lines().any(|l| l.trim_end() == want)
}

fn is_gitignore(file: &str) -> bool {
    file == ".gitignore" || file.ends_with("/.gitignore")
}

/// The name a simple ignore pattern is about: `work/`, `/work`, `work/*`, `work/**` all ignore
/// the directory `work` (or everything in it, which for a run directory is the same).
fn ignored_name(pattern: &str) -> &str {
    let p = pattern.trim();
    let p = p.strip_prefix('/').unwrap_or(p);
    let p = p
        .strip_suffix("/**")
        .or_else(|| p.strip_suffix("/*"))
        .unwrap_or(p);
    p.strip_suffix('/').unwrap_or(p)
}

/// Whether some line of a `.gitignore` ignores the name `want` ignores (`.nf-test*` covers
/// `.nf-test/`; `work/*` covers `work/`). Only top-level names are compared, as the required
/// lines are; a negated line (`!work/`) never counts.
fn ignores_same(text: &str, want: &str) -> bool {
    let name = ignored_name(want).trim_end_matches('*');
    if name.is_empty() || name.contains('/') {
        return false;
    }
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
        .any(|l| {
            let pattern = ignored_name(l);
            !pattern.contains('/')
                && globset::Glob::new(pattern).is_ok_and(|g| g.compile_matcher().is_match(name))
        })
}

fn quoted_list(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
