//! The static reader of `nextflow.config` and the files it includes: scopes, dotted keys,
//! process selectors, profiles and `includeConfig`. Nothing is evaluated except the one form
//! the nf-core template needs — a ternary on a `params` flag choosing which file to include —
//! and only when the flag's value is a literal already read.

use std::path::Path;

use super::ParseError;
use super::lex::{Kind, MAX_PROBLEMS, lex};
use super::model::{
    Config, ConfigDef, ConfigInclude, ProcessSelector, Profile, SelectorBlock, SelectorKind,
    Setting, Skipped, Unparsed, Value,
};
use super::runtime::describe_runtime;
use super::source::{SourceRoot, normalise_relative};
use super::tree::{Tree, first_line};

/// How deep scopes may nest; no real config is near it, and it bounds the reader's stack.
const MAX_SCOPE_DEPTH: usize = 64;

/// How deep `includeConfig` may nest before the reader stops following it.
const MAX_INCLUDE_DEPTH: usize = 16;

/// nf-test's configuration file. It shares the `.config` suffix and Groovy look but is nf-test's
/// own format (`config { testsDir …; plugins { load … } }`), read by nf-test, not Nextflow.
pub const NFTEST_CONFIG: &str = "nf-test.config";

/// Why an `nf-test.config` is not read as a Nextflow config.
pub(crate) const NFTEST_WHY: &str = "nf-test's own configuration, read by nf-test, not by Nextflow";

/// Whether `path` names nf-test's configuration rather than a Nextflow one: its file name is
/// `nf-test.config`, wherever it sits.
pub fn is_nftest_config(path: &str) -> bool {
    Path::new(path)
        .file_name()
        .is_some_and(|name| name == NFTEST_CONFIG)
}

/// Reads one config text on its own; `includeConfig` statements are recorded, not followed.
/// An `nf-test.config` (see [`is_nftest_config`]) is not read: the result lists it in
/// `skipped` and holds nothing else.
pub fn parse_config(path: &str, src: &str) -> Config {
    let mut cfg = Config::default();
    let mut reader = Reader {
        cfg: &mut cfg,
        root: None,
        stack: Vec::new(),
        full: false,
    };
    reader.file(path, src, &Scope::default());
    cfg
}

/// Reads `rel` (normally `nextflow.config`) under `root` and follows its relative includes.
pub fn load_config(root: &Path, rel: &str) -> Result<Config, ParseError> {
    let root = SourceRoot::new(root)?;
    let src = root.read(rel)?;
    let mut cfg = Config::default();
    let mut reader = Reader {
        cfg: &mut cfg,
        root: Some(&root),
        stack: vec![rel.to_string()],
        full: false,
    };
    reader.file(rel, &src, &Scope::default());
    Ok(cfg)
}

/// Where a statement sits: its scope keys, profile and selector.
#[derive(Clone, Default)]
struct Scope {
    keys: Vec<String>,
    profile: Option<String>,
    selector: Option<ProcessSelector>,
}

impl Scope {
    fn key(&self, tail: &str) -> String {
        let mut parts = self.keys.clone();
        parts.push(tail.to_string());
        parts.join(".")
    }

    fn with_key(&self, key: String) -> Scope {
        let mut s = self.clone();
        s.keys.push(key);
        s
    }
}

struct Reader<'c, 'r> {
    cfg: &'c mut Config,
    root: Option<&'r SourceRoot>,
    /// The include chain, to stop cycles.
    stack: Vec<String>,
    /// Whether the unparsed list is full (and says so in its last entry).
    full: bool,
}

impl Reader<'_, '_> {
    fn file(&mut self, path: &str, src: &str, scope: &Scope) {
        if is_nftest_config(path) {
            // Its settings (`testsDir`, `ignore`, `plugins { load … }`) mean nothing to
            // Nextflow; read as a Nextflow config they would be wrong settings and findings.
            self.cfg.skipped.push(Skipped {
                file: path.to_string(),
                why: NFTEST_WHY.to_string(),
            });
            return;
        }
        self.cfg.files.push(path.to_string());
        let lexed = lex(src);
        let tree = Tree::new(src, lexed.tokens);
        for p in lexed.problems.iter().chain(tree.problems.iter()) {
            self.unparsed(path, p.line, p.what.clone());
        }
        self.block(path, &tree, 0, tree.toks.len(), scope);
    }

