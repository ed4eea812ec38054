//! Turning names, descriptions and queries into comparable words.
//!
//! Tool names are identifiers (`search_issues`, `browser_take_screenshot`, `getFileContents`,
//! `github__create_issue`), so every non-alphanumeric character splits, and so does a change from
//! lower to upper case. Words are lowercased, stop words are dropped, and each word is reduced to
//! a stem so that `issues`, `issue` and `linting`/`lint` meet.

/// Words that carry no meaning for finding a tool. Kept short on purpose: a word such as `all`,
/// `new` or `not` can tell tools apart, so it stays.
const STOP_WORDS: &[&str] = &[
    "a",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "been",
    "by",
    "can",
    "could",
    "do",
    "does",
    "for",
    "from",
    "had",
    "has",
    "have",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "let",
    "me",
    "my",
    "of",
    "on",
    "or",
    "our",
    "please",
    "should",
    "so",
    "some",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "this",
    "those",
    "to",
    "up",
    "us",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "will",
    "with",
    "would",
    "you",
    "your",
    "want",
    "need",
    "like",
    "just",
    "something",
    "thing",
    "things",
    "using",
    "via",
    "tool",
    "tools",
    "help",
    "able",
    "way",
    "ll",
    "ve",
    "re",
    "don",
    "doesn",
    "isn",
    "s",
    "t",
    "d",
];

/// Whether `word` (already lowercase) is a stop word.
pub(crate) fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

/// Splits `text` into lowercase words: on every character that is not a letter or a digit, and
/// inside a run of letters where lower case turns to upper case (`getFileContents`) or where an
/// acronym ends (`HTTPRequest`). Digits stay attached (`s3`, `k8s`, `ec2`).
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for run in text.split(|c: char| !c.is_alphanumeric()) {
        if run.is_empty() {
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
                out.push(lowercase(&chars[start..i]));
                start = i;
            }
        }
        out.push(lowercase(&chars[start..]));
    }
    out
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
    words(text).join(" ")
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
