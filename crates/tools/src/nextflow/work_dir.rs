//! Where a local run's tasks write: its work directory, found before the card and held to the
//! session's roots (a cloud URL excepted), so a pipeline's config cannot send a run's writes
//! outside them.
//!
//! Found as Nextflow finds it: the last `workDir` the top level or a chosen profile sets in
//! the configs a run reads (`$NXF_HOME/config`, the pipeline's `nextflow.config`, then the
//! launch directory's, each overriding the one before), else `NXF_WORK` as the command sees
//! it, else `work` in the launch directory; a relative one against the launch directory.
//! A local one is resolved as the kernel would (each existing component's symlinks followed,
//! `..` taken after them) and must fall under a root; a value Nextflow computes as the run
//! starts cannot be known here and is refused.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use codaris_nextflow::executor::ExecutorSettings;
use codaris_nextflow::parse::{ParseError, load_config};

/// The URL schemes whose storage the run's tasks reach on their own (Nextflow's S3, Google
/// Cloud Storage and Azure Blob file systems): no root governs them.
pub const CLOUD_SCHEMES: [&str; 3] = ["s3", "gs", "az"];

/// A run's work directory, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkDir {
    /// `s3://…`, `gs://…` or `az://…`, as written.
    Cloud(String),
    /// A local directory, resolved (symlinks followed), under one of the roots.
    Local(PathBuf),
}

/// The work directory a run will use and what set it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunWorkDir {
    pub dir: WorkDir,
    /// What set it, for a reader: "`workDir` of profile `slurm`, nextflow.config line 4",
    /// "NXF_WORK", "Nextflow's default".
    pub from: String,
}

impl RunWorkDir {
    /// The card's and the answer's line: the directory, what set it, and for a URL that the
    /// roots do not govern it.
    pub fn line(&self) -> String {
        match &self.dir {
            WorkDir::Cloud(url) => format!(
                "work dir: {url} ({}; a cloud URL: the run's tasks write there, beyond the session's roots)",
                self.from
            ),
            WorkDir::Local(dir) => format!("work dir: {} ({})", dir.display(), self.from),
        }
    }
}

/// Why a work directory is refused; each names the directory and what set it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkDirError {
    #[error(
        "the work dir is computed as the run starts (`{text}`, {from}), so it cannot be checked before; set `workDir` to a path under the session's roots or an s3://, gs:// or az:// URL"
    )]
    Computed { text: String, from: String },
    #[error(
        "the work dir cannot be known before the run: {why}; Nextflow reads that config for its `workDir`"
    )]
    Unreadable { why: String },
    #[error(
        "the work dir `{dir}` ({from}) starts with `~`; give an absolute path or one relative to the launch directory"
    )]
    Home { dir: String, from: String },
    #[error(
        "the work dir `{dir}` ({from}) is a URL of a kind Codaris does not pass; use a path under the session's roots or an s3://, gs:// or az:// URL"
    )]
    Scheme { dir: String, from: String },
    #[error(
        "the work dir `{dir}` ({from}) is outside the session's roots ({roots}); set `workDir` or NXF_WORK to a directory under one of them, or to an s3://, gs:// or az:// URL"
    )]
    Outside {
        /// As given, then as resolved when that differs.
        dir: String,
        from: String,
        roots: String,
    },
}

/// The work directory of a run of `pipeline` from `launch_dir` with `profiles`, checked
/// against `roots`. `nxf_work` and `nxf_home` are `NXF_WORK` and `NXF_HOME` as the command
/// sees them; `home` its `HOME`.
pub fn run_work_dir(
    pipeline: &Path,
    launch_dir: &Path,
    profiles: &[String],
    nxf_work: Option<&OsStr>,
    nxf_home: Option<&Path>,
    roots: &[PathBuf],
) -> Result<RunWorkDir, WorkDirError> {
    let mut configs: Vec<(PathBuf, &str)> = Vec::new();
    configs.extend(nxf_home.map(|home| (home.to_path_buf(), "config")));
    configs.push((pipeline.to_path_buf(), "nextflow.config"));
    if launch_dir != pipeline {
        configs.push((launch_dir.to_path_buf(), "nextflow.config"));
    }
    // The last config read that sets it wins, as each overrides the one before. One that is
    // there but cannot be read (too large, not text) is refused: Nextflow would read it.
    let mut set = None;
    for (dir, file) in configs.iter().rev() {
        let config = match load_config(dir, file) {
            Ok(config) => config,
            Err(ParseError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                continue;
            }
            Err(ParseError::NotADirectory { .. }) => continue,
            Err(err) => {
                return Err(WorkDirError::Unreadable {
                    why: err.to_string(),
                });
            }
        };
        if let Some(setting) = ExecutorSettings::of(&config, profiles).work_dir {
            set = Some((dir, setting));
            break;
        }
    }
    if let Some((dir, setting)) = set {
        let from = match &setting.profile {
            Some(profile) => format!(
                "`workDir` of profile `{profile}`, {} line {}",
                dir.join(&setting.file).display(),
                setting.line
            ),
            None => format!(
                "`workDir` in {} line {}",
                dir.join(&setting.file).display(),
                setting.line
            ),
        };
        return match setting.literal {
            Some(value) => checked(&value, launch_dir, from, roots),
            None => Err(WorkDirError::Computed {
                text: setting.text,
                from,
            }),
        };
    }
    match nxf_work {
        Some(value) => checked(
            &value.to_string_lossy(),
            launch_dir,
            "NXF_WORK".to_owned(),
            roots,
        ),
        None => checked("work", launch_dir, "Nextflow's default".to_owned(), roots),
    }
}