    fn unparsed(&mut self, file: &str, line: u32, what: String) {
        let full = self.cfg.unparsed.len() >= MAX_PROBLEMS;
        let what = if full && !self.full {
            self.full = true;
            format!(
                "more than {MAX_PROBLEMS} constructs not understood; the rest from here are not listed"
            )
        } else if full {
            return;
        } else {
            what
        };
        self.cfg.unparsed.push(Unparsed {
            file: file.to_string(),
            line,
            what,
        });
    }

    fn block(&mut self, path: &str, tree: &Tree, lo: usize, hi: usize, scope: &Scope) {
        if scope.keys.len() > MAX_SCOPE_DEPTH {
            let line = tree.tok(lo).map_or(1, |t| t.line);
            let what = format!("scopes nested deeper than {MAX_SCOPE_DEPTH}; not read");
            self.unparsed(path, line, what);
            return;
        }
        for (a, b) in tree.statements(lo, hi) {
            self.statement(path, tree, a, b, scope);
        }
    }

    fn statement(&mut self, path: &str, tree: &Tree, a: usize, b: usize, scope: &Scope) {
        let line = tree.tok(a).map_or(1, |t| t.line);
        let ident = |i: usize| tree.tok(i).and_then(|t| t.ident());
        let is_op = |i: usize, op: &str| tree.tok(i).is_some_and(|t| t.is_op(op));

        if ident(a) == Some("includeConfig") {
            self.include(path, tree, a, b, scope);
            return;
        }
        // Older nf-core templates wrap the custom-config include in `try { } catch (…) { }`:
        // the `try` body is read; what the `catch` would do is not.
        if ident(a) == Some("try") && is_op(a + 1, "{") {
            self.body(path, tree, a + 1, b, scope);
            return;
        }
        if ident(a) == Some("catch") && is_op(a + 1, "(") {
            // The `catch` of a `try` whose `}` ended the line before: only reports errors.
            return;
        }
        // `def`: a variable the config's own values use, or a helper function such as the old
        // nf-core `check_max`. Both run when Nextflow reads the config; recorded, not run.
        if ident(a) == Some("def") {
            self.def(path, tree, a, b, scope);
            return;
        }
        // A process selector: `withName: FASTQC {`, `withLabel:'big' {`.
        if let Some(kind) = match ident(a) {
            Some("withName") => Some(SelectorKind::WithName),
            Some("withLabel") => Some(SelectorKind::WithLabel),
            _ => None,
        } {
            let pattern = tree.tok(a + 2).and_then(|t| match &t.kind {
                Kind::Ident(s) => Some(s.clone()),
                Kind::Str {
                    literal: Some(s), ..
                } => Some(s.clone()),
                _ => None,
            });
            if let (true, Some(pattern), true) = (is_op(a + 1, ":"), pattern, is_op(a + 3, "{")) {
                let selector = ProcessSelector { kind, pattern };
                self.cfg.selectors.push(SelectorBlock {
                    selector: selector.clone(),
                    file: path.to_string(),
                    line,
                    profile: scope.profile.clone(),
                });
                let mut inner = scope.with_key(format!("{}:{}", kind.keyword(), selector.pattern));
                inner.selector = Some(selector);
                self.body(path, tree, a + 3, b, &inner);
                return;
            }
        }
        // A dotted key: `a.b.c`; a part may be quoted (`'GRCh37' {`, `'GATK.GRCh37' {` in
        // every nf-core `conf/igenomes.config`).
        let mut key = Vec::new();
        let mut i = a;
        while let Some(part) = key_part(tree, i) {
            key.push(part);
            if is_op(i + 1, ".") {
                i += 2;
            } else {
                i += 1;
                break;
            }
        }
        if key.is_empty() || i >= b {
            let text = first_line(&tree.text(a, b));
            self.unparsed(
                path,
                line,
                format!("config statement not understood: `{text}`"),
            );
            return;
        }
        let key = key.join(".");
        if is_op(i, "=") {
            let value = tree.value(i + 1, b);
            self.cfg.settings.push(Setting {
                key: scope.key(&key),
                value,
                file: path.to_string(),
                line,
                profile: scope.profile.clone(),
                selector: scope.selector.clone(),
            });
        } else if is_op(i, "{") && tree.close_of(i).is_some_and(|c| c + 1 == b) {
            if key == "profiles" && scope.keys.is_empty() && scope.profile.is_none() {
                self.profiles(path, tree, i, b);
            } else {
                self.body(path, tree, i, b, &scope.with_key(key));
            }
        } else if matches!(
            tree.tok(i).map(|t| &t.kind),
            Some(Kind::Str { .. } | Kind::Number)
        ) || ident(i).is_some_and(|w| matches!(w, "true" | "false" | "null"))
        {
            // A call without `=`, such as `id 'nf-schema@2.7.3'` in `plugins { }`.
            let value = tree.value(i, b);
            self.cfg.settings.push(Setting {
                key: scope.key(&key),
                value,
                file: path.to_string(),
                line,
                profile: scope.profile.clone(),
                selector: scope.selector.clone(),
            });
        } else {
            let text = first_line(&tree.text(a, b));
            self.unparsed(
                path,
                line,
                format!("config statement not understood: `{text}`"),
            );
        }
    }

