//! Reading rule files: TOML, walked by hand so that every error names the exact key.
//!
//! ```toml
//! [[rule]]
//! id = "ACME-NO-SCRATCH"
//! title = "No paths on the scratch file system"
//! severity = "warning"            # error | warning | info
//! description = "..."
//! fixable = false                 # optional; if given, must agree with the check
//! doc = "https://…"               # optional: where the practice is documented
//! [rule.check]
//! kind = "forbidden_pattern"      # or builtin, required_file, required_config_key, required_lines
//! files = ["**/*.nf", "**/*.config"]
//! pattern = '/scratch/'
//! message = "a path on /scratch"
//! ```
//!
//! `required_file` may add `when_any = [globs]` (required only where one matches), and
//! `required_lines` `when = { "LINE" = [globs] }` (that line required only where one matches).

use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use regex::Regex;
use toml::{Table, Value};

use super::error::RuleError;
use super::rule::{BuiltinCheck, Check, FileSet, GenericCheck, Rule, Severity};

/// Files larger than this are not rule files (and are refused rather than read whole).
const MAX_RULE_FILE: u64 = 1 << 20;

/// The `*.toml` files of `dir` as (path, text), sorted by name. A missing directory is empty.
pub(crate) fn read_rule_dir(dir: &Path) -> Result<Vec<(String, String)>, RuleError> {
    let io = |path: &Path, source| RuleError::Io {
        path: path.display().to_string(),
        source,
    };
    // Listed and read beneath `dir`: a rule file symlinked to a secret would otherwise have
    // its text echoed in a syntax error.
    let entries = match crate::files::list_beneath(dir, Path::new("")) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let is_toml = Path::new(&entry.name)
            .extension()
            .is_some_and(|e| e == "toml");
        if !is_toml || entry.stat.kind == crate::files::Kind::Dir {
            continue;
        }
        let path = entry.path;
        let name = path.display().to_string();
        let bytes = match crate::files::read_beneath(dir, Path::new(&entry.name), MAX_RULE_FILE) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                return Err(RuleError::Syntax {
                    file: name,
                    line: 1,
                    message: format!(
                        "file is more than the {MAX_RULE_FILE} bytes a rules file may have"
                    ),
                });
            }
            // A name that is not a regular file (a FIFO, a dangling link) is not a rule file.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::InvalidInput | std::io::ErrorKind::NotFound
                ) =>
            {
                continue;
            }
            Err(e) => return Err(io(&path, e)),
        };
        let text = String::from_utf8(bytes).map_err(|_| RuleError::Syntax {
            file: name.clone(),
            line: 1,
            message: "not UTF-8 text".to_string(),
        })?;
        out.push((name, text));
    }
    Ok(out)
}

/// Parses one rule file's text. `file` names it in errors.
pub(crate) fn parse_rules(file: &str, text: &str) -> Result<Vec<Rule>, RuleError> {
    let table: Table = text
        .parse()
        .map_err(|e: toml::de::Error| RuleError::Syntax {
            file: file.to_string(),
            line: e.span().map_or(1, |s| line_of(text, s.start)),
            message: e
                .message()
                .lines()
                .next()
                .unwrap_or("invalid TOML")
                .to_string(),
        })?;
    let mut top = Fields::new(file, String::new(), &table);
    let rules = match top.take("rule") {
        None => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(other) => return Err(top.wrong("rule", "an array of tables ([[rule]])", other)),
    };
    top.finish()?;
    let mut out = Vec::with_capacity(rules.len());
    for (i, item) in rules.iter().enumerate() {
        let key = format!("rule[{i}]");
        let Value::Table(t) = item else {
            return Err(key_error(file, &key, "expected a table"));
        };
        out.push(parse_rule(file, &key, t)?);
    }
    Ok(out)
}

fn parse_rule(file: &str, key: &str, t: &Table) -> Result<Rule, RuleError> {
    let mut f = Fields::new(file, key.to_string(), t);
    let id = f.string("id")?;
    if !valid_id(&id) {
        return Err(f.problem(
            "id",
            format!(
                "`{id}` is not a rule id (upper-case words joined by `-`, e.g. `ACME-NO-SCRATCH`)"
            ),
        ));
    }
    let title = f.string("title")?;
    let severity_word = f.string("severity")?;
    let severity = Severity::from_word(&severity_word).ok_or_else(|| {
        f.problem(
            "severity",
            format!("expected one of `error`, `warning`, `info`, found `{severity_word}`"),
        )
    })?;
    let description = f.string("description")?;
    let fixable = f.opt_bool("fixable")?;
    let doc = f.opt_string("doc")?;
    if let Some(url) = &doc
        && !(url.starts_with("https://") || url.starts_with("http://"))
    {
        return Err(f.problem("doc", format!("`{url}` is not an http(s) link")));
    }
    let check = match f.take("check") {
        Some(Value::Table(c)) => parse_check(file, &format!("{key}.check"), c)?,
        Some(other) => return Err(f.wrong("check", "a table", other)),
        None => return Err(f.problem("check", "missing".to_string())),
    };
    f.finish()?;
    let can_fix = check.can_fix();
    if let Some(stated) = fixable
        && stated != can_fix
    {
        let why = if can_fix {
            "the check fixes its findings, so it cannot be `false`"
        } else {
            "the check cannot fix its findings (a data check needs `replacement`, `create_with` or `kind = \"required_lines\"`)"
        };
        return Err(key_error(file, &format!("{key}.fixable"), why));
    }
    Ok(Rule {
        id,
        title,
        severity,
        description,
        fixable: can_fix,
        doc,
        check,
        source: file.to_string(),
    })
}

