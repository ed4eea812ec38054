//! Naming what an expression the reader does not evaluate is: `new java.util.Date()` is "a new
//! `java.util.Date`", `{ … }` is "a closure", `c ? a : b` is "a ternary". Nextflow evaluates
//! these when it runs (for a config, when it reads it at launch), so a static reader can only
//! say what they are — and saying it is more use than "not understood".

use super::lex::{Kind, Token, lex};

/// What the expression `text` is, one line ending in "evaluated at run time" (or an
/// equivalent): `a new `java.util.Date`, made at run time`. Never fails; an expression it
/// cannot name is "an expression evaluated at run time".
pub fn describe_runtime(text: &str) -> String {
    let toks: Vec<Token> = lex(text)
        .tokens
        .into_iter()
        .filter(|t| t.kind != Kind::Newline)
        .collect();
    describe_tokens(&toks)
}

fn describe_tokens(toks: &[Token]) -> String {
    let Some(first) = toks.first() else {
        return "an empty expression".to_string();
    };
    // Operators outside any bracket decide what the whole expression is: `a ? b : c` is a
    // ternary even when `a` is a call.
    let mut depth = 0usize;
    let mut ternary = false;
    let mut elvis = false;
    for t in toks {
        match &t.kind {
            Kind::Op(op) if matches!(op.as_str(), "(" | "[" | "{") => depth += 1,
            Kind::Op(op) if matches!(op.as_str(), ")" | "]" | "}") => {
                depth = depth.saturating_sub(1);
            }
            Kind::Op(op) if depth == 0 && op == "?" => ternary = true,
            Kind::Op(op) if depth == 0 && op == "?:" => elvis = true,
            _ => {}
        }
    }
    if ternary {
        return "a ternary (`? :`), evaluated at run time".to_string();
    }
    if elvis {
        return "a default (`?:`), evaluated at run time".to_string();
    }
    if first.is_op("{") {
        return "a closure, evaluated at run time".to_string();
    }
    if first.is_ident("new") {
        let class = dotted_name(toks.get(1..).unwrap_or_default());
        return if class.is_empty() {
            "a new object, made at run time".to_string()
        } else {
            format!("a new `{class}`, made at run time")
        };
    }
    let name = dotted_name(toks);
    if name == "System.getenv" {
        return "an environment variable, read at run time".to_string();
    }
    if !name.is_empty() && toks.get(name_len(toks)).is_some_and(|t| t.is_op("(")) {
        return format!("a call to `{name}`, evaluated at run time");
    }
    if toks.len() == 1
        && let Kind::Str { literal: None, .. } = &first.kind
    {
        return "a string with `${…}`, filled in at run time".to_string();
    }
    "an expression, evaluated at run time".to_string()
}

/// `java.util.Date` from the tokens `java . util . Date …`.
fn dotted_name(toks: &[Token]) -> String {
    toks.iter()
        .take(name_len(toks))
        .map(|t| match &t.kind {
            Kind::Ident(s) => s.as_str(),
            _ => ".",
        })
        .collect()
}

/// How many tokens the leading `a.b.c` takes.
fn name_len(toks: &[Token]) -> usize {
    let mut n = 0;
    while toks.get(n).is_some_and(|t| t.ident().is_some()) {
        if toks.get(n + 1).is_some_and(|t| t.is_op("."))
            && toks.get(n + 2).is_some_and(|t| t.ident().is_some())
        {
            n += 2;
        } else {
            n += 1;
            break;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::describe_runtime;

    #[test]
    fn names_what_each_run_time_form_is() {
        let cases = [
            (
                "new java.util.Date().format( 'yyyy-MM-dd_HH-mm-ss')",
                "a new `java.util.Date`, made at run time",
            ),
            (
                "{ check_max( 6.GB * task.attempt, 'memory' ) }",
                "a closure, evaluated at run time",
            ),
            (
                "workflow.containerEngine == 'singularity' ? 'a' : 'b'",
                "a ternary (`? :`), evaluated at run time",
            ),
            (
                "System.getenv('HOME')",
                "an environment variable, read at run time",
            ),
            ("params.x ?: 'y'", "a default (`?:`), evaluated at run time"),
            (
                "check_max(1, 'cpus')",
                "a call to `check_max`, evaluated at run time",
            ),
            (
                "\"${params.outdir}/x\"",
                "a string with `${…}`, filled in at run time",
            ),
            ("a + b", "an expression, evaluated at run time"),
        ];
        for (text, want) in cases {
            assert_eq!(describe_runtime(text), want, "{text}");
        }
    }
}
