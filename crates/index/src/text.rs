//! Turning names, descriptions and queries into comparable words.
//!
//! Tool names are identifiers (`search_issues`, `browser_take_screenshot`, `getFileContents`,
//! `github__create_issue`), so every non-alphanumeric character splits, and so does a change from
//! lower to upper case. Words are lowercased, stop words are dropped, and each word is reduced to
//! a stem so that `issues`, `issue` and `linting`/`lint` meet.

/// Whether `word` (already lowercase) carries no meaning for finding a tool. Kept short on
/// purpose: a word such as `all`, `new` or `not` can tell tools apart, so it stays.
pub(crate) fn is_stop_word(word: &str) -> bool {
    matches!(
        word,
        "a" | "an"
            | "and"
            | "any"
            | "are"
            | "as"
            | "at"
            | "be"
            | "been"
            | "by"
            | "can"
            | "could"
            | "do"
            | "does"
            | "for"
            | "from"
            | "had"
            | "has"
            | "have"
            | "how"
            | "i"
            | "if"
            | "in"
            | "into"
            | "is"
            | "it"
            | "its"
            | "let"
            | "me"
            | "my"
            | "of"
            | "on"
            | "or"
            | "our"
            | "please"
            | "should"
            | "so"
            | "some"
            | "that"
            | "the"
            | "their"
            | "them"
            | "then"
            | "there"
            | "these"
            | "this"
            | "those"
            | "to"
            | "up"
            | "us"
            | "was"
            | "we"
            | "were"
            | "what"
            | "when"
            | "where"
            | "which"
            | "while"
            | "who"
            | "will"
            | "with"
            | "would"
            | "you"
            | "your"
            | "want"
            | "about"
            | "also"
            | "again"
            | "currently"
            | "kindly"
            | "maybe"
            | "need"
            | "like"
            | "just"
            | "something"
            | "thing"
            | "things"
            | "using"
            | "via"
            | "help"
            | "able"
            | "way"
            | "ll"
            | "ve"
            | "re"
            | "don"
            | "doesn"
            | "isn"
            | "s"
            | "t"
            | "d"
    )
}

/// Splits `text` into lowercase words: on every character that is not a letter or a digit, and
/// inside a run of letters where lower case turns to upper case (`getFileContents`) or where an
/// acronym ends (`HTTPRequest`). Digits stay attached (`s3`, `k8s`, `ec2`).
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut buf = String::new();
    each_word(text, &mut buf, |w| out.push(w.to_owned()));
    out
}

/// Calls `f` with each word of `text`, as [`words`] splits them, lowercased into `buf` so that a
/// caller that only looks words up allocates nothing per word.
pub(crate) fn each_word(text: &str, buf: &mut String, f: impl FnMut(&str)) {
    split_words(text, buf, false, f);
}

/// [`each_word`], and with `whole` a run split at case changes is also given whole: `JavaScript`
/// gives `java`, `script` and `javascript`, so prose that writes a product's name in camel case
/// (`JavaScript`, `WhatsApp`, `PostgreSQL`) still meets a query that writes it as one word.
pub(crate) fn split_words(text: &str, buf: &mut String, whole: bool, mut f: impl FnMut(&str)) {
    if text.is_ascii() {
        // Most tool text is ASCII: split on bytes in one pass, not on decoded characters (a
        // `char` pattern decodes UTF-8 per character, about an eighth of a build).
        let bytes = text.as_bytes();
        let mut start = None;
        for (i, b) in bytes.iter().enumerate() {
            if b.is_ascii_alphanumeric() {
                start.get_or_insert(i);
            } else if let Some(s) = start.take() {
                ascii_run(&text[s..i], buf, whole, &mut f);
            }
        }
        if let Some(s) = start {
            ascii_run(&text[s..], buf, whole, &mut f);
        }
        return;
    }
    for run in text.split(|c: char| !c.is_alphanumeric()) {
        if run.is_empty() {
            continue;
        }
        if run.is_ascii() {
            ascii_run(run, buf, whole, &mut f);
            continue;
        }
        let chars: Vec<char> = run.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let prev = chars[i - 1];
            let cur = chars[i];
            let next_is_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
            let lower_to_upper = prev.is_lowercase() && cur.is_uppercase();
            let acronym_end = prev.is_uppercase() && cur.is_uppercase() && next_is_lower;
            if lower_to_upper || acronym_end {
                f(&lowercase(&chars[start..i]));
                start = i;
            }
        }
        f(&lowercase(&chars[start..]));
        if whole && start > 0 {
            f(&lowercase(&chars));
        }
    }
}

/// One run of ASCII letters and digits, split at case changes (and given whole too when `whole`
/// and it split).
fn ascii_run(run: &str, buf: &mut String, whole: bool, f: &mut impl FnMut(&str)) {
    let bytes = run.as_bytes();
    // Most words of descriptions are lowercase already: one word, handed over as it is, with
    // no copy and none of the per-letter case checks below (whose branches do not predict).
    if !bytes.iter().any(u8::is_ascii_uppercase) {
        f(run);
        return;
    }
    let mut start = 0;
    for i in 1..bytes.len() {
        let prev = bytes[i - 1];
        let cur = bytes[i];
        let next_is_lower = bytes.get(i + 1).is_some_and(u8::is_ascii_lowercase);
        let lower_to_upper = prev.is_ascii_lowercase() && cur.is_ascii_uppercase();
        let acronym_end = prev.is_ascii_uppercase() && cur.is_ascii_uppercase() && next_is_lower;
        if lower_to_upper || acronym_end {
            ascii_lower_into(&run[start..i], buf);
            f(buf);
            start = i;
        }
    }
    ascii_lower_into(&run[start..], buf);
    f(buf);
    if whole && start > 0 {
        ascii_lower_into(run, buf);
        f(buf);
    }
}

fn ascii_lower_into(word: &str, buf: &mut String) {
    buf.clear();
    buf.push_str(word);
    buf.make_ascii_lowercase();
}

fn lowercase(chars: &[char]) -> String {
    chars.iter().flat_map(|c| c.to_lowercase()).collect()
}

/// The stems of the meaningful words of `text`, in order, repeats kept (they are term counts).
#[cfg(test)]
pub(crate) fn terms(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !is_stop_word(w))
        .map(|w| crate::stem::stem(&w))
        .collect()
}

/// A name reduced to its words joined by one space: `read_file`, `readFile` and `Read file` all
/// become `read file`. Used to recognise a query that spells a tool's name.
pub(crate) fn name_key(text: &str) -> String {
    let mut key = String::new();
    each_word(text, &mut String::new(), |w| {
        if !key.is_empty() {
            key.push(' ');
        }
        key.push_str(w);
    });
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_identifiers_of_every_style() {
        assert_eq!(
            words("github__search_issues"),
            ["github", "search", "issues"]
        );
        assert_eq!(words("getFileContents"), ["get", "file", "contents"]);
        assert_eq!(
            words("HTTPRequest k8s-pods"),
            ["http", "request", "k8s", "pods"]
        );
        assert_eq!(words("API-post-search"), ["api", "post", "search"]);
        assert_eq!(words("  "), Vec::<String>::new());
    }

    #[test]
    fn terms_drop_stop_words_and_stem() {
        assert_eq!(
            terms("Search the issues of a repository"),
            ["search", "issu", "repositori"]
        );
    }

    #[test]
    fn name_keys_meet_across_spellings() {
        assert_eq!(name_key("read_file"), name_key("Read File"));
        assert_eq!(name_key("readFile"), "read file");
    }
}
