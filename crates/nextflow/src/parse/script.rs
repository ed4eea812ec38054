//! The reader of `.nf` files: processes, workflows, includes, params and functions at the top
//! level. Whatever else is at the top level is recorded as [`Unparsed`], never dropped.

use super::lex::{Kind, MAX_PROBLEMS, lex};
use super::model::{
    Arg, Block, Declaration, Directive, Emit, Function, Include, IncludedName, Named, NfFile,
    Other, Param, Process, Script, ScriptKind, Unparsed, Value, Workflow,
};
use super::tree::{Tree, first_line};

/// Reads one `.nf` source. `path` is only used to label what is found.
pub fn parse_script(path: &str, src: &str) -> NfFile {
    let lexed = lex(src);
    let tree = Tree::new(src, lexed.tokens);
    let mut file = NfFile {
        path: path.to_string(),
        ..NfFile::default()
    };
    let mut r = Reader {
        tree: &tree,
        file: &mut file,
        dropped: None,
    };
    for p in lexed.problems.iter().chain(tree.problems.iter()) {
        r.unparsed(p.line, p.what.clone());
    }
    for (lo, hi) in tree.statements(0, tree.toks.len()) {
        r.top_level(lo, hi);
    }
    let dropped = r.dropped;
    file.unparsed.sort_by_key(|u| u.line);
    if let Some(line) = dropped {
        file.unparsed.push(Unparsed {
            file: file.path.clone(),
            line,
            what: format!("more than {MAX_PROBLEMS} constructs not understood; the rest from here are not listed"),
        });
    }
    file
}

struct Reader<'t, 'a> {
    tree: &'t Tree<'a>,
    file: &'t mut NfFile,
    /// The line of the first entry left out once the list is full.
    dropped: Option<u32>,
}

/// The section labels of a process body.
const PROCESS_SECTIONS: &[&str] = &[
    "input", "output", "when", "script", "shell", "exec", "stub", "topic",
];
const WORKFLOW_SECTIONS: &[&str] = &["take", "main", "emit", "publish"];

