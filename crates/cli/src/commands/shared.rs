//! `codaris shared`: the files a session's model shared with `share_file`, listed and
//! downloaded through the daemon.

use std::io::Write;
use std::path::{Path, PathBuf};

use codaris_proto::v1;
use serde_json::json;

use super::Outcome;
use crate::cli::SharedCommand;
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

pub async fn run(
    target: &Target,
    autostart: bool,
    json: bool,
    command: SharedCommand,
) -> Result<Outcome, CliError> {
    let channel = client::open(target, autostart).await?;
    let mut sessions = v1::sessions_client::SessionsClient::new(channel);
    match command {
        SharedCommand::List { session } => {
            let files = list(&mut sessions, &session).await?;
            if json {
                for file in &files {
                    output::json(&file_json(file))?;
                }
            } else if files.is_empty() {
                output::line(&format!("session {session} shared no files"))?;
            } else {
                for file in &files {
                    output::line(&format!(
                        "{}  {:>10}  {}",
                        file.sha256, file.size, file.name
                    ))?;
                }
            }
        }
        SharedCommand::Get {
            session,
            file,
            output: path,
        } => {
            let files = list(&mut sessions, &session).await?;
            let chosen = pick(&files, &file)?;
            let path = path.unwrap_or_else(|| PathBuf::from(&chosen.name));
            let written = download(&mut sessions, &session, chosen, &path).await?;
            if json {
                output::json(
                    &json!({"file": file_json(chosen), "written": path, "bytes": written}),
                )?;
            } else {
                output::line(&format!("wrote {} ({written} bytes)", path.display()))?;
            }
        }
    }
    Ok(Outcome::Success)
}

async fn list(
    sessions: &mut v1::sessions_client::SessionsClient<tonic::transport::Channel>,
    session: &str,
) -> Result<Vec<v1::SharedFile>, CliError> {
    Ok(sessions
        .list_shared_files(v1::ListSharedFilesRequest {
            session_id: session.to_owned(),
        })
        .await?
        .into_inner()
        .files)
}

/// The one file `wanted` names: a full SHA-256, a unique prefix of eight or more digits, or a
/// name shared once.
fn pick<'a>(files: &'a [v1::SharedFile], wanted: &str) -> Result<&'a v1::SharedFile, CliError> {
    let by_sha: Vec<_> = files
        .iter()
        .filter(|f| wanted.len() >= 8 && f.sha256.starts_with(&wanted.to_ascii_lowercase()))
        .collect();
    let by_name: Vec<_> = files.iter().filter(|f| f.name == wanted).collect();
    let found = if by_sha.is_empty() { by_name } else { by_sha };
    match found.as_slice() {
        [one] => Ok(one),
        [] => Err(CliError::InvalidFlag {
            flag: "FILE",
            reason: format!(
                "no shared file is named or hashed `{wanted}` (see `codaris shared list`)"
            ),
        }),
        _ => Err(CliError::InvalidFlag {
            flag: "FILE",
            reason: format!(
                "`{wanted}` names {} shared files; give more of the SHA-256",
                found.len()
            ),
        }),
    }
}

/// Streams the file into `path`, created new: an existing file is never replaced, and a
/// download that fails leaves nothing behind.
async fn download(
    sessions: &mut v1::sessions_client::SessionsClient<tonic::transport::Channel>,
    session: &str,
    file: &v1::SharedFile,
    path: &Path,
) -> Result<u64, CliError> {
    let write_error = |source| CliError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut stream = sessions
        .read_shared_file(v1::ReadSharedFileRequest {
            session_id: session.to_owned(),
            sha256: file.sha256.clone(),
        })
        .await?
        .into_inner();
    let mut sink = std::fs::File::create_new(path).map_err(write_error)?;
    let mut written = 0u64;
    let copied: Result<(), CliError> = async {
        while let Some(chunk) = stream.message().await? {
            sink.write_all(&chunk.data).map_err(write_error)?;
            written += chunk.data.len() as u64;
        }
        sink.flush().map_err(write_error)
    }
    .await;
    if let Err(err) = copied {
        let _ = std::fs::remove_file(path);
        return Err(err);
    }
    Ok(written)
}

fn file_json(file: &v1::SharedFile) -> serde_json::Value {
    json!({"sha256": file.sha256, "name": file.name, "path": file.path, "size": file.size})
}
