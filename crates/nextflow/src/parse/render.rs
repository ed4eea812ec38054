//! The model as lines a model or a person can read, one construct a line, each starting
//! `FILE:LINE:` as compilers do. User text is kept on its line (line ends and control
//! characters are escaped), so a value cannot forge a line of its own.

use std::fmt;

use super::model::{Unparsed, Value, key_parts};
use super::pipeline::Pipeline;

/// Values longer than this are cut in the outline; the model keeps them whole.
const MAX_VALUE_CHARS: usize = 120;

impl fmt::Display for Value {
    /// Groovy-like: `null`, `true`, `'text'`, `[a, b]`, `[k: v]`, or the source text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Number(n) => f.write_str(n),
            Value::Str(s) => write!(f, "'{}'", s.replace('\'', "\\'")),
            Value::List(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Value::Map(entries) if entries.is_empty() => f.write_str("[:]"),
            Value::Map(entries) => {
                f.write_str("[")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_str("]")
            }
            Value::Expr(text) => f.write_str(text),
        }
    }
}

impl fmt::Display for Unparsed {
    /// `FILE:LINE: not understood: WHAT`, the compiler-style line the tools show.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: not understood: {}",
            one_line(&self.file),
            self.line,
            one_line(&self.what)
        )
    }
}

/// One line per entry, in the order given, each as `FILE:LINE: not understood: WHAT`.
pub fn render_unparsed<'a>(entries: impl IntoIterator<Item = &'a Unparsed>) -> String {
    entries.into_iter().map(|u| format!("{u}\n")).collect()
}

/// The pipeline's structure, one construct a line, deterministic: for each `.nf` file its
/// includes (with the file each resolves to), workflows and processes; then the config's
/// params, includes, profiles, `def`s (named for what they are) and files deliberately not
/// read; then everything not understood.
///
/// ```text
/// modules/nf-core/fastqc/main.nf:1: process FASTQC label process_low container 'a', 'b' inputs 1 emits html, zip
/// nextflow.config:14: param input = null
/// ```
pub fn render_outline(p: &Pipeline) -> String {
    let mut out = Vec::new();
    for f in &p.files {
        let file = one_line(&f.path);
        for inc in &f.includes {
            let names: Vec<String> = inc
                .names
                .iter()
                .map(|n| match &n.alias {
                    Some(a) => format!("{} as {a}", n.name),
                    None => n.name.clone(),
                })
                .collect();
            let target = p
                .resolve_include(f, inc)
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            out.push(format!(
                "{file}:{}: include {} from {}{target}",
                inc.line,
                names.join(", "),
                inc.source
            ));
        }
        for w in &f.workflows {
            let mut line = format!(
                "{file}:{}: workflow {}",
                w.line,
                w.name.as_deref().unwrap_or("(entry)")
            );
            push_list(&mut line, "take", w.take.iter().map(|t| t.name.clone()));
            push_list(
                &mut line,
                "emit",
                w.emits.iter().filter_map(|e| e.name.clone()),
            );
            let mut calls: Vec<String> = Vec::new();
            for c in &w.calls {
                if !calls.contains(&c.name) {
                    calls.push(c.name.clone());
                }
            }
            push_list(&mut line, "calls", calls.into_iter());
            out.push(line);
        }
        for pr in &f.processes {
            let mut line = format!("{file}:{}: process {}", pr.line, pr.name);
            push_list(
                &mut line,
                "label",
                pr.labels().into_iter().map(str::to_string),
            );
            match pr.directive("container") {
                Some(d) if d.strings.is_empty() => {
                    line.push_str(&format!(" container {}", cut(&d.value)));
                }
                Some(d) => push_list(
                    &mut line,
                    "container",
                    d.strings.iter().map(|s| format!("'{s}'")),
                ),
                None => line.push_str(" container (none)"),
            }
            line.push_str(&format!(" inputs {}", pr.inputs.len()));
            push_list(
                &mut line,
                "emits",
                pr.emits().into_iter().map(str::to_string),
            );
            out.push(line);
        }
    }
    for s in p.params() {
        let name = s.key.strip_prefix("params.").unwrap_or(&s.key);
        out.push(format!(
            "{}:{}: param {name} = {}",
            s.file,
            s.line,
            cut(&s.value.to_string())
        ));
    }
    for (name, settings) in p.config.nested_params() {
        let mut entries: Vec<&str> = Vec::new();
        for s in &settings {
            let rest = s.key.strip_prefix("params.").unwrap_or(&s.key);
            if let Some(entry) = key_parts(rest).get(1)
                && !entries.contains(entry)
            {
                entries.push(entry);
            }
        }
        if let Some(first) = settings.first() {
            out.push(format!(
                "{}:{}: param {name} = map of {} entries ({} settings)",
                first.file,
                first.line,
                entries.len(),
                settings.len()
            ));
        }
    }
    for inc in &p.config.includes {
        let what = match (&inc.loaded, &inc.note) {
            (Some(l), _) => l.clone(),
            (None, Some(n)) => format!("{} ({n})", cut(&inc.expr)),
            (None, None) => cut(&inc.expr),
        };
        out.push(format!("{}:{}: includeConfig {what}", inc.file, inc.line));
    }
    for pf in &p.config.profiles {
        out.push(format!("{}:{}: profile {}", pf.file, pf.line, pf.name));
    }
    for d in &p.config.defs {
        out.push(format!("{}:{}: def {}: {}", d.file, d.line, d.name, d.what));
    }
    for s in &p.config.skipped {
        out.push(format!(
            "{}:1: not read as a Nextflow config: {}",
            s.file, s.why
        ));
    }
    let mut text: String = out.iter().map(|l| format!("{}\n", one_line(l))).collect();
    text.push_str(&render_unparsed(p.unparsed()));
    text
}

fn push_list(line: &mut String, label: &str, items: impl Iterator<Item = String>) {
    let items: Vec<String> = items.collect();
    if !items.is_empty() {
        line.push_str(&format!(" {label} {}", items.join(", ")));
    }
}

/// A value's text cut to a readable length.
fn cut(text: &str) -> String {
    if text.chars().count() > MAX_VALUE_CHARS {
        let head: String = text.chars().take(MAX_VALUE_CHARS).collect();
        format!("{head}…")
    } else {
        text.to_string()
    }
}

/// `text` with line ends and other control characters escaped, so it stays on one line.
pub(crate) fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push(' '),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}
