//! Opening a memory scope's root (`<config dir>/memory`, `<session cwd>/.codaris/memory`): the
//! base directory is the daemon's own choice, never a model's, and each folder below it is
//! opened without following a symbolic link, so a `.codaris` or `memory` planted as a link
//! (into the source tree, the state directory, `/`) is refused rather than written through.
//! What the returned handle opens stays beneath it: cap-std refuses `..` and links leading out.

use std::io;
use std::path::Path;

use cap_std::fs::Dir;

/// The scope root `below` (folder names) under `base`, opened as a capability; made, with
/// `base`, when `create` (a note is about to be kept). `Ok(None)` when it does not exist and
/// `create` is false (nothing kept there yet). A link on the way is an error naming it.
pub fn open_scope(base: &Path, below: &[&str], create: bool) -> io::Result<Option<Dir>> {
    if create {
        // The base is the configuration directory or the session's directory: the daemon's
        // own paths, made as any configuration write makes them.
        std::fs::create_dir_all(base)?;
    }
    #[expect(
        clippy::disallowed_methods,
        reason = "the fence opens a memory scope's base itself; every other open is relative to it"
    )]
    let mut dir = match Dir::open_ambient_dir(base, cap_std::ambient_authority()) {
        Ok(dir) => dir,
        Err(err) if err.kind() == io::ErrorKind::NotFound && !create => return Ok(None),
        Err(err) => return Err(err),
    };
    for name in below {
        match dir.symlink_metadata(name) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("`{name}` is a symbolic link, which a memory scope never follows"),
                ));
            }
            Ok(meta) if !meta.is_dir() => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("`{name}` is not a folder"),
                ));
            }
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                if !create {
                    return Ok(None);
                }
                dir.create_dir(name)?;
            }
            Err(err) => return Err(err),
        }
        dir = dir.open_dir(name)?;
    }
    Ok(Some(dir))
}
