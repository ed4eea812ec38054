//! What `codaris run` sends as its prompts: a `-` prompt is read from standard input
//! (`echo "explain main.nf" | codaris run -`), and the files of `--context FILE` and standard
//! input piped beside a prompt (`cat .nextflow.log | codaris run "why did this fail"`) go
//! before the first prompt as context, each between `<context source="…">` and
//! `</context>` lines naming where it came from. Standard input is never read when it is a
//! terminal unless `-` asks for it: `codaris run "hi"` typed at a shell does not wait for it.
//!
//! A context is the person's own text for the model to read, so it must be text a model can
//! read and fit in a prompt: one that is not UTF-8 (or holds a NUL byte) or is over
//! [`CONTEXT_MAX_BYTES`] is refused with one line before any session is opened.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use crate::error::CliError;

/// The most bytes one context (a file, or standard input) may hold: about 64,000 tokens,
/// which leaves room in a local model's context window for the turn itself.
pub const CONTEXT_MAX_BYTES: u64 = 256 * 1024;

/// The name standard input is given as a context's source.
const STDIN_NAME: &str = "standard input";

/// How long a prompt given on the command line waits for piped standard input to start. A
/// program that starts `codaris run "…"` with a pipe it never writes to or closes (a CI
/// runner, a Python `subprocess` with `stdin=PIPE`) would otherwise hang the run for good;
/// Claude Code's `-p` waits the same 3 s before going on without it.
const STDIN_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// One piece of context and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    pub source: String,
    pub text: String,
}

/// The prompts to play: `prompts` with a `-` read from standard input, and the context of
/// `files` and of piped standard input put before the first.
pub fn prompts(prompts: Vec<String>, files: &[PathBuf]) -> Result<Vec<String>, CliError> {
    let dashes = prompts.iter().filter(|p| p.as_str() == "-").count();
    if dashes > 1 {
        return Err(CliError::InvalidFlag {
            flag: "PROMPT",
            reason: "`-` (read the prompt from standard input) may be given once".to_owned(),
        });
    }
    let mut contexts = files
        .iter()
        .map(|path| read_file(path))
        .collect::<Result<Vec<_>, _>>()?;
    let stdin = std::io::stdin();
    let prompts = if dashes == 1 {
        let text = read_limited(stdin.lock(), STDIN_NAME)?;
        // The newline `echo` ends it with is not part of the question.
        let text = text.trim_end_matches(['\n', '\r']).to_owned();
        if text.trim().is_empty() {
            return Err(CliError::NoInput { what: "a prompt" });
        }
        prompts
            .into_iter()
            .map(|p| if p == "-" { text.clone() } else { p })
            .collect()
    } else {
        if !stdin.is_terminal() && input_arrives(&stdin, STDIN_WAIT) {
            let text = read_limited(stdin.lock(), STDIN_NAME)?;
            // An empty or closed standard input (`</dev/null`, a cron job) adds nothing.
            if !text.trim().is_empty() {
                contexts.push(Context {
                    source: STDIN_NAME.to_owned(),
                    text,
                });
            }
        }
        prompts
    };
    Ok(with_context(prompts, &contexts))
}

/// Whether `stdin` has something to read (data, or its end) within `wait`. A file or
/// `/dev/null` has at once; a pipe once its writer writes or closes it. When nothing comes,
/// the person is told on standard error why their piped text (if any) was not used.
fn input_arrives(stdin: &std::io::Stdin, wait: std::time::Duration) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(stdin, PollFlags::IN)];
    let timeout = Timespec {
        tv_sec: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(wait.subsec_nanos()),
    };
    let ready = loop {
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Err(rustix::io::Errno::INTR) => continue,
            // A descriptor poll cannot wait on is read as before: the read says what it is.
            Err(_) => break true,
            Ok(n) => break n > 0,
        }
    };
    if !ready {
        crate::output::error_line(&format!(
            "nothing arrived on standard input in {} s; going on without it (give `</dev/null` to skip the wait, or `-` as the prompt to wait for it)",
            wait.as_secs()
        ));
    }
    ready
}

