//! Writing a file so a reader sees the old text or the new, never a part: a temporary file
//! beside it, synced, renamed over it, and the directory synced.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically, the new file with `mode`.
pub fn atomically(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let failed = |what: &str, err: std::io::Error| {
        let _ = std::fs::remove_file(&temporary);
        format!(
            "cannot {what} `{}`: {}",
            path.display(),
            crate::error::io_reason(&err)
        )
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&temporary)
        .map_err(|err| failed("write", err))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|err| failed("write", err))?;
    drop(file);
    std::fs::rename(&temporary, path).map_err(|err| failed("replace", err))?;
    if let Ok(dir) = std::fs::File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Where the configuration file's text really lives: the file a link names (a person who keeps
/// the file in a dotfiles repository keeps the link), else the path itself.
pub fn real_file(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Writes the configuration file's new text (or removes it: `None`), keeping its mode; a new
/// file is the owner's only (it may hold keys). Its directory is made when missing.
pub fn config_file(path: &Path, text: Option<&str>) -> Result<(), String> {
    let real = real_file(path);
    let Some(text) = text else {
        return match std::fs::remove_file(&real) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(format!(
                "cannot remove `{}`: {}",
                real.display(),
                crate::error::io_reason(&err)
            )),
            _ => Ok(()),
        };
    };
    let mode = std::fs::metadata(&real).map_or(0o600, |meta| meta.permissions().mode() & 0o7777);
    if let Some(dir) = real.parent() {
        std::fs::create_dir_all(dir).map_err(|err| {
            format!(
                "cannot make `{}`: {}",
                dir.display(),
                crate::error::io_reason(&err)
            )
        })?;
    }
    atomically(&real, text.as_bytes(), mode)
}