impl<'t> Reader<'t, '_> {
    fn unparsed(&mut self, line: u32, what: impl Into<String>) {
        if self.file.unparsed.len() >= MAX_PROBLEMS {
            self.dropped.get_or_insert(line);
            return;
        }
        self.file.unparsed.push(Unparsed {
            file: self.file.path.clone(),
            line,
            what: what.into(),
        });
    }

    fn line(&self, i: usize) -> u32 {
        self.tree.tok(i).map_or(1, |t| t.line)
    }

    /// Borrowed from the tree, not the reader, so the reader stays free to record.
    fn ident(&self, i: usize) -> Option<&'t str> {
        let tree: &'t Tree<'_> = self.tree;
        tree.tok(i).and_then(|t| t.ident())
    }

    fn is_op(&self, i: usize, op: &str) -> bool {
        self.tree.tok(i).is_some_and(|t| t.is_op(op))
    }

    fn top_level(&mut self, lo: usize, hi: usize) {
        let line = self.line(lo);
        match self.ident(lo) {
            Some("include") => self.include(lo, hi),
            Some("process") => self.process(lo, hi),
            Some("workflow") if !self.is_op(lo + 1, ".") => self.workflow(lo, hi),
            Some("def") => self.def(lo, hi),
            Some("params") if self.is_op(lo + 1, ".") => self.param(lo, hi),
            Some("params") if self.is_op(lo + 1, "{") => self.params_block(lo, hi),
            Some("import" | "nextflow" | "output" | "workflow" | "enum" | "record") => {
                // Understood and legal, but nothing the tools read from them yet.
                let text = first_line(&self.tree.text(lo, hi));
                self.file.others.push(Other { line, text });
            }
            _ => {
                let text = first_line(&self.tree.text(lo, hi));
                self.unparsed(
                    line,
                    format!("top-level statement not understood: `{text}`"),
                );
            }
        }
    }

    fn include(&mut self, lo: usize, hi: usize) {
        let line = self.line(lo);
        let open = lo + 1;
        let close = self
            .is_op(open, "{")
            .then(|| self.tree.close_of(open))
            .flatten();
        let from = close.map(|c| c + 1);
        let source = from
            .filter(|f| self.ident(*f) == Some("from") && *f + 1 < hi)
            .and_then(|f| self.tree.tok(f + 1))
            .and_then(|t| t.literal_str())
            .map(str::to_string);
        let (Some(close), Some(source)) = (close, source) else {
            let has_from = from.is_some_and(|f| self.ident(f) == Some("from") && f + 1 < hi);
            let what = if has_from {
                let src = from.map_or(String::new(), |f| first_line(&self.tree.text(f + 1, hi)));
                format!("include source `{src}` is not a literal path; not read")
            } else {
                let text = first_line(&self.tree.text(lo, hi));
                format!("include not understood: `{text}`")
            };
            self.unparsed(line, what);
            return;
        };
        let mut names = Vec::new();
        for (a, b) in self.tree.statements(open + 1, close) {
            let parts: Vec<&str> = (a..b).filter_map(|j| self.ident(j)).collect();
            match parts.as_slice() {
                [name] if b - a == 1 => names.push(IncludedName {
                    name: (*name).to_string(),
                    alias: None,
                }),
                [name, "as", alias] if b - a == 3 => names.push(IncludedName {
                    name: (*name).to_string(),
                    alias: Some((*alias).to_string()),
                }),
                _ => {
                    let l = self.line(a);
                    let text = self.tree.text(a, b);
                    self.unparsed(l, format!("include name not understood: `{text}`"));
                }
            }
        }
        if close + 3 < hi {
            let l = self.line(close + 3);
            let what = match self.ident(close + 3) {
                // Old DSL2 passed params to a module this way; Nextflow no longer honours it.
                Some(call @ ("addParams" | "params")) => {
                    format!("include `{call}(…)` is not read")
                }
                _ => "unexpected text after the include's source".to_string(),
            };
            self.unparsed(l, what);
        }
        self.file.includes.push(Include {
            names,
            source,
            line,
        });
    }

    /// Text after a block's closing brace in the same statement (`process P { … } junk`).
    fn trailing(&mut self, close: Option<usize>, hi: usize, owner: &str) {
        if let Some(c) = close.filter(|c| c + 1 < hi) {
            let l = self.line(c + 1);
            let text = first_line(&self.tree.text(c + 1, hi));
            self.unparsed(l, format!("unexpected text after {owner}: `{text}`"));
        }
    }

    /// `NAME {` after a keyword: the name and the body's bracket indices.
    fn named_body(&self, lo: usize) -> Option<(String, usize, Option<usize>)> {
        let name = self.ident(lo + 1)?.to_string();
        self.is_op(lo + 2, "{")
            .then(|| (name, lo + 2, self.tree.close_of(lo + 2)))
    }

    fn process(&mut self, lo: usize, hi: usize) {
        let line = self.line(lo);
        let Some((name, open, close)) = self.named_body(lo) else {
            let text = first_line(&self.tree.text(lo, hi));
            self.unparsed(line, format!("process without a body: `{text}`"));
            return;
        };
        let body_end = close.unwrap_or(hi);
        let end_line = close.map_or(self.tree.last_line(), |c| self.line(c));
        if close.is_none() {
            self.unparsed(line, format!("process `{name}`: its body is not closed"));
        }
        self.trailing(close, hi, &format!("process `{name}`"));
        let mut p = Process {
            name,
            line,
            end_line,
            directives: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            when: None,
            script: None,
            stub: None,
        };
        let stmts = self.tree.statements(open + 1, body_end);
        let mut section: Option<&str> = None;
        let mut when: Option<(usize, usize)> = None;
        let mut k = 0;
        while let Some(&(a0, b)) = stmts.get(k) {
            k += 1;
            let mut a = a0;
            // Strip leading `label:`s; a section may begin on the label's own line.
            while let Some(label) = self
                .ident(a)
                .filter(|l| PROCESS_SECTIONS.contains(l) && self.is_op(a + 1, ":"))
            {
                section = Some(label);
                a = self.tree.trim(a + 2, b).0;
                if matches!(label, "script" | "shell" | "exec" | "stub") {
                    break;
                }
            }
            let (a, b) = self.tree.trim(a, b);
            let starts_string = self
                .tree
                .tok(a)
                .is_some_and(|t| matches!(t.kind, Kind::Str { .. }));
            let kind = match section {
                Some("script") => Some(ScriptKind::Script),
                Some("shell") => Some(ScriptKind::Shell),
                Some("exec") => Some(ScriptKind::Exec),
                _ if starts_string && section != Some("stub") && section != Some("when") => {
                    Some(ScriptKind::Implicit)
                }
                _ => None,
            };
            if let Some(kind) = kind.or((section == Some("stub")).then_some(ScriptKind::Script)) {
                // A script section runs to the next section label or the end of the body.
                let mut end = b;
                while let Some(&(na, nb)) = stmts.get(k) {
                    let next_is_label = self
                        .ident(na)
                        .is_some_and(|l| PROCESS_SECTIONS.contains(&l) && self.is_op(na + 1, ":"));
                    if next_is_label {
                        break;
                    }
                    end = nb;
                    k += 1;
                }
                if a >= end {
                    continue;
                }
                let block = Block {
                    line: self.line(a),
                    text: self.tree.text(a, end),
                };
                if section == Some("stub") {
                    p.stub = Some(block);
                } else {
                    p.script = Some(Script {
                        kind,
                        line: block.line,
                        text: block.text,
                    });
                }
                continue;
            }
            if a >= b {
                continue;
            }
            match section {
                None => self.directive(&mut p, a, b),
                Some("input") => p.inputs.push(self.declaration(a, b)),
                Some("output") => p.outputs.push(self.declaration(a, b)),
                Some("when") => {
                    // A guard over several statements reads as one block.
                    let start = when.map_or(a, |(wa, _)| wa);
                    when = Some((start, b));
                }
                Some(other) => {
                    let l = self.line(a);
                    self.unparsed(l, format!("process `{}`: `{other}:` is not read", p.name));
                }
            }
        }
        p.when = when.map(|(a, b)| Block {
            line: self.line(a),
            text: self.tree.text(a, b),
        });
        if p.script.is_none() {
            self.unparsed(line, format!("process `{}` has no script", p.name));
        }
        self.file.processes.push(p);
    }

    fn directive(&mut self, p: &mut Process, a: usize, b: usize) {
        let mut name = match self
            .ident(a)
            .filter(|n| !matches!(*n, "def" | "if" | "for"))
        {
            Some(n) => n.to_string(),
            None => {
                let l = self.line(a);
                let text = first_line(&self.tree.text(a, b));
                self.unparsed(
                    l,
                    format!("process `{}`: not a directive: `{text}`", p.name),
                );
                return;
            }
        };
        let mut v = a + 1;
        while self.is_op(v, ".") {
            if let Some(part) = self.ident(v + 1) {
                name = format!("{name}.{part}");
                v += 2;
            } else {
                break;
            }
        }
        // `ext.args = '…'` is written with `=` in some modules; the value follows it.
        if self.is_op(v, "=") {
            v += 1;
        }
        // `cpus(4)` is the same directive as `cpus 4`.
        let (va, vb) = match self.tree.close_of(v) {
            Some(c) if self.is_op(v, "(") && c + 1 == b => (v + 1, c),
            _ => (v, b),
        };
        let args = self
            .tree
            .split_commas(va, vb)
            .into_iter()
            .map(
                |(ea, eb)| match self.ident(ea).filter(|_| self.is_op(ea + 1, ":")) {
                    Some(key) => Arg {
                        name: Some(key.to_string()),
                        value: self.tree.value(ea + 2, eb),
                    },
                    None => Arg {
                        name: None,
                        value: self.tree.value(ea, eb),
                    },
                },
            )
            .collect();
        p.directives.push(Directive {
            name,
            value: self.tree.text(va, vb),
            line: self.line(a),
            strings: self.tree.choices(va, vb),
            args,
        });
    }

    fn declaration(&self, a: usize, b: usize) -> Declaration {
        let mut emit = None;
        let mut topic = None;
        let mut optional = false;
        // Named options sit at the declaration's top level: `…, emit: html, optional: true`.
        for (ea, eb) in self.tree.split_commas(a, b) {
            let key = self.ident(ea).filter(|_| self.is_op(ea + 1, ":"));
            let val = (ea + 2 < eb).then(|| self.tree.tok(ea + 2)).flatten();
            match (key, val) {
                (Some("emit"), Some(v)) => {
                    emit = v.ident().or_else(|| v.literal_str()).map(str::to_string);
                }
                (Some("topic"), Some(v)) => {
                    topic = v.ident().or_else(|| v.literal_str()).map(str::to_string);
                }
                (Some("optional"), Some(v)) => optional = v.is_ident("true"),
                _ => {}
            }
        }
        Declaration {
            line: self.line(a),
            text: self.tree.text(a, b),
            qualifier: self.ident(a).map(str::to_string),
            emit,
            topic,
            optional,
        }
    }

    fn workflow(&mut self, lo: usize, hi: usize) {
        let line = self.line(lo);
        let (name, open) = if self.is_op(lo + 1, "{") {
            (None, lo + 1)
        } else if let Some((n, open, _)) = self.named_body(lo) {
            (Some(n), open)
        } else {
            let text = first_line(&self.tree.text(lo, hi));
            self.unparsed(line, format!("workflow not understood: `{text}`"));
            return;
        };
        let close = self.tree.close_of(open);
        let shown = name.as_deref().unwrap_or("(entry)");
        if close.is_none() {
            self.unparsed(line, format!("workflow `{shown}`: its body is not closed"));
        }
        self.trailing(close, hi, &format!("workflow `{shown}`"));
        let body_end = close.unwrap_or(hi);
        let mut w = Workflow {
            name,
            line,
            end_line: close.map_or(self.tree.last_line(), |c| self.line(c)),
            take: Vec::new(),
            main: None,
            emits: Vec::new(),
            publish: Vec::new(),
            calls: self.calls(open + 1, body_end),
        };
        let stmts = self.tree.statements(open + 1, body_end);
        let has_labels = stmts.iter().any(|&(a, _)| self.is_label(a));
        let mut section = if has_labels { None } else { Some("main") };
        let mut main: Option<(usize, usize)> = None;
        for &(a0, b) in &stmts {
            let mut a = a0;
            while let Some(label) = self.ident(a).filter(|_| self.is_label(a)) {
                section = Some(label);
                a = self.tree.trim(a + 2, b).0;
            }
            let (a, b) = self.tree.trim(a, b);
            if a >= b {
                continue;
            }
            match section {
                // `name`, or typed `name: Channel<Path>` in the newer syntax.
                Some("take") => match self
                    .ident(a)
                    .filter(|_| b == a + 1 || self.is_op(a + 1, ":"))
                {
                    Some(n) => w.take.push(Named {
                        name: n.to_string(),
                        line: self.line(a),
                    }),
                    None => {
                        let l = self.line(a);
                        let text = first_line(&self.tree.text(a, b));
                        self.unparsed(l, format!("`take:` entry not understood: `{text}`"));
                    }
                },
                Some("main") => {
                    main = Some(main.map_or((a, b), |(ma, _)| (ma, b)));
                }
                Some(s @ ("emit" | "publish")) => {
                    let named = self
                        .ident(a)
                        .filter(|_| self.is_op(a + 1, "=") || b == a + 1);
                    let e = Emit {
                        name: named.map(str::to_string),
                        text: self.tree.text(a, b),
                        line: self.line(a),
                    };
                    if s == "emit" {
                        w.emits.push(e);
                    } else {
                        w.publish.push(e);
                    }
                }
                Some(other) => {
                    let l = self.line(a);
                    self.unparsed(l, format!("workflow `{other}:` section is not read"));
                }
                None => {
                    let l = self.line(a);
                    let text = first_line(&self.tree.text(a, b));
                    self.unparsed(
                        l,
                        format!("workflow statement before any section: `{text}`"),
                    );
                }
            }
        }
        w.main = main.map(|(a, b)| Block {
            line: self.line(a),
            text: self.tree.text(a, b),
        });
        self.file.workflows.push(w);
    }

    fn is_label(&self, a: usize) -> bool {
        self.ident(a)
            .is_some_and(|l| WORKFLOW_SECTIONS.contains(&l) && self.is_op(a + 1, ":"))
    }

    /// `NAME(` not preceded by `.` (a method) nor by `def` (a declaration).
    fn calls(&self, lo: usize, hi: usize) -> Vec<Named> {
        let mut out = Vec::new();
        for i in lo..hi {
            let Some(name) = self.ident(i) else { continue };
            let after_dot = i > 0
                && self
                    .tree
                    .tok(i - 1)
                    .is_some_and(|t| t.is_op(".") || t.is_op("?.") || t.is_op("*."));
            if self.is_op(i + 1, "(") && !after_dot && !KEYWORDS.contains(&name) {
                out.push(Named {
                    name: name.to_string(),
                    line: self.line(i),
                });
            }
        }
        out
    }

    fn def(&mut self, lo: usize, hi: usize) {
        // `def name(…) {`, or `def Type name(…) {`.
        let name_at = if self.is_op(lo + 2, "(") {
            lo + 1
        } else {
            lo + 2
        };
        match (self.ident(name_at), self.is_op(name_at + 1, "(")) {
            (Some(name), true) => {
                let name = name.to_string();
                let has_body = self
                    .tree
                    .close_of(name_at + 1)
                    .is_some_and(|c| self.is_op(c + 1, "{"));
                let line = self.line(lo);
                if !has_body {
                    self.unparsed(line, format!("function `{name}` without a body"));
                }
                self.file.functions.push(Function { name, line });
            }
            _ => {
                let line = self.line(lo);
                let text = first_line(&self.tree.text(lo, hi));
                self.file.others.push(Other { line, text });
            }
        }
    }

    fn param(&mut self, lo: usize, hi: usize) {
        let line = self.line(lo);
        let mut name = String::new();
        let mut i = lo + 1;
        while self.is_op(i, ".") {
            match self.ident(i + 1) {
                Some(part) => {
                    if !name.is_empty() {
                        name.push('.');
                    }
                    name.push_str(part);
                    i += 2;
                }
                None => break,
            }
        }
        if name.is_empty() || !self.is_op(i, "=") {
            let text = first_line(&self.tree.text(lo, hi));
            self.unparsed(line, format!("params statement not understood: `{text}`"));
            return;
        }
        let value = self.tree.value(i + 1, hi);
        self.file.params.push(Param {
            name,
            value,
            line,
            type_name: None,
        });
    }

    /// The newer `params { name: Type = default }` block of a script.
    fn params_block(&mut self, lo: usize, hi: usize) {
        let open = lo + 1;
        let close = self.tree.close_of(open);
        if close.is_none() {
            let line = self.line(lo);
            self.unparsed(line, "`params` block: its body is not closed");
        }
        self.trailing(close, hi, "the `params` block");
        for (a, b) in self.tree.statements(open + 1, close.unwrap_or(hi)) {
            let line = self.line(a);
            let Some(name) = self.ident(a) else {
                let text = first_line(&self.tree.text(a, b));
                self.unparsed(line, format!("`params` entry not understood: `{text}`"));
                continue;
            };
            let eq = (a + 1..b).find(|&j| self.is_op(j, "="));
            let type_name = self
                .is_op(a + 1, ":")
                .then(|| self.tree.text(a + 2, eq.unwrap_or(b)))
                .filter(|t| !t.is_empty());
            if eq.is_none() && type_name.is_none() {
                let text = first_line(&self.tree.text(a, b));
                self.unparsed(line, format!("`params` entry not understood: `{text}`"));
                continue;
            }
            let value = match eq {
                Some(e) => self.tree.value(e + 1, b),
                None => Value::Null,
            };
            self.file.params.push(Param {
                name: name.to_string(),
                value,
                line,
                type_name,
            });
        }
    }
}

/// Words followed by `(` that are not calls.
const KEYWORDS: &[&str] = &[
    "if", "for", "while", "switch", "catch", "return", "def", "new", "assert", "throw", "else",
];
