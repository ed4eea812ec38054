//! A tolerant lexer for the Groovy subset Nextflow scripts and configs are written in.
//!
//! It knows just enough Groovy to find where things end: strings of every quoting style (with
//! `${…}` interpolations lexed as code, so a `}` or a quote inside one does not end anything),
//! comments, numbers, identifiers and operators. It never fails: what it cannot read is kept as
//! a [`Problem`] and lexing goes on, so the reader above it can say what it did not understand.

/// What a token is. Strings keep their literal value when they have no interpolation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Ident(String),
    Number,
    Str {
        /// The value with escapes resolved; `None` when the string interpolates (`${…}`, `$x`).
        literal: Option<String>,
        /// The tokens of every `${…}` inside the string, in order.
        interp: Vec<Token>,
    },
    /// An operator or punctuation, as written (`{`, `==`, `?.`, …).
    Op(String),
    /// A line end that ends a statement unless the statement continues.
    Newline,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub kind: Kind,
    /// Byte offsets into the source.
    pub start: usize,
    pub end: usize,
    /// 1-based line of the first byte.
    pub line: u32,
}

impl Token {
    pub fn is_op(&self, op: &str) -> bool {
        matches!(&self.kind, Kind::Op(o) if o == op)
    }

    pub fn ident(&self) -> Option<&str> {
        match &self.kind {
            Kind::Ident(s) => Some(s),
            _ => None,
        }
    }

    pub fn is_ident(&self, name: &str) -> bool {
        self.ident() == Some(name)
    }

    pub fn literal_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::Str {
                literal: Some(s), ..
            } => Some(s),
            _ => None,
        }
    }
}

/// Where a string stood before a `${`, to read it again from there.
struct Checkpoint {
    pos: usize,
    line: u32,
    problems: usize,
    value: usize,
    interp: usize,
}

/// Something the lexer could not read, at a 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub line: u32,
    pub what: String,
}

/// Operators of two or three characters, longest first so `==~` wins over `==`.
const MULTI_OPS: &[&str] = &[
    "==~", "<=>", "...", "**=", "?.", "*.", "?:", "==", "!=", "<=", ">=", "&&", "||", "->", "..",
    "=~", "+=", "-=", "*=", "/=", "++", "--", "**", "<<", ">>", ".&", ".@",
];

pub(crate) struct Lexed {
    pub tokens: Vec<Token>,
    pub problems: Vec<Problem>,
}

/// Lexes a whole source text. A byte-order mark and a `#!` first line are skipped; `\r\n`
/// counts as one line end.
pub(crate) fn lex(src: &str) -> Lexed {
    let mut lx = Lexer {
        src,
        bytes: src.as_bytes(),
        pos: 0,
        line: 1,
        problems: Vec::new(),
        depth: 0,
        interp_failed: false,
        reread: 0,
    };
    if src.starts_with('\u{feff}') {
        lx.pos = '\u{feff}'.len_utf8();
    }
    if src.get(lx.pos..).is_some_and(|r| r.starts_with("#!")) {
        lx.skip_line();
    }
    let tokens = lx.tokens_until(None).unwrap_or_default();
    Lexed {
        tokens,
        problems: lx.problems,
    }
}

struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    line: u32,
    problems: Vec<Problem>,
    /// How many `${` the lexer is inside; bounded so hostile nesting cannot exhaust the stack.
    depth: usize,
    /// Whether an interpolation has already run to the end of the input unclosed (or reading
    /// broken ones again has cost too much).
    interp_failed: bool,
    /// Bytes read twice because an interpolation turned out broken.
    reread: usize,
}

/// How many problems one source may record: past this, hostile input would only cost memory.
pub(crate) const MAX_PROBLEMS: usize = 200;

