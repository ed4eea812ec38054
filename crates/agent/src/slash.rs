//! Slash commands in a message: which were typed, and what a `/review` asked for.
//!
//! A command counts only as a whole whitespace-delimited token, in any letter case, once the
//! punctuation around it is stripped: `/Review.`, `(/review)` and `"/fix,"` are commands, while
//! `/home/me/reviews/rnaseq`, `/x/pipelines/remediated_rnaseq`, `a/review` and `/review/x` are
//! not (after stripping, the token must be `/` followed by letters only, naming a known command).

use serde::{Deserialize, Serialize};

/// The slash commands Codaris knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Command {
    /// `/review`: review a pipeline or code, read-only.
    #[serde(rename = "/review")]
    Review,
    /// `/audit`: the compliance audit, report-only.
    #[serde(rename = "/audit")]
    Audit,
    /// `/remediate`: audit and fix compliance findings.
    #[serde(rename = "/remediate")]
    Remediate,
    /// `/autofix`: the same as `/remediate`.
    #[serde(rename = "/autofix")]
    Autofix,
    /// `/fix`: apply a remediation plan.
    #[serde(rename = "/fix")]
    Fix,
    /// `/rules`: list the compliance rules.
    #[serde(rename = "/rules")]
    Rules,
    /// `/searchData`: search GEO, SRA and PubMed.
    #[serde(rename = "/searchData")]
    SearchData,
    /// `/extend`: work on a pipeline extension.
    #[serde(rename = "/extend")]
    Extend,
    /// `/run`: run, test and debug a pipeline.
    #[serde(rename = "/run")]
    Run,
    /// `/repair`: run a pipeline and repair what breaks.
    #[serde(rename = "/repair")]
    Repair,
    /// `/research`: a research turn.
    #[serde(rename = "/research")]
    Research,
}

impl Command {
    /// Every command, in the order the documentation lists them.
    pub const ALL: [Command; 11] = [
        Command::Review,
        Command::Audit,
        Command::Remediate,
        Command::Autofix,
        Command::Fix,
        Command::Rules,
        Command::SearchData,
        Command::Extend,
        Command::Run,
        Command::Repair,
        Command::Research,
    ];

    /// The command as it is written canonically, slash included.
    pub fn as_str(self) -> &'static str {
        match self {
            Command::Review => "/review",
            Command::Audit => "/audit",
            Command::Remediate => "/remediate",
            Command::Autofix => "/autofix",
            Command::Fix => "/fix",
            Command::Rules => "/rules",
            Command::SearchData => "/searchData",
            Command::Extend => "/extend",
            Command::Run => "/run",
            Command::Repair => "/repair",
            Command::Research => "/research",
        }
    }

    /// The command a bare word names (`/Review`), in any case; `None` for anything else.
    pub fn from_word(word: &str) -> Option<Command> {
        Command::ALL
            .into_iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(word))
    }
}

/// The flags `/review` understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewFlag {
    /// `--compliance`: the compliance audit only.
    Compliance,
    /// `--quick`: the compliance audit only.
    Quick,
    /// `--security`: a full review with attention to security.
    Security,
    /// `--lint`: a full review including the linter.
    Lint,
}

impl ReviewFlag {
    /// The flag as typed, dashes included.
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewFlag::Compliance => "--compliance",
            ReviewFlag::Quick => "--quick",
            ReviewFlag::Security => "--security",
            ReviewFlag::Lint => "--lint",
        }
    }

    fn from_word(word: &str) -> Option<ReviewFlag> {
        [
            ReviewFlag::Compliance,
            ReviewFlag::Quick,
            ReviewFlag::Security,
            ReviewFlag::Lint,
        ]
        .into_iter()
        .find(|f| f.as_str().eq_ignore_ascii_case(word))
    }
}

/// Which row of the slash table a `/review` falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewForm {
    /// Nothing but `/review` (and courtesy words): `review_pipeline` alone.
    Bare,
    /// `--compliance` or `--quick`: the report-only compliance audit alone.
    Audit,
    /// A question, a path, `--security` or `--lint`: all three review tools.
    Full,
}

/// What a `/review` carried besides the command: every other token of the message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewArgs {
    /// Known flags, in the order typed, without repeats.
    pub flags: Vec<ReviewFlag>,
    /// `--words` that are not known flags, as typed; they change nothing.
    pub unknown_flags: Vec<String>,
    /// Tokens that look like paths (a `/` inside, a leading `./`, `../` or `~`, or a known file
    /// extension such as `.nf`), punctuation stripped.
    pub paths: Vec<String>,
    /// The other words, joined by single spaces, when at least one is not a courtesy word
    /// (`please`, `pls`, `thanks`, `thx`, `now`).
    pub question: Option<String>,
}

impl ReviewArgs {
    /// The row of the table: `--security` or `--lint` ask for the full review; otherwise
    /// `--compliance` or `--quick` ask for the audit; otherwise a path or a question asks for the
    /// full review; otherwise it is bare.
    pub fn form(&self) -> ReviewForm {
        let has = |f: ReviewFlag| self.flags.contains(&f);
        if has(ReviewFlag::Security) || has(ReviewFlag::Lint) {
            ReviewForm::Full
        } else if has(ReviewFlag::Compliance) || has(ReviewFlag::Quick) {
            ReviewForm::Audit
        } else if !self.paths.is_empty() || self.question.is_some() {
            ReviewForm::Full
        } else {
            ReviewForm::Bare
        }
    }
}