fn parse_check(file: &str, key: &str, t: &Table) -> Result<Check, RuleError> {
    let mut f = Fields::new(file, key.to_string(), t);
    let kind = f.string("kind")?;
    let check = match kind.as_str() {
        "builtin" => {
            let name = f.string("name")?;
            let check = BuiltinCheck::from_name(&name).ok_or_else(|| {
                f.problem(
                    "name",
                    format!(
                        "no built-in check `{name}` (known: {})",
                        BuiltinCheck::names().join(", ")
                    ),
                )
            })?;
            Check::Builtin(check)
        }
        "forbidden_pattern" => {
            let include = f.string_list("files")?;
            let exclude = f.opt_string_list("exclude")?.unwrap_or_default();
            let include_set = f.globs("files", &include)?;
            let exclude_set = f.globs("exclude", &exclude)?;
            let source = f.string("pattern")?;
            // Multi-line mode so `^` and `$` mean a line, which is what a finding points at.
            let pattern = Regex::new(&format!("(?m){source}")).map_err(|e| {
                let first = e.to_string();
                let last = first.lines().last().unwrap_or("invalid").trim().to_string();
                f.problem("pattern", format!("invalid regular expression: {last}"))
            })?;
            Check::Generic(Box::new(GenericCheck::ForbiddenPattern {
                files: FileSet {
                    include,
                    exclude,
                    include_set,
                    exclude_set,
                },
                pattern,
                message: f.string("message")?,
                replacement: f.opt_string("replacement")?,
            }))
        }
        "required_file" => {
            let any_of = f.string_list("any_of")?;
            let matcher = f.globs("any_of", &any_of)?;
            let create_with = f.opt_string("create_with")?;
            if create_with.is_some() && any_of.first().is_some_and(|p| has_glob_chars(p)) {
                return Err(f.problem(
                    "create_with",
                    "the first of `any_of` is a glob, so there is no one file to create"
                        .to_string(),
                ));
            }
            let when_any = match f.opt_string_list("when_any")? {
                Some(globs) if !globs.is_empty() => Some(f.globs("when_any", &globs)?),
                Some(_) => {
                    return Err(f.problem("when_any", "must list at least one glob".to_string()));
                }
                None => None,
            };
            Check::Generic(Box::new(GenericCheck::RequiredFile {
                any_of,
                matcher,
                message: f.string("message")?,
                create_with,
                when_any,
            }))
        }
        "required_config_key" => Check::Generic(Box::new(GenericCheck::RequiredConfigKey {
            file: f
                .opt_string("file")?
                .unwrap_or_else(|| "nextflow.config".to_string()),
            keys: f.string_list("keys")?,
        })),
        "required_lines" => {
            let file = f.string("file")?;
            let file = f.relative("file", file)?;
            let lines = f.string_list("lines")?;
            let when = f.line_conditions("when", &lines)?;
            Check::Generic(Box::new(GenericCheck::RequiredLines { file, lines, when }))
        }
        other => {
            return Err(f.problem(
                "kind",
                format!(
                    "expected one of `builtin`, `forbidden_pattern`, `required_file`, `required_config_key`, `required_lines`, found `{other}`"
                ),
            ));
        }
    };
    f.finish()?;
    Ok(check)
}

fn valid_id(id: &str) -> bool {
    let mut parts = id.split('-');
    let first_ok = parts
        .next()
        .is_some_and(|p| p.starts_with(|c: char| c.is_ascii_uppercase()));
    first_ok
        && id.contains('-')
        && id.len() <= 64
        && id.split('-').all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        })
}

fn has_glob_chars(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(1, |t| t.matches('\n').count() + 1)
}

fn key_error(file: &str, key: &str, problem: &str) -> RuleError {
    RuleError::Key {
        file: file.to_string(),
        key: key.to_string(),
        problem: problem.to_string(),
    }
}

/// The keys of one table, taken one by one; `finish` reports whatever is left as unknown.
struct Fields<'a> {
    file: &'a str,
    prefix: String,
    table: &'a Table,
    taken: Vec<&'a str>,
}