/// Deeper `${"${…}"}` nesting than this is read as plain characters and reported.
pub(crate) const MAX_NESTING: usize = 64;

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.pos + ahead).copied()
    }

    fn rest_starts_with(&self, s: &str) -> bool {
        self.bytes
            .get(self.pos..)
            .is_some_and(|r| r.starts_with(s.as_bytes()))
    }

    /// Moves one character on, counting lines. Steps over a whole UTF-8 character.
    fn bump(&mut self) {
        let Some(b) = self.peek(0) else { return };
        if b == b'\n' {
            self.line += 1;
        }
        let width = self
            .src
            .get(self.pos..)
            .and_then(|r| r.chars().next())
            .map_or(1, char::len_utf8);
        self.pos += width;
    }

    fn skip_line(&mut self) {
        while let Some(b) = self.peek(0) {
            if b == b'\n' {
                break;
            }
            self.bump();
        }
    }

    fn problem(&mut self, line: u32, what: impl Into<String>) {
        if self.problems.len() >= MAX_PROBLEMS {
            return;
        }
        self.problems.push(Problem {
            line,
            what: what.into(),
        });
    }

    /// Lexes tokens until end of input, or (inside an interpolation) until the `}` that closes
    /// the `${` — which is consumed and not returned.
    ///
    /// `None` when an interpolation never closes. After one such failure, later
    /// interpolations give up at their first line end, so a file full of broken `${` costs a
    /// line each rather than a scan to the end of the file each.
    fn tokens_until(&mut self, close_interp: Option<u32>) -> Option<Vec<Token>> {
        let mut out: Vec<Token> = Vec::new();
        let mut depth = 0usize;
        let start_line = self.line;
        loop {
            self.skip_blanks_and_comments(&mut out);
            if close_interp.is_some() && self.interp_failed && self.line > start_line {
                return None;
            }
            let Some(b) = self.peek(0) else {
                if close_interp.is_some() {
                    self.interp_failed = true;
                    return None;
                }
                return Some(out);
            };
            if close_interp.is_some() {
                if b == b'{' {
                    depth += 1;
                } else if b == b'}' {
                    if depth == 0 {
                        self.bump();
                        return Some(out);
                    }
                    depth -= 1;
                }
            }
            let tok = self.token(b, out.last());
            out.push(tok);
        }
    }

    /// Skips spaces, comments and line continuations; pushes a newline token for each line end
    /// (a block comment that spans lines counts as one line end, as in Groovy).
    fn skip_blanks_and_comments(&mut self, out: &mut Vec<Token>) {
        while let Some(b) = self.peek(0) {
            match b {
                b'\n' => {
                    let (start, line) = (self.pos, self.line);
                    self.bump();
                    out.push(Token {
                        kind: Kind::Newline,
                        start,
                        end: start + 1,
                        line,
                    });
                }
                b' ' | b'\t' | b'\r' | 0x0c => self.bump(),
                b'\\'
                    if matches!(self.peek(1), Some(b'\n'))
                        || (self.peek(1) == Some(b'\r') && self.peek(2) == Some(b'\n')) =>
                {
                    // A backslash at the end of a line joins it to the next.
                    self.bump();
                    if self.peek(0) == Some(b'\r') {
                        self.bump();
                    }
                    self.bump();
                }
                b'/' if self.peek(1) == Some(b'/') => self.skip_line(),
                b'/' if self.peek(1) == Some(b'*') => {
                    let (start, line) = (self.pos, self.line);
                    self.bump();
                    self.bump();
                    let mut closed = false;
                    while let Some(c) = self.peek(0) {
                        if c == b'*' && self.peek(1) == Some(b'/') {
                            self.bump();
                            self.bump();
                            closed = true;
                            break;
                        }
                        self.bump();
                    }
                    if !closed {
                        self.problem(line, "comment `/*` is not closed");
                    }
                    if self.line > line {
                        out.push(Token {
                            kind: Kind::Newline,
                            start,
                            end: self.pos,
                            line,
                        });
                    }
                }
                _ => return,
            }
        }
    }

    fn token(&mut self, b: u8, prev: Option<&Token>) -> Token {
        let (start, line) = (self.pos, self.line);
        let kind = match b {
            b'\'' | b'"' => self.string(b),
            b'$' if self.peek(1) == Some(b'/') => self.dollar_slashy(),
            b'/' if !ends_value(prev) => match self.slashy() {
                Some(kind) => kind,
                None => {
                    self.bump();
                    Kind::Op("/".into())
                }
            },
            b'0'..=b'9' => {
                self.number();
                Kind::Number
            }
            _ if b == b'_' || b == b'$' || b.is_ascii_alphabetic() => {
                while let Some(c) = self.peek(0) {
                    if c == b'_' || c == b'$' || c.is_ascii_alphanumeric() {
                        self.bump();
                    } else {
                        break;
                    }
                }
                Kind::Ident(self.src.get(start..self.pos).unwrap_or("").to_string())
            }
            _ => {
                let op = MULTI_OPS
                    .iter()
                    .find(|op| self.rest_starts_with(op))
                    .map(|op| op.to_string());
                match op {
                    Some(op) => {
                        self.pos += op.len();
                        Kind::Op(op)
                    }
                    None => {
                        self.bump();
                        Kind::Op(self.src.get(start..self.pos).unwrap_or("").to_string())
                    }
                }
            }
        };
        Token {
            kind,
            start,
            end: self.pos,
            line,
        }
    }

    fn number(&mut self) {
        while let Some(c) = self.peek(0) {
            let decimal_point = c == b'.' && self.peek(1).is_some_and(|d| d.is_ascii_digit());
            if c.is_ascii_alphanumeric() || c == b'_' || decimal_point {
                self.bump();
            } else {
                break;
            }
        }
    }

    /// A quoted string: `'…'`, `"…"`, `'''…'''` or `"""…"""`. Single-line forms end at the line
    /// end when unterminated, so one bad quote costs one line, not the rest of the file.
    fn string(&mut self, quote: u8) -> Kind {
        let line = self.line;
        let triple = self.peek(1) == Some(quote) && self.peek(2) == Some(quote);
        let interpolating = quote == b'"';
        let width = if triple { 3 } else { 1 };
        for _ in 0..width {
            self.bump();
        }
        let mut value = String::new();
        let mut interp = Vec::new();
        let mut plain = true;
        // A `${…}` of a one-line string that ran onto later lines: if the string then fails to
        // close, the interpolation was the mistake, and the string is read again from it.
        let mut checkpoint: Option<Checkpoint> = None;
        // Once an interpolation is known broken, the rest of the string is plain text.
        let mut raw = false;
        loop {
            let Some(c) = self.peek(0) else {
                if let Some(cp) = checkpoint.take() {
                    self.restore(&cp, &mut value, &mut interp);
                    raw = true;
                    continue;
                }
                if !raw {
                    self.problem(line, "string is not closed before the end of the file");
                }
                break;
            };
            if c == quote
                && (!triple || (self.peek(1) == Some(quote) && self.peek(2) == Some(quote)))
            {
                for _ in 0..width {
                    self.bump();
                }
                break;
            }
            if c == b'\n' && !triple {
                if let Some(cp) = checkpoint.take() {
                    self.restore(&cp, &mut value, &mut interp);
                    raw = true;
                    continue;
                }
                if !raw {
                    self.problem(line, "string is not closed on its line");
                }
                break;
            }
            if c == b'\r' && self.peek(1) == Some(b'\n') {
                // A CRLF file's multi-line string has the same value as its LF twin.
                self.bump();
                continue;
            }
            if c == b'\\' {
                self.bump();
                if let Some(e) = self.peek(0) {
                    let ch = self.current_char();
                    value.push(match e {
                        b'n' => '\n',
                        b't' => '\t',
                        b'r' => '\r',
                        _ => ch,
                    });
                    self.bump();
                }
                continue;
            }
            if interpolating && !raw && c == b'$' {
                plain = plain
                    && !self
                        .peek(1)
                        .is_some_and(|n| n == b'{' || n == b'_' || n.is_ascii_alphabetic());
                if self.peek(1) == Some(b'{') && self.depth >= MAX_NESTING {
                    self.problem(self.line, "string interpolations nested too deep; not read");
                } else if self.peek(1) == Some(b'{') {
                    let cp = Checkpoint {
                        pos: self.pos,
                        line: self.line,
                        problems: self.problems.len(),
                        value: value.len(),
                        interp: interp.len(),
                    };
                    self.bump();
                    self.bump();
                    self.depth += 1;
                    let inner = self.tokens_until(Some(cp.line));
                    self.depth -= 1;
                    match inner {
                        Some(toks) => {
                            interp.extend(toks);
                            if !triple && self.line > cp.line && checkpoint.is_none() {
                                checkpoint = Some(cp);
                            }
                            continue;
                        }
                        None => {
                            // Read the rest as string text instead, so a typo such as
                            // `"${meta.id"` costs this string, not the rest of the file.
                            self.restore(&cp, &mut value, &mut interp);
                            raw = true;
                        }
                    }
                }
            }
            value.push(self.current_char());
            self.bump();
        }
        Kind::Str {
            literal: plain.then_some(value),
            interp,
        }
    }

    /// Goes back to just before a `${` found to be broken, and says so.
    fn restore(&mut self, cp: &Checkpoint, value: &mut String, interp: &mut Vec<Token>) {
        // Reading again costs what was read; past twice the source, later interpolations give
        // up at their first line end, so hostile input stays linear.
        self.reread += self.pos.saturating_sub(cp.pos);
        if self.reread > self.src.len().saturating_mul(2) {
            self.interp_failed = true;
        }
        self.pos = cp.pos;
        self.line = cp.line;
        self.problems.truncate(cp.problems);
        value.truncate(cp.value);
        interp.truncate(cp.interp);
        self.problem(cp.line, "string interpolation `${` is not closed");
    }

    fn current_char(&self) -> char {
        self.src
            .get(self.pos..)
            .and_then(|r| r.chars().next())
            .unwrap_or('\u{fffd}')
    }

    /// A slashy string `/…/`, read only where a value may start and only when it closes on the
    /// same line; otherwise `None` and the `/` is an operator.
    fn slashy(&mut self) -> Option<Kind> {
        let rest = self.bytes.get(self.pos + 1..)?;
        if rest.first().is_none_or(|c| *c == b' ' || *c == b'\n') {
            return None;
        }
        let mut i = 0;
        while let Some(&c) = rest.get(i) {
            match c {
                b'\\' => i += 2,
                b'\n' => return None,
                b'/' => break,
                _ => i += 1,
            }
        }
        if rest.get(i) != Some(&b'/') {
            return None;
        }
        let body = self.src.get(self.pos + 1..self.pos + 1 + i)?.to_string();
        self.pos += i + 2;
        let plain = !body.contains('$');
        Some(Kind::Str {
            literal: plain.then_some(body),
            interp: Vec::new(),
        })
    }

    /// A dollar-slashy string `$/…/$`, which may span lines.
    fn dollar_slashy(&mut self) -> Kind {
        let line = self.line;
        self.bump();
        self.bump();
        loop {
            match self.peek(0) {
                None => {
                    self.problem(line, "string `$/` is not closed before the end of the file");
                    break;
                }
                Some(b'/') if self.peek(1) == Some(b'$') => {
                    self.bump();
                    self.bump();
                    break;
                }
                Some(_) => self.bump(),
            }
        }
        Kind::Str {
            literal: None,
            interp: Vec::new(),
        }
    }
}

