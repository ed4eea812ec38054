//! Reading the assignments of a Nextflow config file, statically.
//!
//! This is not an evaluator: it finds `key = value` statements and the scopes (`manifest { }`,
//! `process { withLabel:x { } }`) they are in, with the value kept as source text. That is what
//! the rules need (is `manifest.version` set, what is `errorStrategy` in which selector), and it
//! is robust to everything it does not understand: such statements are simply not assignments.

use super::pipeline::line_at;

/// One `key = value` statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The enclosing scopes then the key's own dotted parts, e.g. `["process",
    /// "withLabel:process_low", "cpus"]` for `cpus = 2` inside `process { withLabel:process_low { } }`.
    pub path: Vec<String>,
    /// The value as written (trimmed), comments included.
    pub value: String,
    /// The 1-based line of the key.
    pub line: usize,
}

impl Assignment {
    /// The path joined by `.`.
    pub fn key(&self) -> String {
        self.path.join(".")
    }

    /// Whether the assignment is inside `profiles { }` (it applies only with that profile).
    pub fn in_profile(&self) -> bool {
        self.path.first().is_some_and(|p| p == "profiles")
    }
}

/// The assignments of one config file, in source order.
#[derive(Debug, Clone, Default)]
pub struct ConfigFile {
    pub assignments: Vec<Assignment>,
}

impl ConfigFile {
    pub fn parse(text: &str) -> ConfigFile {
        let masked = mask_code(text);
        let mut s = Scan {
            text,
            masked: &masked,
            scopes: Vec::new(),
            start: None,
            eq: None,
            depth: 0,
            out: Vec::new(),
        };
        s.run();
        ConfigFile { assignments: s.out }
    }

    /// The last assignment to `dotted` outside any profile (the one that wins).
    pub fn get(&self, dotted: &str) -> Option<&Assignment> {
        let want: Vec<&str> = dotted.split('.').collect();
        self.assignments
            .iter()
            .rev()
            .find(|a| !a.in_profile() && a.path.iter().map(String::as_str).eq(want.iter().copied()))
    }
}

struct Scan<'a> {
    text: &'a str,
    masked: &'a [u8],
    scopes: Vec<String>,
    start: Option<usize>,
    eq: Option<usize>,
    depth: usize,
    out: Vec<Assignment>,
}

impl Scan<'_> {
    fn run(&mut self) {
        let m = self.masked;
        let mut i = 0;
        while i < m.len() {
            let c = m[i];
            match c {
                b'\n' | b';' if self.depth == 0 => {
                    if !(c == b'\n' && self.continues(i)) {
                        self.end(i);
                    }
                }
                b'(' | b'[' => {
                    self.begin(i);
                    self.depth += 1;
                }
                b')' | b']' => self.depth = self.depth.saturating_sub(1),
                b'{' => {
                    if self.depth > 0 || self.eq.is_some() {
                        self.depth += 1;
                    } else {
                        let header = self.start.map_or("", |s| self.text.get(s..i).unwrap_or(""));
                        self.scopes.push(scope_name(header));
                        self.reset();
                    }
                }
                b'}' => {
                    if self.depth > 0 {
                        self.depth -= 1;
                    } else {
                        self.end(i);
                        self.scopes.pop();
                    }
                }
                b'=' => {
                    let prev = if i > 0 { m[i - 1] } else { b' ' };
                    let next = m.get(i + 1).copied().unwrap_or(b' ');
                    if self.depth == 0
                        && self.eq.is_none()
                        && self.start.is_some()
                        && next != b'='
                        && next != b'~'
                        && !b"!<>=".contains(&prev)
                    {
                        self.eq = Some(i);
                    }
                }
                c if c.is_ascii_whitespace() => {}
                _ => self.begin(i),
            }
            i += 1;
        }
        self.end(m.len());
    }

    fn begin(&mut self, i: usize) {
        if self.start.is_none() {
            self.start = Some(i);
        }
    }

    fn reset(&mut self) {
        self.start = None;
        self.eq = None;
        self.depth = 0;
    }

    /// A value that is not finished at the end of its line: `x =` alone, a trailing operator,
    /// or a next line starting with one (`? a` / `: b` of a ternary).
    fn continues(&self, newline: usize) -> bool {
        let Some(eq) = self.eq else {
            return false;
        };
        let so_far = String::from_utf8_lossy(&self.masked[eq + 1..newline]);
        let so_far = so_far.trim_end();
        if so_far.trim().is_empty() || so_far.ends_with(['?', ':', '+', '&', '|', ',', '=']) {
            return true;
        }
        let rest = &self.masked[newline + 1..];
        let next = rest.iter().find(|b| !b.is_ascii_whitespace());
        matches!(next, Some(b'?' | b':' | b'.' | b'+' | b'|' | b'&'))
    }

    fn end(&mut self, i: usize) {
        if let (Some(start), Some(eq)) = (self.start, self.eq) {
            let key = self.text.get(start..eq).unwrap_or("").trim();
            if !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            {
                let mut path: Vec<String> = self
                    .scopes
                    .iter()
                    .filter(|s| !s.is_empty())
                    .cloned()
                    .collect();
                path.extend(key.split('.').map(str::to_string));
                self.out.push(Assignment {
                    path,
                    value: self.text.get(eq + 1..i).unwrap_or("").trim().to_string(),
                    line: line_at(self.text, start),
                });
            }
        }
        self.reset();
    }
}

/// `withName: 'MULTIQC'` → `withName:MULTIQC`; `manifest` → `manifest`.
fn scope_name(header: &str) -> String {
    header
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '\'' && *c != '"')
        .collect()
}

/// The text with comments blanked and string contents replaced by `x` (quotes and newlines
/// kept, same length), so brackets, `=` and keywords can be found without a tokenizer.
pub(crate) fn mask_code(text: &str) -> Vec<u8> {
    mask(text, true)
}

/// The text with only comments blanked (strings kept): for finding `params.x` inside `"${…}"`
/// but not in a commented-out line.
pub(crate) fn strip_comments(text: &str) -> String {
    let masked = mask(text, false);
    String::from_utf8(masked).unwrap_or_else(|_| text.to_string())
}

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
pub(crate) fn skip_string(b: &[u8], i: usize) -> usize {
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