impl<'a> Fields<'a> {
    fn new(file: &'a str, prefix: String, table: &'a Table) -> Fields<'a> {
        Fields {
            file,
            prefix,
            table,
            taken: Vec::new(),
        }
    }

    fn key(&self, name: &str) -> String {
        if self.prefix.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.prefix)
        }
    }

    fn problem(&self, name: &str, problem: String) -> RuleError {
        RuleError::Key {
            file: self.file.to_string(),
            key: self.key(name),
            problem,
        }
    }

    fn wrong(&self, name: &str, expected: &str, found: &Value) -> RuleError {
        self.problem(
            name,
            format!("expected {expected}, found {}", found.type_str()),
        )
    }

    fn take(&mut self, name: &'a str) -> Option<&'a Value> {
        self.taken.push(name);
        self.table.get(name)
    }

    fn opt_string(&mut self, name: &'a str) -> Result<Option<String>, RuleError> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.wrong(name, "a string", other)),
        }
    }

    fn string(&mut self, name: &'a str) -> Result<String, RuleError> {
        match self.opt_string(name)? {
            Some(s) if !s.trim().is_empty() => Ok(s),
            Some(_) => Err(self.problem(name, "must not be empty".to_string())),
            None => Err(self.problem(name, "missing".to_string())),
        }
    }

    fn opt_bool(&mut self, name: &'a str) -> Result<Option<bool>, RuleError> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(*b)),
            Some(other) => Err(self.wrong(name, "true or false", other)),
        }
    }

    fn opt_string_list(&mut self, name: &'a str) -> Result<Option<Vec<String>>, RuleError> {
        let Some(value) = self.take(name) else {
            return Ok(None);
        };
        let Value::Array(items) = value else {
            return Err(self.wrong(name, "an array of strings", value));
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) if !s.is_empty() => out.push(s.clone()),
                Value::String(_) => {
                    return Err(
                        self.problem(&format!("{name}[{i}]"), "must not be empty".to_string())
                    );
                }
                other => return Err(self.wrong(&format!("{name}[{i}]"), "a string", other)),
            }
        }
        Ok(Some(out))
    }

    fn string_list(&mut self, name: &'a str) -> Result<Vec<String>, RuleError> {
        match self.opt_string_list(name)? {
            Some(list) if !list.is_empty() => Ok(list),
            Some(_) => Err(self.problem(name, "must list at least one entry".to_string())),
            None => Err(self.problem(name, "missing".to_string())),
        }
    }

    /// `when = { "LINE" = ["glob", …] }`: for each listed line (one of `lines`), the globs that
    /// make it required.
    fn line_conditions(
        &mut self,
        name: &'a str,
        lines: &[String],
    ) -> Result<Vec<(String, GlobSet)>, RuleError> {
        let Some(value) = self.take(name) else {
            return Ok(Vec::new());
        };
        let Value::Table(table) = value else {
            return Err(self.wrong(name, "a table of line = [globs]", value));
        };
        let mut out = Vec::with_capacity(table.len());
        for (line, globs) in table {
            let key = format!("{name}.{line}");
            if !lines.contains(line) {
                return Err(self.problem(&key, "is not one of `lines`".to_string()));
            }
            let Value::Array(items) = globs else {
                return Err(self.wrong(&key, "an array of globs", globs));
            };
            let mut list = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Value::String(g) if !g.is_empty() => list.push(g.clone()),
                    other => return Err(self.wrong(&key, "an array of globs", other)),
                }
            }
            if list.is_empty() {
                return Err(self.problem(&key, "must list at least one glob".to_string()));
            }
            out.push((line.clone(), self.globs(&key, &list)?));
        }
        Ok(out)
    }

    /// A file path the check reads and may write: relative, inside the pipeline, not in `.git`.
    fn relative(&self, name: &str, path: String) -> Result<String, RuleError> {
        let bad = path.starts_with('/')
            || path.contains(['\\', '\0'])
            || path
                .split('/')
                .any(|p| p.is_empty() || p == "." || p == ".." || p == ".git");
        if bad {
            return Err(self.problem(name, format!("`{path}` is not a path inside the pipeline")));
        }
        Ok(path)
    }

    fn globs(&self, name: &str, globs: &[String]) -> Result<GlobSet, RuleError> {
        let mut builder = GlobSetBuilder::new();
        for (i, g) in globs.iter().enumerate() {
            if g.starts_with('/') || g.split('/').any(|part| part == ".." || part == ".git") {
                return Err(self.problem(
                    &format!("{name}[{i}]"),
                    format!("`{g}` is not inside the pipeline (globs are relative to it, without `..` or `.git`)"),
                ));
            }
            let glob = GlobBuilder::new(g)
                .literal_separator(true)
                .build()
                .map_err(|e| {
                    self.problem(
                        &format!("{name}[{i}]"),
                        format!("invalid glob: {}", e.kind()),
                    )
                })?;
            builder.add(glob);
        }
        builder
            .build()
            .map_err(|e| self.problem(name, format!("invalid globs: {e}")))
    }

    fn finish(&self) -> Result<(), RuleError> {
        for key in self.table.keys() {
            if !self.taken.contains(&key.as_str()) {
                return Err(self.problem(key, "unknown key".to_string()));
            }
        }
        Ok(())
    }
}
