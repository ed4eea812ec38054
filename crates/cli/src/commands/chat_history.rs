//! Chat's line history, kept across chats in `<state>/chat_history` (0600, like everything
//! in the state directory the tools' fence keeps the model out of).
//!
//! rustyline loads it when chat starts and appends each message or command line as it is
//! entered, so a chat that is killed keeps what was typed; it holds the last
//! [`HISTORY_CAP`] lines. A line typed with a leading space is not kept (as in bash), for
//! anything a person would rather not find on disk. Answers at a card's prompt never are.
//! A history that cannot be read or written costs only the history: chat says so once and
//! goes on without it, and never rewrites a file it could not read.

use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustyline::Config;

use crate::client::Target;
use crate::error::CliError;

/// How many lines the history keeps.
pub const HISTORY_CAP: usize = 1000;

/// rustyline's editor with its file history (the `with-file-history` feature).
pub type ChatEditor = rustyline::DefaultEditor;

/// The editor chat reads lines with, and the history file it keeps them in (`None` when the
/// history could not be opened: the chat then keeps them in memory only).
pub struct LineEditor {
    pub editor: ChatEditor,
    file: Option<PathBuf>,
}

pub fn path(target: &Target) -> PathBuf {
    target.layout.dir().join("chat_history")
}

impl LineEditor {
    /// An editor with the history at `file` loaded, creating the file (0600) when missing.
    pub fn open(file: PathBuf) -> Result<Self, CliError> {
        let config = Config::builder()
            .max_history_size(HISTORY_CAP)
            .map_err(terminal)?
            .history_ignore_space(true)
            .auto_add_history(false)
            .build();
        let mut editor = ChatEditor::with_config(config).map_err(terminal)?;
        let file = match prepare(&file).and_then(|()| {
            editor
                .load_history(&file)
                .map_err(|e| format!("cannot read it: {e}"))
        }) {
            Ok(()) => Some(file),
            Err(reason) => {
                warn(&file, &reason);
                None
            }
        };
        Ok(Self { editor, file })
    }

    /// Keeps `line` in the history, on disk at once.
    pub fn remember(&mut self, line: &str) {
        // False for a line the history ignores (blank, a leading space, a repeat).
        if !self.editor.add_history_entry(line).unwrap_or(false) {
            return;
        }
        if let Some(file) = &self.file
            && let Err(err) = self.editor.append_history(file)
        {
            warn(file, &format!("cannot write it: {err}"));
            self.file = None;
        }
    }
}

/// Makes sure the history file exists with mode 0600 and is a plain file, not a link.
fn prepare(file: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(file) {
        Ok(meta) if !meta.file_type().is_file() => {
            return Err("it is not a plain file".to_owned());
        }
        Ok(meta) => {
            if meta.permissions().mode() & 0o777 != 0o600 {
                std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600))
                    .map_err(|e| format!("cannot make it private: {e}"))?;
            }
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(file)
                .map_err(|e| format!("cannot create it: {e}"))?;
        }
        Err(err) => return Err(format!("cannot read it: {err}")),
    }
    Ok(())
}

fn warn(file: &Path, reason: &str) {
    crate::output::error_line(&format!(
        "codaris: chat history {}: {reason}; this chat's lines are not kept",
        file.display()
    ));
}

fn terminal(err: rustyline::error::ReadlineError) -> CliError {
    CliError::Terminal {
        message: err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_is_private_kept_across_editors_and_capped() {
        let temp = tempfile::tempdir().unwrap();
        let file = temp.path().join("chat_history");
        let mut first = LineEditor::open(file.clone()).unwrap();
        first.remember("first message");
        first.remember(" a secret typed with a leading space");
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
        drop(first);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut second = LineEditor::open(file.clone()).unwrap();
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600,
            "a widened file is made private again"
        );
        let kept: Vec<String> = second.editor.history().iter().cloned().collect();
        assert_eq!(kept, ["first message"]);
        for n in 0..HISTORY_CAP + 5 {
            second.remember(&format!("line {n}"));
        }
        drop(second);
        let third = LineEditor::open(file.clone()).unwrap();
        let kept: Vec<String> = third.editor.history().iter().cloned().collect();
        assert_eq!(kept.len(), HISTORY_CAP);
        assert_eq!(kept.last().map(String::as_str), Some("line 1004"));
    }

    #[test]
    fn a_history_that_is_not_a_plain_file_is_left_alone() {
        let temp = tempfile::tempdir().unwrap();
        let target = temp.path().join("elsewhere");
        std::fs::write(&target, "keep me\n").unwrap();
        let file = temp.path().join("chat_history");
        std::os::unix::fs::symlink(&target, &file).unwrap();
        let mut editor = LineEditor::open(file).unwrap();
        editor.remember("typed");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me\n");
    }
}
