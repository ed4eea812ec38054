//! What the rules need from configs, on top of [`crate::parse`]'s static config reader: the
//! literal strings a value can be, whether it is empty, and a comment stripper for finding
//! `params.x` in code.

use std::sync::LazyLock;

use regex::Regex;

use crate::parse::Value;

#[expect(
    clippy::expect_used,
    reason = "a constant pattern, checked by every test run"
)]
static QUOTED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"'([^'\n]*)'|"([^"\n]*)""#).expect("constant regex"));

/// The literal strings in a value: a string itself, those in a list or map, and the quoted
/// strings inside an expression (both branches of a ternary, say).
pub(crate) fn value_strings(v: &Value) -> Vec<String> {
    match v {
        Value::Str(s) => vec![s.clone()],
        Value::Expr(text) => quoted_strings(text),
        Value::List(items) => items.iter().flat_map(value_strings).collect(),
        Value::Map(entries) => entries.iter().flat_map(|(_, v)| value_strings(v)).collect(),
        Value::Null | Value::Bool(_) | Value::Number(_) => Vec::new(),
    }
}

/// The quoted strings of a source text.
pub(crate) fn quoted_strings(text: &str) -> Vec<String> {
    single_or_double(&QUOTED, text)
}

/// What `re` (a single-quoted form in group 1, a double-quoted one in group 2) matches in
/// `text`, each match's one group.
pub(crate) fn single_or_double(re: &Regex, text: &str) -> Vec<String> {
    re.captures_iter(text)
        .filter_map(|c| {
            c.get(1)
                .or_else(|| c.get(2))
                .map(|m| m.as_str().to_string())
        })
        .collect()
}

/// `null`, `''`, `[]`, `[:]`: set, but to nothing.
pub(crate) fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Str(s) => s.trim().is_empty(),
        Value::List(items) => items.is_empty(),
        Value::Map(entries) => entries.is_empty(),
        Value::Expr(text) => matches!(text.trim(), "" | "[:]"),
        Value::Bool(_) | Value::Number(_) => false,
    }
}

/// The text with only comments blanked (strings kept): for finding `params.x` inside `"${…}"`
/// but not in a commented-out line.
pub(crate) fn strip_comments(text: &str) -> String {
    let masked = mask(text, false);
    String::from_utf8(masked).unwrap_or_else(|_| text.to_string())
}

/// The text with comments blanked (same length, newlines kept); with `blank_strings`, string
/// contents too.
fn mask(text: &str, blank_strings: bool) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    if b.starts_with(b"#!") {
        while i < b.len() && b[i] != b'\n' {
            out[i] = b' ';
            i += 1;
        }
    }
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = find(b, i + 2, b"*/").map_or(b.len(), |e| e + 2);
                blank(&mut out, i, end, b' ');
                i = end;
            }
            b'\'' | b'"' => {
                let end = skip_string(b, i);
                // Keep the quotes so a check can still see that a string was there.
                if blank_strings {
                    blank(&mut out, i + 1, end.saturating_sub(1).max(i + 1), b'x');
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    out
}

fn blank(out: &mut [u8], from: usize, to: usize, with: u8) {
    for byte in out.iter_mut().take(to).skip(from) {
        if *byte != b'\n' {
            *byte = with;
        }
    }
}

fn find(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    b.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// The index just past the string literal starting at `i` (a quote). Handles `'…'`, `"…"`,
/// triple-quoted strings, backslash escapes and `${ … }` inside double quotes (which may hold
/// strings of their own). An unterminated one-line string ends at its line's end.
fn skip_string(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let triple = b.get(i..i + 3) == Some(&[q, q, q][..]);
    let mut j = if triple { i + 3 } else { i + 1 };
    while j < b.len() {
        let c = b[j];
        if c == b'\\' {
            j += 2;
            continue;
        }
        if !triple && c == b'\n' {
            return j;
        }
        if q == b'"' && c == b'$' && b.get(j + 1) == Some(&b'{') {
            j = skip_interpolation(b, j + 2);
            continue;
        }
        if c == q {
            if !triple {
                return j + 1;
            }
            if b.get(j..j + 3) == Some(&[q, q, q][..]) {
                return j + 3;
            }
        }
        j += 1;
    }
    b.len()
}

fn skip_interpolation(b: &[u8], mut j: usize) -> usize {
    let mut depth = 1usize;
    while j < b.len() {
        match b[j] {
            b'\'' | b'"' => {
                j = skip_string(b, j);
                continue;
            }
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    b.len()
}
