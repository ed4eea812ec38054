//! A light English stemmer for tool text.
//!
//! A full Porter stemmer folds too much for short technical text (`general`/`generate`,
//! `organization`/`organ`) and the crates that ship one are not kept up. Tool descriptions need
//! less: plurals, `-ing`/`-ed`/`-er`, `-tion`, `-ment`, a doubled final consonant and a silent
//! final `e`, so that `running`/`run`, `creates`/`creation`/`create` and `repositories`/
//! `repository` meet. The stem does not have to be a word, only the same for related forms.

/// Reduces a lowercase word to its stem. Words of three letters or fewer, and words with digits,
/// are returned unchanged.
pub(crate) fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.bytes().all(|b| b.is_ascii_lowercase()) || KEPT.contains(&word) {
        return word.to_owned();
    }
    let mut w = word.to_owned();
    strip_plural(&mut w);
    if strip_suffix(&mut w) {
        undouble(&mut w);
    }
    // A silent final `e` goes so that `create` meets `creating` and `creation`.
    if w.len() > 3 && w.ends_with('e') && !w.ends_with("ee") {
        w.pop();
    }
    // A final `y` becomes `i` so that `query` meets `queries` (whose `ies` became `y`).
    if w.len() > 3 && w.ends_with('y') {
        w.pop();
        w.push('i');
    }
    w
}

/// Words the rules would fold into a different word: ones ending in `s` that are not plurals
/// (`news` into `new`, a synonym of `create`), and ones ending in `er` that are not someone or
/// something that does their stem (`container` is not what `contain`s, `header` not `head`,
/// `customer` not `custom`).
const KEPT: &[&str] = &[
    "news",
    "alias",
    "canvas",
    "atlas",
    "bias",
    "series",
    "species",
    "customer",
    "container",
    "header",
    "folder",
    "docker",
    "number",
    "letter",
    "matter",
    "poster",
    "corner",
    "shower",
];

fn has_vowel(s: &str) -> bool {
    s.bytes()
        .any(|b| matches!(b, b'a' | b'e' | b'i' | b'o' | b'u' | b'y'))
}

fn strip_plural(w: &mut String) {
    if let Some(base) = w.strip_suffix("ies")
        && base.len() >= 2
    {
        let base = format!("{base}y");
        *w = base;
    } else if w.ends_with("sses") {
        w.truncate(w.len() - 2);
    } else if let Some(base) = w.strip_suffix("es")
        && (base.ends_with("ch") || base.ends_with("sh") || base.ends_with('x'))
    {
        let base = base.to_owned();
        *w = base;
    } else if w.ends_with('s')
        && !w.ends_with("ss")
        && !w.ends_with("us")
        && !w.ends_with("is")
        && w.len() > 3
    {
        w.pop();
    }
}

/// Strips one derivational or inflectional suffix; returns whether it did.
fn strip_suffix(w: &mut String) -> bool {
    // Longest first; the base that remains must keep a vowel and some length, so `string`,
    // `thing` and `need` stay whole.
    const SUFFIXES: &[(&str, usize)] = &[
        ("ments", 4),
        ("ment", 4),
        ("ings", 3),
        ("ing", 3),
        ("tion", 3),
        ("sion", 3),
        ("ers", 4),
        ("er", 4),
        ("ed", 3),
        ("ly", 4),
    ];
    for &(suffix, min_base) in SUFFIXES {
        if let Some(base) = w.strip_suffix(suffix)
            && base.len() >= min_base
            && has_vowel(base)
        {
            // `-tion` and `-sion` keep their `t`/`s`: `execution` -> `execut`, like `execute`.
            let keep = match suffix {
                "tion" => "t",
                "sion" => "s",
                _ => "",
            };
            let base = format!("{base}{keep}");
            *w = base;
            return true;
        }
    }
    false
}

/// `running` -> `runn` -> `run`, but `install` and `process` keep their double letter.
fn undouble(w: &mut String) {
    let bytes = w.as_bytes();
    let n = bytes.len();
    if n >= 3 && bytes[n - 1] == bytes[n - 2] && !matches!(bytes[n - 1], b'l' | b's' | b'z' | b'e')
    {
        w.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::stem;

    fn same(words: &[&str]) {
        let first = stem(words[0]);
        for w in words {
            assert_eq!(stem(w), first, "{w} vs {}", words[0]);
        }
    }

    #[test]
    fn related_forms_meet() {
        same(&["run", "runs", "running"]);
        same(&["create", "creates", "created", "creating", "creation"]);
        same(&["execute", "executes", "executing", "execution"]);
        same(&["repository", "repositories"]);
        same(&["query", "queries"]);
        same(&["issue", "issues"]);
        same(&["lint", "linting", "linter", "lints"]);
        same(&["search", "searches", "searching"]);
        same(&["delete", "deleted", "deleting", "deletion"]);
        same(&["deploy", "deploys", "deployment", "deploying"]);
        same(&["process", "processes"]);
        same(&["screenshot", "screenshots"]);
        same(&["stop", "stopped", "stopping"]);
        same(&["install", "installing", "installed"]);
    }

    #[test]
    fn words_that_only_look_derived_stay_whole() {
        for (word, other) in [
            ("news", "new"),
            ("customer", "custom"),
            ("container", "contain"),
            ("header", "head"),
        ] {
            assert_ne!(stem(word), stem(other), "{word} folded into {other}");
        }
        // Agent nouns still meet their verbs.
        same(&["lint", "linter"]);
    }

    #[test]
    fn short_and_odd_words_stay() {
        assert_eq!(stem("git"), "git");
        assert_eq!(stem("string"), "string");
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("k8s"), "k8s");
        assert_eq!(stem("analysis"), "analysis");
    }
}
