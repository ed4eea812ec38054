//! `codaris memory list|show|rm`: the notes the memory subagent keeps, for people.
//!
//! Through the daemon (`Memory` service), not by reading the files here: the user scope is the
//! daemon's configuration directory, which only the daemon knows for sure (the CLI may run with
//! another environment), and a removal is held to its scope by the same checks the subagent's
//! own calls are (no `..`, absolute path, `~`, `$VAR`, URI or symbolic link).
//!
//! `list --json` prints `{"enabled", "user_dir", "project_dir", "notes": [{"path", "title",
//! "bytes"}]}` (a directory null when the scope has none); `show --json` `{"path", "title",
//! "body"}`; `rm --json` `{"deleted", "folder"}`. Contracts, extended by adding fields only.

use std::path::PathBuf;

use codaris_proto::v1;
use serde_json::json;

use super::Outcome;
use crate::cli::MemoryCommand;
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

pub async fn run(
    target: &Target,
    autostart: bool,
    json_out: bool,
    command: MemoryCommand,
) -> Result<Outcome, CliError> {
    let mut memory = v1::memory_client::MemoryClient::new(client::open(target, autostart).await?);
    match command {
        MemoryCommand::List { scope, cwd } => {
            let listed = memory
                .list_notes(v1::ListNotesRequest {
                    cwd: project(cwd)?,
                    scope: scope.unwrap_or_default(),
                })
                .await?
                .into_inner();
            if json_out {
                output::json(&list_json(&listed))?;
                return Ok(Outcome::Success);
            }
            if !listed.enabled {
                output::line("memory is off (`[memory] enabled = true` switches it on)")?;
            }
            if listed.notes.is_empty() {
                output::line("no notes")?;
            }
            for note in &listed.notes {
                output::line(&output::shown(&format!(
                    "{}  {}  ({} bytes)",
                    note.path, note.title, note.bytes
                )))?;
            }
        }
        MemoryCommand::Show { path, cwd } => {
            let note = memory
                .read_note(v1::ReadNoteRequest {
                    cwd: project(cwd)?,
                    path,
                })
                .await?
                .into_inner();
            if json_out {
                output::json(&json!({"path": note.path, "title": note.title, "body": note.body}))?;
                return Ok(Outcome::Success);
            }
            output::line(&output::shown(&format!(
                "# {}\n\n{}",
                note.title, note.body
            )))?;
        }
        MemoryCommand::Rm { path, cwd } => {
            let deleted = memory
                .delete_note(v1::DeleteNoteRequest {
                    cwd: project(cwd)?,
                    path: path.clone(),
                })
                .await?
                .into_inner();
            if json_out {
                output::json(&json!({"deleted": path, "folder": deleted.folder}))?;
                return Ok(Outcome::Success);
            }
            output::line(&if deleted.folder {
                format!("deleted the folder `{path}` with everything in it")
            } else {
                format!("deleted `{path}`")
            })?;
        }
    }
    Ok(Outcome::Success)
}

/// The project directory, absolute: `--cwd` or where the person stands.
fn project(cwd: Option<PathBuf>) -> Result<String, CliError> {
    let cwd = match cwd {
        Some(dir) => dir,
        None => std::env::current_dir().map_err(|source| CliError::Read {
            path: PathBuf::from("."),
            source,
        })?,
    };
    Ok(std::path::absolute(&cwd)
        .unwrap_or(cwd)
        .display()
        .to_string())
}

fn list_json(listed: &v1::ListNotesResponse) -> serde_json::Value {
    let dir = |d: &str| (!d.is_empty()).then(|| d.to_owned());
    json!({
        "enabled": listed.enabled,
        "user_dir": dir(&listed.user_dir),
        "project_dir": dir(&listed.project_dir),
        "notes": listed.notes.iter().map(|n| json!({
            "path": n.path, "title": n.title, "bytes": n.bytes,
        })).collect::<Vec<_>>(),
    })
}