/// Whether the previous token ends a value, so a following `/` divides rather than opening a
/// slashy string.
fn ends_value(prev: Option<&Token>) -> bool {
    match prev.map(|t| &t.kind) {
        Some(Kind::Ident(_) | Kind::Number | Kind::Str { .. }) => true,
        Some(Kind::Op(op)) => matches!(op.as_str(), ")" | "]" | "}" | "++" | "--"),
        _ => false,
    }
}

/// A string literal of a source, wherever it is (interpolations included), for rules that look
/// at every string — hard-coded paths, credentials — without seeing comments.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StringLiteral {
    pub line: u32,
    /// The source text, quotes included.
    pub text: String,
    /// The value, when the string does not interpolate.
    pub value: Option<String>,
}

/// Every string literal of `src`, in source order, nested ones after the string holding them.
pub fn string_literals(src: &str) -> Vec<StringLiteral> {
    fn walk(src: &str, toks: &[Token], out: &mut Vec<StringLiteral>) {
        for t in toks {
            if let Kind::Str { literal, interp } = &t.kind {
                out.push(StringLiteral {
                    line: t.line,
                    text: src.get(t.start..t.end).unwrap_or("").to_string(),
                    value: literal.clone(),
                });
                walk(src, interp, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(src, &lex(src).tokens, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Kind> {
        lex(src).tokens.into_iter().map(|t| t.kind).collect()
    }

    #[test]
    fn a_brace_inside_a_string_or_comment_is_not_an_operator() {
        let l = lex("a = '}' // }\n/* { */ b = \"${ x ? '}' : \"{\" }\"");
        let braces = l
            .tokens
            .iter()
            .filter(|t| t.is_op("{") || t.is_op("}"))
            .count();
        assert_eq!(braces, 0);
        assert!(l.problems.is_empty(), "{:?}", l.problems);
    }

    #[test]
    fn triple_quoted_strings_span_lines_and_lines_are_counted() {
        let l = lex("x = \"\"\"\none } \"\n\"\"\"\ny");
        let y = l.tokens.iter().find(|t| t.is_ident("y"));
        assert_eq!(y.map(|t| t.line), Some(4));
    }

    #[test]
    fn an_unterminated_single_line_string_costs_one_line() {
        let l = lex("a = 'oops\nb = 1");
        assert_eq!(l.problems.len(), 1);
        assert!(l.tokens.iter().any(|t| t.is_ident("b") && t.line == 2));
    }

    #[test]
    fn slashy_strings_only_where_a_value_starts() {
        assert!(matches!(kinds("x =~ /a}b/").get(2), Some(Kind::Str { .. })));
        assert_eq!(
            kinds("a / b / c")
                .iter()
                .filter(|k| **k == Kind::Op("/".into()))
                .count(),
            2
        );
    }

    #[test]
    fn escapes_and_literals() {
        let l = lex(r#"'it\'s' "plain" "has $x""#);
        let lits: Vec<Option<&str>> = l.tokens.iter().map(Token::literal_str).collect();
        assert_eq!(lits, vec![Some("it's"), Some("plain"), None]);
    }
}