    /// `def name = value` or `def name(args) { … }`.
    fn def(&mut self, path: &str, tree: &Tree, a: usize, b: usize, scope: &Scope) {
        let line = tree.tok(a).map_or(1, |t| t.line);
        let name = tree.tok(a + 1).and_then(|t| t.ident());
        let next = tree.tok(a + 2);
        let def = match (name, next) {
            (Some(name), Some(t)) if t.is_op("=") => {
                let (va, vb) = tree.trim(a + 3, b);
                let value = tree.value(va, vb);
                let what = match &value {
                    Value::Expr(text) => describe_runtime(text),
                    _ => "a literal value".to_string(),
                };
                Some(ConfigDef {
                    name: name.to_string(),
                    file: path.to_string(),
                    line,
                    profile: scope.profile.clone(),
                    value: Some(value),
                    what,
                })
            }
            (Some(name), Some(t)) if t.is_op("(") => {
                let params = tree
                    .close_of(a + 2)
                    .map(|c| tree.text(a + 3, c))
                    .unwrap_or_default();
                Some(ConfigDef {
                    name: name.to_string(),
                    file: path.to_string(),
                    line,
                    profile: scope.profile.clone(),
                    value: None,
                    what: format!(
                        "function `{name}({})`, run only when a closure calls it at run time",
                        first_line(&params)
                    ),
                })
            }
            _ => None,
        };
        match def {
            Some(def) => self.cfg.defs.push(def),
            None => {
                let text = first_line(&tree.text(a, b));
                self.unparsed(path, line, format!("`def` not understood: `{text}`"));
            }
        }
    }

    /// The statements inside the block opened at `open`.
    fn body(&mut self, path: &str, tree: &Tree, open: usize, hi: usize, scope: &Scope) {
        let close = tree.close_of(open).unwrap_or(hi);
        self.block(path, tree, open + 1, close, scope);
    }

    fn profiles(&mut self, path: &str, tree: &Tree, open: usize, hi: usize) {
        let close = tree.close_of(open).unwrap_or(hi);
        for (a, b) in tree.statements(open + 1, close) {
            let line = tree.tok(a).map_or(1, |t| t.line);
            let name = tree.tok(a).and_then(|t| match &t.kind {
                Kind::Ident(s) => Some(s.clone()),
                Kind::Str {
                    literal: Some(s), ..
                } => Some(s.clone()),
                _ => None,
            });
            let body = tree.tok(a + 1).filter(|t| t.is_op("{")).map(|_| a + 1);
            match (name, body) {
                (Some(name), Some(open)) if tree.close_of(open).is_some_and(|c| c + 1 == b) => {
                    self.cfg.profiles.push(Profile {
                        name: name.clone(),
                        file: path.to_string(),
                        line,
                    });
                    let scope = Scope {
                        profile: Some(name),
                        ..Scope::default()
                    };
                    self.body(path, tree, open, b, &scope);
                }
                _ => {
                    let text = first_line(&tree.text(a, b));
                    self.unparsed(path, line, format!("profile not understood: `{text}`"));
                }
            }
        }
    }

    fn include(&mut self, path: &str, tree: &Tree, a: usize, b: usize, scope: &Scope) {
        let line = tree.tok(a).map_or(1, |t| t.line);
        let (ea, eb) = tree.trim(a + 1, b);
        let mut inc = ConfigInclude {
            file: path.to_string(),
            line,
            expr: tree.text(ea, eb),
            candidates: tree.choices(ea, eb),
            loaded: None,
            note: None,
            profile: scope.profile.clone(),
        };
        let chosen = self.choose(tree, ea, eb);
        if let Err(note) = &chosen {
            inc.note = Some(note.clone());
        }
        // Recorded before it is followed, so includes list in reading order.
        let at = self.cfg.includes.len();
        self.cfg.includes.push(inc);
        if let Ok(target) = chosen {
            let (loaded, note) = self.follow(path, target, scope);
            if let Some(inc) = self.cfg.includes.get_mut(at) {
                inc.loaded = loaded;
                inc.note = note;
            }
        }
    }

