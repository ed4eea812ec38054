//! A session's own additional roots (an editor's `additionalDirectories`): directories its
//! tools and commands may use besides its project, for this session only. Each is admitted
//! once, when the session is created, where it really leads (links and `..` resolved), and
//! refused as a project would be; the resolved path is what the record keeps. At every turn a
//! root that no longer resolves to itself (a component swapped for a link since) is left out
//! rather than followed.

use std::path::{Path, PathBuf};

use crate::error::DaemonError;

/// The most additional roots one session takes: an editor's list is short, and each is a
/// grant of the fence.
pub const MAX_ROOTS: usize = 32;

const FIELD: &str = "additional_dirs";

fn refused(reason: String) -> DaemonError {
    DaemonError::InvalidArgument {
        field: FIELD,
        reason,
    }
}

/// The directories `given` names, resolved, in order and once each; the first that cannot be
/// a root refuses them all with a sentence naming it: not absolute, missing or not a
/// directory, `/`, the home directory or a directory above it, or inside the daemon's state
/// directory.
pub fn admit(
    given: &[String],
    state_dir: &Path,
    home: Option<&Path>,
) -> Result<Vec<PathBuf>, DaemonError> {
    if given.len() > MAX_ROOTS {
        return Err(refused(format!(
            "{} directories given; a session takes at most {MAX_ROOTS}",
            given.len()
        )));
    }
    let state = std::fs::canonicalize(state_dir).unwrap_or_else(|_| state_dir.to_path_buf());
    let home = home.map(|h| std::fs::canonicalize(h).unwrap_or_else(|_| h.to_path_buf()));
    let mut roots: Vec<PathBuf> = Vec::new();
    for dir in given {
        let shown = dir.escape_debug();
        if dir.contains('\0') {
            return Err(refused(format!("`{shown}` contains a NUL byte")));
        }
        let path = Path::new(dir);
        if !path.is_absolute() {
            return Err(refused(format!("`{shown}` must be an absolute path")));
        }
        let real = std::fs::canonicalize(path).map_err(|err| {
            refused(format!(
                "`{shown}` cannot be used: {}",
                crate::error::io_reason(&err)
            ))
        })?;
        if !real.is_dir() {
            return Err(refused(format!("`{shown}` is not a directory")));
        }
        if real.starts_with(&state) {
            return Err(refused(format!(
                "`{shown}` is inside codarisd's state directory"
            )));
        }
        if crate::config::opens_home(&real, home.as_deref()) {
            return Err(refused(format!(
                "`{shown}` would open the whole disk or the home directory to the session's tools"
            )));
        }
        if !roots.contains(&real) {
            roots.push(real);
        }
    }
    Ok(roots)
}

/// The admitted roots that still lead where they did: a root some component of which was
/// swapped for a link since it was admitted resolves elsewhere, and is left out (logged)
/// rather than opened where the link points. A missing one is left out too.
pub fn in_force(roots: &[PathBuf]) -> impl Iterator<Item = &PathBuf> {
    roots.iter().filter(|root| {
        let same = std::fs::canonicalize(root).is_ok_and(|real| real == **root);
        if !same {
            tracing::warn!(root = %root.display(), "an additional root no longer resolves to itself; left out");
        }
        same
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(err: DaemonError) -> String {
        match err {
            DaemonError::InvalidArgument { reason, .. } => reason,
            other => panic!("not a refusal: {other}"),
        }
    }

    #[test]
    fn each_root_is_resolved_and_what_a_project_may_not_be_is_refused()
    -> Result<(), Box<dyn std::error::Error>> {
        let tmp = tempfile::tempdir()?;
        let base = std::fs::canonicalize(tmp.path())?;
        let state = base.join("state");
        let home = base.join("home");
        let data = base.join("data");
        for dir in [&state, &home, &data] {
            std::fs::create_dir(dir)?;
        }
        std::fs::write(base.join("file"), "x")?;
        std::os::unix::fs::symlink(&state, base.join("to-state"))?;
        std::os::unix::fs::symlink(&data, base.join("to-data"))?;
        let s = |p: PathBuf| p.display().to_string();
        let admitted = admit(
            &[
                s(base.join("to-data")),
                s(base.join("home/../data")),
                s(data.clone()),
            ],
            &state,
            Some(&home),
        )?;
        assert_eq!(admitted, vec![data.clone()]);
        let cases = [
            ("data".to_owned(), "must be an absolute path"),
            (
                s(base.join("to-state")),
                "is inside codarisd's state directory",
            ),
            (
                s(state.join("..").join("state")),
                "is inside codarisd's state directory",
            ),
            (s(base.join("file")), "is not a directory"),
            (s(base.join("missing")), "cannot be used"),
            (
                "/".to_owned(),
                "would open the whole disk or the home directory",
            ),
            (
                s(base.clone()),
                "would open the whole disk or the home directory",
            ),
        ];
        for (dir, said) in cases {
            let err = admit(std::slice::from_ref(&dir), &state, Some(&home)).unwrap_err();
            assert!(reason(err).contains(said), "{dir}: {said}");
        }
        Ok(())
    }

    #[test]
    fn a_root_swapped_for_a_link_after_admission_is_left_out()
    -> Result<(), Box<dyn std::error::Error>> {
        let tmp = tempfile::tempdir()?;
        let base = std::fs::canonicalize(tmp.path())?;
        let data = base.join("data");
        let elsewhere = base.join("elsewhere");
        std::fs::create_dir(&data)?;
        std::fs::create_dir(&elsewhere)?;
        let roots = vec![data.clone()];
        assert_eq!(in_force(&roots).count(), 1);
        std::fs::remove_dir(&data)?;
        std::os::unix::fs::symlink(&elsewhere, &data)?;
        assert_eq!(in_force(&roots).count(), 0);
        Ok(())
    }
}
