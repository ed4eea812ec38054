//! Structure over the token stream: matching brackets, splitting a range of tokens into
//! statements the way Groovy does (a line end ends a statement unless the expression plainly
//! goes on), and reading literal values.

use super::lex::{Kind, MAX_PROBLEMS, Problem, Token};
use super::model::Value;

/// How far down the open-bracket stack a closing bracket looks for its partner.
const MATCH_WINDOW: usize = 32;

/// Deeper list/map nesting than this is kept as source text rather than read.
const MAX_LITERAL_DEPTH: usize = 64;

/// Tokens of one source with their bracket pairs.
pub(crate) struct Tree<'a> {
    pub src: &'a str,
    pub toks: Vec<Token>,
    /// For an opening bracket, the index of its closing one (`None` when it never closes).
    close: Vec<Option<usize>>,
    /// Stray closing brackets and brackets that never close.
    pub problems: Vec<Problem>,
}

fn closer(open: &str) -> Option<&'static str> {
    match open {
        "{" => Some("}"),
        "(" => Some(")"),
        "[" => Some("]"),
        _ => None,
    }
}

impl<'a> Tree<'a> {
    pub fn new(src: &'a str, toks: Vec<Token>) -> Self {
        let mut close = vec![None; toks.len()];
        let mut problems = Vec::new();
        let mut stack: Vec<usize> = Vec::new();
        for (i, t) in toks.iter().enumerate() {
            let Kind::Op(op) = &t.kind else { continue };
            if closer(op).is_some() {
                stack.push(i);
                continue;
            }
            if !matches!(op.as_str(), "}" | ")" | "]") {
                continue;
            }
            let opens = |j: &usize| {
                toks.get(*j)
                    .and_then(|o| match &o.kind {
                        Kind::Op(o) => closer(o),
                        _ => None,
                    })
                    .is_some_and(|c| c == op)
            };
            // Only the innermost few brackets are searched for a partner, so a hostile run of
            // mismatched brackets stays linear.
            let window = stack.len().saturating_sub(MATCH_WINDOW);
            match stack
                .get(window..)
                .and_then(|w| w.iter().rposition(opens))
                .map(|p| p + window)
            {
                Some(at) => {
                    // Brackets opened after the match never closed: say so, then pair.
                    for j in stack.drain(at + 1..) {
                        if let Some(o) = toks.get(j) {
                            push_capped(&mut problems, unclosed(o));
                        }
                    }
                    if let Some(j) = stack.pop()
                        && let Some(slot) = close.get_mut(j)
                    {
                        *slot = Some(i);
                    }
                }
                None => push_capped(
                    &mut problems,
                    Problem {
                        line: t.line,
                        what: format!("`{op}` closes nothing"),
                    },
                ),
            }
        }
        for j in stack {
            if let Some(o) = toks.get(j) {
                push_capped(&mut problems, unclosed(o));
            }
        }
        Tree {
            src,
            toks,
            close,
            problems,
        }
    }

    pub fn tok(&self, i: usize) -> Option<&Token> {
        self.toks.get(i)
    }

    /// The index of the bracket closing the one at `i`.
    pub fn close_of(&self, i: usize) -> Option<usize> {
        self.close.get(i).copied().flatten()
    }

    /// Source text from token `lo` to token `hi - 1`, inclusive of both.
    pub fn text(&self, lo: usize, hi: usize) -> String {
        let (Some(a), Some(b)) = (self.tok(lo), hi.checked_sub(1).and_then(|h| self.tok(h))) else {
            return String::new();
        };
        if hi <= lo {
            return String::new();
        }
        self.src
            .get(a.start..b.end)
            .unwrap_or("")
            .replace("\r\n", "\n")
    }

    /// Line of the last token of the source (or 1).
    pub fn last_line(&self) -> u32 {
        self.toks.last().map_or(1, |t| t.line)
    }