/// `value` (a path, relative ones against `base`, or a URL), set by `from`, checked against
/// `roots`.
pub fn checked(
    value: &str,
    base: &Path,
    from: String,
    roots: &[PathBuf],
) -> Result<RunWorkDir, WorkDirError> {
    if let Some(scheme) = url_scheme(value) {
        let cloud = CLOUD_SCHEMES.contains(&scheme)
            && value
                .get(scheme.len()..)
                .is_some_and(|rest| rest.starts_with("://"));
        return if cloud {
            Ok(RunWorkDir {
                dir: WorkDir::Cloud(value.to_owned()),
                from,
            })
        } else {
            Err(WorkDirError::Scheme {
                dir: value.to_owned(),
                from,
            })
        };
    }
    if value.starts_with('~') {
        return Err(WorkDirError::Home {
            dir: value.to_owned(),
            from,
        });
    }
    let real = resolved(&base.join(value));
    let under = roots.iter().any(|root| {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
        real.starts_with(root)
    });
    if !under {
        let shown = if Path::new(value) == real {
            value.to_owned()
        } else {
            format!("{value}` → `{}", real.display())
        };
        return Err(WorkDirError::Outside {
            dir: shown,
            from,
            roots: roots
                .iter()
                .map(|root| format!("`{}`", root.display()))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(RunWorkDir {
        dir: WorkDir::Local(real),
        from,
    })
}

/// The scheme of `value` when Nextflow would read it as a URI (`scheme:/…`, as its file
/// helper does for any text holding `:/`), else `None`.
fn url_scheme(value: &str) -> Option<&str> {
    let (scheme, rest) = value.split_once(':')?;
    let mut chars = scheme.chars();
    let is_scheme = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (is_scheme && rest.starts_with('/')).then_some(scheme)
}

/// `path` (absolute) as the kernel would resolve it: while its components exist, each one's
/// symlinks are followed and `..` goes to the real parent; past the deepest existing one, the
/// rest is taken as written, `.` and `..` folded.
fn resolved(path: &Path) -> PathBuf {
    let mut real = PathBuf::from("/");
    let mut exists = true;
    for component in path.components() {
        match component {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            // `real` has no symlink in it while it exists, so its parent is the real one.
            Component::ParentDir => {
                real.pop();
            }
            Component::Normal(name) => {
                let next = real.join(name);
                real = match exists.then(|| std::fs::canonicalize(&next)) {
                    Some(Ok(found)) => found,
                    _ => {
                        exists = false;
                        next
                    }
                };
            }
        }
    }
    real
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(dir: &Path) -> Vec<PathBuf> {
        vec![dir.canonicalize().unwrap()]
    }

    #[test]
    fn a_local_dir_must_resolve_under_a_root() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let launch = root.path().join("pipe");
        std::fs::create_dir_all(&launch).unwrap();
        let roots = roots(root.path());
        let from = || "test".to_owned();

        let inside = checked("work", &launch, from(), &roots).unwrap();
        assert_eq!(
            inside.dir,
            WorkDir::Local(roots[0].join("pipe").join("work"))
        );
        for bad in ["/etc/x", "../../outside", "work/../../../x"] {
            let err = checked(bad, &launch, from(), &roots).unwrap_err();
            assert!(
                matches!(err, WorkDirError::Outside { .. }),
                "{bad}: {err:?}"
            );
            assert!(err.to_string().contains(bad), "{err}");
        }
        // A symlink out of the root, as `work` or as a component further up.
        std::os::unix::fs::symlink(outside.path(), launch.join("work")).unwrap();
        let err = checked("work", &launch, from(), &roots).unwrap_err();
        assert!(matches!(err, WorkDirError::Outside { .. }), "{err:?}");
        assert!(err.to_string().contains("→"), "{err}");
        assert!(checked("work/deeper/x", &launch, from(), &roots).is_err());
        // `..` after a symlink goes to the link's real parent, as the kernel takes it.
        std::fs::create_dir_all(outside.path().join("sub")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("sub"), launch.join("s")).unwrap();
        assert!(checked("s/../x", &launch, from(), &roots).is_err());
    }

    #[test]
    fn cloud_urls_pass_and_other_urls_and_home_paths_do_not() {
        let root = tempfile::tempdir().unwrap();
        let roots = roots(root.path());
        let from = || "test".to_owned();
        for url in ["s3://lab/work", "gs://lab/work", "az://lab/work"] {
            let ok = checked(url, root.path(), from(), &roots).unwrap();
            assert_eq!(ok.dir, WorkDir::Cloud(url.to_owned()));
            assert!(ok.line().contains("a cloud URL"), "{}", ok.line());
        }
        for url in ["file:/etc/x", "file:///etc/x", "http://h/x", "s3:/x"] {
            assert!(
                matches!(
                    checked(url, root.path(), from(), &roots),
                    Err(WorkDirError::Scheme { .. })
                ),
                "{url}"
            );
        }
        assert!(matches!(
            checked("~/work", root.path(), from(), &roots),
            Err(WorkDirError::Home { .. })
        ));
    }

    #[test]
    fn the_config_wins_over_nxf_work_and_the_launch_dir_s_over_the_pipeline_s() {
        let root = tempfile::tempdir().unwrap();
        let roots = roots(root.path());
        let pipeline = roots[0].join("pipe");
        let launch = roots[0].join("launch");
        std::fs::create_dir_all(&pipeline).unwrap();
        std::fs::create_dir_all(&launch).unwrap();
        let nxf_work = roots[0].join("nxf");
        let env = Some(nxf_work.as_os_str());
        let profiles = ["slurm".to_owned()];

        let default = run_work_dir(&pipeline, &launch, &profiles, None, None, &roots).unwrap();
        assert_eq!(default.dir, WorkDir::Local(launch.join("work")));
        let by_env = run_work_dir(&pipeline, &launch, &profiles, env, None, &roots).unwrap();
        assert_eq!(by_env.dir, WorkDir::Local(nxf_work.clone()));
        assert_eq!(by_env.from, "NXF_WORK");

        std::fs::write(
            pipeline.join("nextflow.config"),
            "profiles {\n  slurm {\n    workDir = 'scratch'\n  }\n}\n",
        )
        .unwrap();
        let by_profile = run_work_dir(&pipeline, &launch, &profiles, env, None, &roots).unwrap();
        assert_eq!(by_profile.dir, WorkDir::Local(launch.join("scratch")));
        assert!(
            by_profile.from.contains("profile `slurm`"),
            "{by_profile:?}"
        );
        // Not chosen: the profile's setting does not count.
        let other = run_work_dir(&pipeline, &launch, &[], env, None, &roots).unwrap();
        assert_eq!(other.dir, WorkDir::Local(nxf_work.clone()));

        std::fs::write(launch.join("nextflow.config"), "workDir = '/etc/x'\n").unwrap();
        let err = run_work_dir(&pipeline, &launch, &profiles, env, None, &roots).unwrap_err();
        assert!(err.to_string().contains("`/etc/x`"), "{err}");

        std::fs::write(
            launch.join("nextflow.config"),
            "workDir = \"${params.outdir}/work\"\n",
        )
        .unwrap();
        let err = run_work_dir(&pipeline, &launch, &profiles, env, None, &roots).unwrap_err();
        assert!(matches!(err, WorkDirError::Computed { .. }), "{err:?}");

        // A config Nextflow would read and this cannot is refused, not passed over.
        std::fs::write(launch.join("nextflow.config"), b"workDir = '/etc/\xff'\n").unwrap();
        let err = run_work_dir(&pipeline, &launch, &profiles, env, None, &roots).unwrap_err();
        assert!(matches!(err, WorkDirError::Unreadable { .. }), "{err:?}");
        // A missing `$NXF_HOME` or config there is nothing.
        let home = roots[0].join("no-home");
        std::fs::remove_file(launch.join("nextflow.config")).unwrap();
        let ok = run_work_dir(&pipeline, &launch, &profiles, env, Some(&home), &roots).unwrap();
        assert_eq!(ok.dir, WorkDir::Local(launch.join("scratch")));
    }

    /// The real nf-core pipeline template (crates/nextflow/tests/fixtures/nfcore-template, with
    /// its SOURCE.md): its nextflow.config and every profile it offers set no `workDir`, so a
    /// run of it works in `<launch dir>/work`; its `nf-test.config` (a computed `workDir`) is
    /// nf-test's alone and not read.
    #[test]
    fn the_real_nf_core_template_runs_in_its_launch_dir_s_work() {
        let template = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../nextflow/tests/fixtures/nfcore-template")
            .canonicalize()
            .unwrap();
        let roots = vec![template.clone()];
        for profiles in [
            vec![],
            vec!["test".to_owned(), "docker".to_owned()],
            vec!["singularity".to_owned()],
            vec!["test_full".to_owned(), "conda".to_owned()],
        ] {
            let found = run_work_dir(&template, &template, &profiles, None, None, &roots)
                .unwrap_or_else(|err| panic!("{profiles:?}: {err}"));
            assert_eq!(
                found.dir,
                WorkDir::Local(template.join("work")),
                "{profiles:?}"
            );
        }
    }
}