    /// The one path the include argument names, evaluating a `params` flag ternary.
    fn choose(&self, tree: &Tree, a: usize, b: usize) -> Result<String, String> {
        let lit = |lo: usize, hi: usize| match tree.value(lo, hi) {
            Value::Str(s) => Ok(s),
            _ => Err(format!(
                "path `{}` is not a literal; not read",
                first_line(&tree.text(lo, hi))
            )),
        };
        let Some(q) = (a..b).find(|&i| tree.tok(i).is_some_and(|t| t.is_op("?"))) else {
            return lit(a, b);
        };
        let colon = (q + 1..b)
            .find(|&i| tree.tok(i).is_some_and(|t| t.is_op(":")))
            .ok_or_else(|| "ternary without `:`; not read".to_string())?;
        let (neg, mut c) = match tree.tok(a) {
            Some(t) if t.is_op("!") => (true, a + 1),
            _ => (false, a),
        };
        let is_params = tree.tok(c).is_some_and(|t| t.is_ident("params"))
            && tree.tok(c + 1).is_some_and(|t| t.is_op("."));
        let flag = tree.tok(c + 2).and_then(|t| t.ident());
        c += 3;
        let cond_text = first_line(&tree.text(a, q));
        let not_evaluated =
            || format!("condition `{cond_text}` is not evaluated statically; not read");
        let (true, Some(flag), true) = (is_params, flag, c == q) else {
            return Err(not_evaluated());
        };
        let value = self
            .cfg
            .get(&format!("params.{flag}"))
            .map(|s| &s.value)
            .ok_or_else(not_evaluated)?;
        let truth = match value {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Str(s) => !s.is_empty(),
            Value::Number(n) => !n.trim_start_matches('-').trim_start_matches('0').is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::Expr(_) => return Err(not_evaluated()),
        };
        if truth != neg {
            lit(q + 1, colon)
        } else {
            lit(colon + 1, b)
        }
    }

    /// Reads the included file; what was loaded, or why not.
    fn follow(
        &mut self,
        from: &str,
        target: String,
        scope: &Scope,
    ) -> (Option<String>, Option<String>) {
        let not = |note: String| (None, Some(note));
        if target == "/dev/null" {
            return not("includes /dev/null; nothing to read".to_string());
        }
        if target.contains("://") || target.starts_with('/') {
            return not(format!("`{target}` is not a relative path; not read"));
        }
        let Some(root) = self.root else {
            return not("includes are not followed when reading a single text".to_string());
        };
        let base = Path::new(from).parent().unwrap_or(Path::new(""));
        let Some(rel) = normalise_relative(&base.join(&target)) else {
            return not(format!("`{target}` is outside the pipeline; not read"));
        };
        if self.stack.contains(&rel) {
            return not(format!("`{rel}` is already being read (an include cycle)"));
        }
        if self.stack.len() >= MAX_INCLUDE_DEPTH {
            return not(format!(
                "includes nest deeper than {MAX_INCLUDE_DEPTH}; not read"
            ));
        }
        match root.read(&rel) {
            Ok(src) => {
                self.stack.push(rel.clone());
                // An included file's statements sit where the include does (in a profile, say).
                self.file(&rel, &src, scope);
                self.stack.pop();
                (Some(rel), None)
            }
            Err(e) => not(e.to_string()),
        }
    }
}

/// One part of a dotted config key: a name, or a quoted literal name. A quoted name that is
/// not a plain name keeps its quotes, as `nextflow config -flat` prints it, so the dots of
/// `'GATK.GRCh37'` are not read as scope separators.
fn key_part(tree: &Tree, i: usize) -> Option<String> {
    let t = tree.tok(i)?;
    match &t.kind {
        Kind::Ident(s) => Some(s.clone()),
        Kind::Str {
            literal: Some(s), ..
        } if is_plain_name(s) => Some(s.clone()),
        Kind::Str {
            literal: Some(s), ..
        } => Some(format!(
            "'{}'",
            s.replace('\\', "\\\\").replace('\'', "\\'")
        )),
        _ => None,
    }
}

/// A Groovy identifier: a letter, `_` or `$`, then those or digits.
fn is_plain_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}