    /// Splits `lo..hi` into statements (index ranges), skipping bracketed groups whole.
    pub fn statements(&self, lo: usize, hi: usize) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut i = lo;
        while i < hi {
            while self
                .tok(i)
                .is_some_and(|t| t.kind == Kind::Newline || t.is_op(";"))
                && i < hi
            {
                i += 1;
            }
            if i >= hi {
                break;
            }
            let start = i;
            let mut end = hi;
            // The last token before the current position that is not a line end.
            let mut last = i;
            while i < hi {
                let Some(t) = self.tok(i) else { break };
                if t.is_op(";") {
                    end = i;
                    break;
                }
                if t.kind == Kind::Newline {
                    // Look past the whole run of line ends once, so blank lines stay linear.
                    let mut next = i;
                    while next < hi && self.tok(next).is_some_and(|n| n.kind == Kind::Newline) {
                        next += 1;
                    }
                    if next < hi && self.continues(last, next) {
                        i = next;
                        continue;
                    }
                    end = i;
                    break;
                }
                let after = match self.close_of(i) {
                    Some(c) if c < hi => c + 1,
                    // A bracket that never closes swallows the rest of the range.
                    None if t.is_op("{") || t.is_op("(") || t.is_op("[") => hi,
                    _ => i + 1,
                };
                last = after - 1;
                i = after;
            }
            out.push((start, end.min(hi)));
            i = end + 1;
        }
        out
    }

    /// Whether a statement whose last token so far is `last` goes on to the token at `next`,
    /// the first after a line end: it does when `last` is an operator that needs a right-hand
    /// side, or `next` one that needs a left-hand side.
    fn continues(&self, last: usize, next: usize) -> bool {
        let is_in = |i: usize, set: &[&str]| {
            self.tok(i)
                .is_some_and(|t| matches!(&t.kind, Kind::Op(op) if set.contains(&op.as_str())))
        };
        is_in(last, TRAILING) || is_in(next, LEADING)
    }

    /// Reads the tokens `lo..hi` as one value: a literal when they are exactly one, else the
    /// source text.
    pub fn value(&self, lo: usize, hi: usize) -> Value {
        self.value_at(lo, hi, 0)
    }

    fn value_at(&self, lo: usize, hi: usize, depth: usize) -> Value {
        match self.literal(lo, hi, depth) {
            Some((v, end)) if end == hi => v,
            _ => Value::Expr(self.text(lo, hi)),
        }
    }

    /// A literal starting at `lo` and where it ends.
    fn literal(&self, lo: usize, hi: usize, depth: usize) -> Option<(Value, usize)> {
        let lo = self.skip_newlines(lo, hi);
        let t = self.tok(lo).filter(|_| lo < hi)?;
        let v = match &t.kind {
            Kind::Str {
                literal: Some(s), ..
            } => Value::Str(s.clone()),
            Kind::Number => Value::Number(self.text(lo, lo + 1)),
            Kind::Op(op) if op == "-" => {
                self.tok(lo + 1).filter(|n| n.kind == Kind::Number)?;
                return Some((Value::Number(self.text(lo, lo + 2)), lo + 2));
            }
            Kind::Ident(id) => match id.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                "null" => Value::Null,
                _ => return None,
            },
            Kind::Op(op) if op == "[" && depth < MAX_LITERAL_DEPTH => {
                let close = self.close_of(lo).filter(|c| *c < hi)?;
                return Some((self.collection(lo + 1, close, depth + 1)?, close + 1));
            }
            _ => return None,
        };
        Some((v, lo + 1))
    }

    fn skip_newlines(&self, mut i: usize, hi: usize) -> usize {
        while i < hi && self.tok(i).is_some_and(|t| t.kind == Kind::Newline) {
            i += 1;
        }
        i
    }

    /// The inside of `[…]`: a list or a map (`[:]` is the empty map). Elements that are not
    /// literals are kept as source text.
    fn collection(&self, lo: usize, hi: usize, depth: usize) -> Option<Value> {
        let elems = self.split_commas(lo, hi);
        if let [(a, b)] = elems.as_slice() {
            let a = self.skip_newlines(*a, *b);
            if b - a == 1 && self.tok(a).is_some_and(|t| t.is_op(":")) {
                return Some(Value::Map(Vec::new()));
            }
        }
        let is_map = elems
            .first()
            .is_some_and(|(a, b)| self.map_key(*a, *b).is_some());
        if is_map {
            let mut entries = Vec::new();
            for (a, b) in elems {
                let (key, vstart) = self.map_key(a, b)?;
                entries.push((key, self.value_at(vstart, b, depth)));
            }
            return Some(Value::Map(entries));
        }
        Some(Value::List(
            elems
                .into_iter()
                .map(|(a, b)| self.value_at(a, b, depth))
                .collect(),
        ))
    }

    /// `key:` at the start of a map entry, and where the value starts.
    fn map_key(&self, lo: usize, hi: usize) -> Option<(String, usize)> {
        let lo = self.skip_newlines(lo, hi);
        let k = self.tok(lo)?;
        let key = match &k.kind {
            Kind::Ident(s) => s.clone(),
            Kind::Str {
                literal: Some(s), ..
            } => s.clone(),
            _ => return None,
        };
        self.tok(lo + 1)
            .filter(|c| c.is_op(":") && lo + 1 < hi)
            .map(|_| (key, lo + 2))
    }

    /// Splits `lo..hi` at top-level commas; a trailing comma makes no empty element. Newlines
    /// at the edges of elements are dropped.
    pub fn split_commas(&self, lo: usize, hi: usize) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut i = lo;
        let mut start = lo;
        while i < hi {
            let Some(t) = self.tok(i) else { break };
            if t.is_op(",") {
                out.push((start, i));
                start = i + 1;
                i += 1;
                continue;
            }
            i = match self.close_of(i) {
                Some(c) if c < hi => c + 1,
                _ => i + 1,
            };
        }
        out.push((start, hi));
        out.into_iter()
            .map(|(a, b)| self.trim(a, b))
            .filter(|(a, b)| a < b)
            .collect()
    }

    /// Drops newline tokens at both ends of a range.
    pub fn trim(&self, mut a: usize, mut b: usize) -> (usize, usize) {
        a = self.skip_newlines(a, b);
        while b > a
            && b.checked_sub(1)
                .and_then(|j| self.tok(j))
                .is_some_and(|t| t.kind == Kind::Newline)
        {
            b -= 1;
        }
        (a, b)
    }

    /// The literal strings the expression `lo..hi` can be, where the source shows them: a lone
    /// string literal, the branches of a `cond ? 'a' : 'b'` ternary, or the same inside a
    /// `"${…}"`.
    pub fn choices(&self, lo: usize, hi: usize) -> Vec<String> {
        let (lo, hi) = self.trim(lo, hi);
        if hi == lo + 1
            && let Some(t) = self.tok(lo)
        {
            return token_choices(t);
        }
        let toks: Vec<&Token> = (lo..hi).filter_map(|j| self.tok(j)).collect();
        branch_strings(&toks)
    }
}