/// `prompts` with `contexts` put before the first one.
pub fn with_context(mut prompts: Vec<String>, contexts: &[Context]) -> Vec<String> {
    let Some(first) = prompts.first_mut() else {
        return prompts;
    };
    if contexts.is_empty() {
        return prompts;
    }
    let mut text = String::new();
    for context in contexts {
        text.push_str(&format!("<context source=\"{}\">\n", context.source));
        text.push_str(&context.text);
        if !context.text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("</context>\n\n");
    }
    text.push_str(first);
    *first = text;
    prompts
}

/// A `--context` file, read as text no longer than [`CONTEXT_MAX_BYTES`]. It is the person's
/// own choice of file (a FIFO from `<(…)` works too); a directory fails to read.
fn read_file(path: &Path) -> Result<Context, CliError> {
    // On one line, whatever the name holds: the `<context source="…">` line must stay one.
    let source = crate::output::one_line(&path.display().to_string()).replace('"', "\\\"");
    let file = std::fs::File::open(path).map_err(|source| CliError::Read {
        path: path.to_owned(),
        source,
    })?;
    let text = read_limited(file, &source).map_err(|err| match err {
        CliError::Output(source) => CliError::Read {
            path: path.to_owned(),
            source,
        },
        other => other,
    })?;
    Ok(Context { source, text })
}

/// Reads `reader` to its end as UTF-8 text of at most [`CONTEXT_MAX_BYTES`]: a longer one is
/// refused after reading one byte more than the limit (`/dev/zero` ends too).
fn read_limited(reader: impl Read, source: &str) -> Result<String, CliError> {
    let mut bytes = Vec::new();
    reader
        .take(CONTEXT_MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(CliError::Output)?;
    if bytes.len() as u64 > CONTEXT_MAX_BYTES {
        return Err(CliError::BadContext {
            name: source.to_owned(),
            reason: format!(
                "it is over {} (the most one context may hold)",
                crate::output::size(CONTEXT_MAX_BYTES)
            ),
        });
    }
    let binary = || CliError::BadContext {
        name: source.to_owned(),
        reason: "it is binary, not UTF-8 text".to_owned(),
    };
    if bytes.contains(&0) {
        return Err(binary());
    }
    String::from_utf8(bytes).map_err(|_| binary())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn context_goes_before_the_first_prompt_named_by_its_source() {
        let contexts = [
            Context {
                source: "build.log".to_owned(),
                text: "error: x".to_owned(),
            },
            Context {
                source: STDIN_NAME.to_owned(),
                text: "y\n".to_owned(),
            },
        ];
        let prompts = with_context(vec!["why".to_owned(), "and then".to_owned()], &contexts);
        assert_eq!(
            prompts,
            [
                "<context source=\"build.log\">\nerror: x\n</context>\n\n<context source=\"standard input\">\ny\n</context>\n\nwhy",
                "and then"
            ]
        );
        assert_eq!(with_context(vec!["why".to_owned()], &[]), ["why"]);
    }

    #[test]
    fn a_file_name_cannot_break_its_context_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a\"b\nc.log");
        std::fs::write(&path, "text").unwrap();
        let context = read_file(&path).unwrap();
        assert!(
            context.source.ends_with("a\\\"b\\u{a}c.log"),
            "{}",
            context.source
        );
        assert!(!context.source.contains('\n'));
    }

    #[test]
    fn a_binary_or_over_large_context_is_refused() {
        let big = vec![b'a'; usize::try_from(CONTEXT_MAX_BYTES).unwrap() + 1];
        let err = read_limited(&big[..], "big.log").unwrap_err();
        assert!(matches!(&err, CliError::BadContext { name, .. } if name == "big.log"));
        assert_eq!(
            err.to_string(),
            "cannot use `big.log` as context: it is over 256.0 KiB (the most one context may hold)"
        );
        let exact = vec![b'a'; usize::try_from(CONTEXT_MAX_BYTES).unwrap()];
        assert_eq!(read_limited(&exact[..], "x").unwrap().len(), exact.len());
        for binary in [&b"a\0b"[..], &[0xff, 0xfe][..]] {
            let err = read_limited(binary, "a.bam").unwrap_err();
            assert_eq!(
                err.to_string(),
                "cannot use `a.bam` as context: it is binary, not UTF-8 text"
            );
        }
    }
}