/// The slash commands of one message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slash {
    /// The commands, in the order first typed, without repeats.
    pub commands: Vec<Command>,
    /// The arguments of `/review`, when it was typed.
    pub review: Option<ReviewArgs>,
}

impl Slash {
    /// True when `command` was typed.
    pub fn has(&self, command: Command) -> bool {
        self.commands.contains(&command)
    }

    /// True when no command was typed.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// The commands as the policy's `Task::slash` holds them: canonical spelling, and the
    /// known flags of `/review` after it (`/review --quick`).
    pub fn typed(&self) -> Vec<String> {
        self.commands
            .iter()
            .map(|c| match (c, &self.review) {
                (Command::Review, Some(args)) if !args.flags.is_empty() => {
                    let mut s = c.as_str().to_owned();
                    for flag in &args.flags {
                        s.push(' ');
                        s.push_str(flag.as_str());
                    }
                    s
                }
                _ => c.as_str().to_owned(),
            })
            .collect()
    }
}

const LEADING: &[char] = &['(', '[', '{', '<', '"', '\'', '`', '‘', '“', '«', '*', '_'];
const TRAILING: &[char] = &[
    '.', ',', ';', ':', '!', '?', ')', ']', '}', '>', '"', '\'', '`', '’', '”', '»', '*', '_',
];
const COURTESY: &[&str] = &["please", "pls", "thanks", "thx", "now"];
const FILE_EXTENSIONS: &[&str] = &[
    "nf", "config", "yml", "yaml", "json", "py", "r", "sh", "csv", "tsv", "md", "txt", "toml",
    "smk", "wdl", "cwl", "rs", "go", "js", "ts", "sql", "ipynb", "cfg", "ini", "test",
];

/// A token with the punctuation around it removed.
pub(crate) fn strip(token: &str) -> &str {
    token.trim_start_matches(LEADING).trim_end_matches(TRAILING)
}

/// The command a whole token names, if it names one.
pub fn command_of(token: &str) -> Option<Command> {
    let word = strip(token);
    let letters = word.strip_prefix('/')?;
    if letters.is_empty() || !letters.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    Command::from_word(word)
}

/// The slash commands of a message and the arguments of its `/review`.
pub fn parse_slash(message: &str) -> Slash {
    let mut slash = Slash::default();
    for token in message.split_whitespace() {
        if let Some(command) = command_of(token)
            && !slash.has(command)
        {
            slash.commands.push(command);
        }
    }
    if slash.has(Command::Review) {
        slash.review = Some(review_args(message));
    }
    slash
}

fn review_args(message: &str) -> ReviewArgs {
    let mut args = ReviewArgs::default();
    let mut words: Vec<&str> = Vec::new();
    let mut substantive = false;
    for token in message.split_whitespace() {
        if command_of(token).is_some() {
            continue;
        }
        let word = strip(token);
        if word.starts_with("--") {
            match ReviewFlag::from_word(word) {
                Some(flag) if !args.flags.contains(&flag) => args.flags.push(flag),
                Some(_) => {}
                None => args.unknown_flags.push(word.to_owned()),
            }
        } else if looks_like_path(word) {
            args.paths.push(word.to_owned());
        } else if word.chars().any(char::is_alphanumeric) {
            substantive |= !COURTESY.iter().any(|c| c.eq_ignore_ascii_case(word));
            words.push(token);
        }
    }
    if substantive {
        args.question = Some(words.join(" "));
    }
    args
}

/// True for a token that names a file or directory rather than being a word.
pub(crate) fn looks_like_path(word: &str) -> bool {
    if word.contains('/') || word.contains('\\') || word.starts_with('~') {
        return word.chars().any(char::is_alphanumeric);
    }
    if word.starts_with("./") || word.starts_with("../") {
        return true;
    }
    match word.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && stem.chars().any(char::is_alphabetic)
                && FILE_EXTENSIONS.iter().any(|e| e.eq_ignore_ascii_case(ext))
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripping_keeps_inner_punctuation() {
        assert_eq!(strip("(/review)."), "/review");
        assert_eq!(strip("\"/fix,\""), "/fix");
        assert_eq!(strip("/x/y."), "/x/y");
    }

    #[test]
    fn paths_are_told_from_words() {
        for path in [
            "main.nf",
            "conf/base.config",
            "~/proj",
            "./x",
            "/abs/dir",
            "a.NF",
        ] {
            assert!(looks_like_path(path), "{path}");
        }
        for word in ["e.g", "3.14", "review", "the", "/", "v1.2"] {
            assert!(!looks_like_path(word), "{word}");
        }
    }

    #[test]
    fn typed_strings_carry_review_flags() {
        let slash = parse_slash("/REVIEW --Quick --quick /fix");
        assert_eq!(slash.typed(), ["/review --quick", "/fix"]);
    }
}