fn token_choices(t: &Token) -> Vec<String> {
    match &t.kind {
        Kind::Str {
            literal: Some(s), ..
        } => vec![s.clone()],
        Kind::Str { interp, .. } => {
            // The nf-core form `"${ cond ? 'a' : 'b' }"`: the branches of a ternary inside
            // the interpolation. `"${meta.id}"` has none and shows nothing.
            branch_strings(&interp.iter().collect::<Vec<_>>())
        }
        _ => Vec::new(),
    }
}

/// The string literals that directly follow the `?` and `:` of a ternary.
fn branch_strings(toks: &[&Token]) -> Vec<String> {
    let Some(q) = toks.iter().position(|t| t.is_op("?")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut iter = toks.iter().skip(q).peekable();
    while let Some(t) = iter.next() {
        if t.is_op("?") || t.is_op(":") {
            while iter.peek().is_some_and(|n| n.kind == Kind::Newline) {
                iter.next();
            }
            if let Some(s) = iter.peek().and_then(|n| n.literal_str()) {
                out.push(s.to_string());
            }
        }
    }
    out
}

fn unclosed(t: &Token) -> Problem {
    let what = match &t.kind {
        Kind::Op(op) => format!("`{op}` opened here is never closed"),
        _ => "bracket opened here is never closed".to_string(),
    };
    Problem { line: t.line, what }
}

/// Operators that, ending a line, say the expression goes on.
const TRAILING: &[&str] = &[
    "=", "+", "-", "*", "/", "%", "&&", "||", "?", ":", ",", ".", "==", "!=", "<", ">", "<=", ">=",
    "?:", "=~", "==~", "+=", "-=", "|", "&", "!", "->", "?.", "*.", "..",
];

/// Operators that, starting a line, join it to the one before.
const LEADING: &[&str] = &[".", "?.", "*.", "?", ":", "?:", "&&", "||", "|"];

/// The first line of a statement, cut to 80 characters, for messages.
pub(crate) fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    if line.chars().count() > 80 {
        let cut: String = line.chars().take(80).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

fn push_capped(problems: &mut Vec<Problem>, p: Problem) {
    if problems.len() < MAX_PROBLEMS {
        problems.push(p);
    }
}
