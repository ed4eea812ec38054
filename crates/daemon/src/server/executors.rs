//! `codaris doctor`'s executor profiles: for each profile in `[nextflow] profiles` that names
//! one of Nextflow's distributed executors, what a run with it needs from this machine — the
//! scheduler's client programs (found on the daemon's PATH and readable by the sandbox's
//! commands) and, for Slurm, munge's socket; for a cloud executor, its credentials, which a
//! run gets only through a variable `nextflow.pass_env` (or `tools.env_passthrough`) lists or
//! a file commands can read; and the work directory — each found or named as missing.
//!
//! Without a pipeline, known by name only (`slurm`, `pbs`, `pbspro`, `sge`, `lsf`, `awsbatch`,
//! `google_batch`, `k8s`), and the work dir named is `NXF_WORK`'s, which a pipeline's `workDir`
//! overrides (each launch checks the one it will use). With one (`codaris doctor --pipeline`),
//! each profile is read as a launch of that pipeline reads it: the `process.executor` its
//! config sets (so an institution's profile of any name counts) and the work dir the run would
//! use, checked as the launch checks it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// munge's socket, which Slurm's clients authenticate through.
pub const MUNGE_SOCKET: &str = "/run/munge/munge.socket.2";

/// What one executor profile needs, and what of it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutorCheck {
    pub profile: String,
    /// Nextflow's executor name (`slurm`, `awsbatch`, …).
    pub executor: &'static str,
    /// What was found, one item each (`sbatch at /usr/bin/sbatch`).
    pub found: Vec<String>,
    /// What is missing, one line; `None` when nothing is.
    pub problem: Option<String>,
}

/// What an executor needs: its client programs, and the places its credentials are read from.
struct Needs {
    executor: &'static str,
    clients: &'static [&'static str],
    /// Environment variables any one of which names the credentials, and home-relative
    /// files any one of which holds them.
    credential_vars: &'static [&'static str],
    credential_files: &'static [&'static str],
}

/// What a run with the executor a profile name (or Nextflow's `process.executor` value)
/// stands for needs; `None` for a local one or a name that stands for none.
fn needs(profile: &str) -> Option<Needs> {
    let grid = |executor, clients| Needs {
        executor,
        clients,
        credential_vars: &[],
        credential_files: &[],
    };
    Some(match profile {
        "slurm" => grid("slurm", &["sbatch", "squeue", "scancel"]),
        "pbs" | "pbspro" => grid("pbspro", &["qsub", "qstat", "qdel"]),
        "sge" => grid("sge", &["qsub", "qstat", "qdel"]),
        "lsf" => grid("lsf", &["bsub", "bjobs", "bkill"]),
        "awsbatch" => Needs {
            executor: "awsbatch",
            clients: &[],
            credential_vars: &["AWS_ACCESS_KEY_ID", "AWS_PROFILE"],
            credential_files: &[".aws/credentials", ".aws/config"],
        },
        "google_batch" | "google-batch" => Needs {
            executor: "google-batch",
            clients: &[],
            credential_vars: &["GOOGLE_APPLICATION_CREDENTIALS"],
            credential_files: &[".config/gcloud/application_default_credentials.json"],
        },
        "k8s" | "kubernetes" => Needs {
            executor: "k8s",
            clients: &[],
            credential_vars: &["KUBECONFIG"],
            credential_files: &[".kube/config"],
        },
        _ => return None,
    })
}

fn on_path(name: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// What the checks read of this machine and the configuration.
pub struct Machine<'a> {
    /// `tools.env_passthrough`: variables every command gets.
    pub passthrough: &'a [String],
    /// `nextflow.pass_env`: variables a pipeline run's `nextflow` gets.
    pub pass_env: &'a [String],
    /// `allowed_dirs`, which a local work directory must be under.
    pub allowed_dirs: &'a [PathBuf],
    /// The daemon's PATH.
    pub path: Option<&'a OsStr>,
    /// The daemon's environment.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    pub home: Option<&'a Path>,
    /// munge's socket.
    pub munge: &'a Path,
    /// Whether the sandbox's commands can read a path.
    pub readable: &'a dyn Fn(&Path) -> bool,
    /// The pipeline whose config each profile is read in (`codaris doctor --pipeline`).
    pub pipeline: Option<&'a Path>,
}

impl std::fmt::Debug for Machine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Machine")
            .field("passthrough", &self.passthrough)
            .field("pass_env", &self.pass_env)
            .field("allowed_dirs", &self.allowed_dirs)
            .field("home", &self.home)
            .field("munge", &self.munge)
            .field("pipeline", &self.pipeline)
            .finish_non_exhaustive()
    }
}

/// Checks each executor profile of `profiles` on `machine`: clients on its PATH and readable
/// by commands, munge's socket for Slurm, credentials in its environment (and passed to
/// runs: `nextflow.pass_env` or `tools.env_passthrough`) or in a file under its home commands
/// can read, and the work directory `NXF_WORK` gives.
pub fn check_executors(profiles: &[String], machine: &Machine<'_>) -> Vec<ExecutorCheck> {
    let Machine {
        passthrough,
        pass_env,
        path,
        env,
        home,
        munge,
        readable,
        pipeline,
        ..
    } = *machine;
    let config =
        pipeline.and_then(|dir| codaris_nextflow::parse::load_config(dir, "nextflow.config").ok());
    profiles
        .iter()
        .filter_map(|profile| {
            // The executor the pipeline's config sets for the profile wins over its name.
            let set = config.as_ref().and_then(|config| {
                codaris_nextflow::executor::ExecutorSettings::of(config, std::slice::from_ref(profile))
                    .executor
                    .map(|(executor, _)| executor)
            });
            let needs = match set {
                Some(executor) => needs(&executor)?,
                None => needs(profile)?,
            };
            let mut found = Vec::new();
            let mut missing = Vec::new();
            for client in needs.clients {
                match on_path(client, path) {
                    Some(at) => {
                        let real = std::fs::canonicalize(&at).unwrap_or(at);
                        if readable(&real) {
                            found.push(format!("{client} at {}", real.display()));
                        } else {
                            missing.push(format!(
                                "commands cannot read `{}`: add its directory to `tools.sandbox_readable`",
                                real.display()
                            ));
                        }
                    }
                    None => missing.push(format!("`{client}` is not on PATH")),
                }
            }
            if needs.executor == "slurm" {
                if munge.exists() {
                    found.push(format!("munge socket at {}", munge.display()));
                } else {
                    missing.push(format!(
                        "no munge socket at `{}` (Slurm's clients authenticate through it)",
                        munge.display()
                    ));
                }
            }
            if !needs.credential_vars.is_empty() {
                let var = needs
                    .credential_vars
                    .iter()
                    .find(|var| env(var).is_some_and(|v| !v.is_empty()));
                let file = home.and_then(|home| {
                    needs
                        .credential_files
                        .iter()
                        .map(|file| home.join(file))
                        .find(|file| file.is_file())
                });
                match (var, file) {
                    (Some(var), _) if pass_env.iter().any(|p| p == var) => {
                        found.push(format!(
                            "credentials named by `{var}`, passed to pipeline runs (`nextflow.pass_env`)"
                        ));
                    }
                    (Some(var), _) if passthrough.iter().any(|p| p == var) => {
                        found.push(format!(
                            "credentials named by `{var}`, passed to every command (`tools.env_passthrough`; `nextflow.pass_env` passes it to pipeline runs alone)"
                        ));
                    }
                    (Some(var), _) => missing.push(format!(
                        "`{var}` is set for the daemon but runs do not get it: add it to `nextflow.pass_env`"
                    )),
                    (None, Some(file)) if readable(&file) => {
                        found.push(format!("credentials in {}", file.display()));
                    }
                    (None, Some(file)) => missing.push(format!(
                        "commands cannot read `{}` (the sandbox hides it): name the credentials by a variable in `nextflow.pass_env`",
                        file.display()
                    )),
                    (None, None) => missing.push(format!(
                        "no credentials: set one of {} for the daemon and list it in `nextflow.pass_env`",
                        needs
                            .credential_vars
                            .iter()
                            .map(|v| format!("`{v}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                }
            }
            let work_dir = match pipeline {
                Some(pipeline) => pipeline_work_dir(&needs, profile, pipeline, machine),
                None => work_dir(&needs, machine),
            };
            match work_dir {
                Ok(line) => found.push(line),
                Err(problem) => missing.push(problem),
            }
            Some(ExecutorCheck {
                profile: profile.clone(),
                executor: needs.executor,
                found,
                problem: (!missing.is_empty()).then(|| missing.join("; ")),
            })
        })
        .collect()
}

/// The work directory a run with `needs`' executor would use as far as the daemon knows
/// (`NXF_WORK`; a pipeline's `workDir` wins over it), and whether it is allowed: a cloud URL,
/// or a path under `allowed_dirs`. A cloud batch executor needs a bucket.
fn work_dir(needs: &Needs, machine: &Machine<'_>) -> Result<String, String> {
    use codaris_tools::nextflow::work_dir::{WorkDir, checked};
    let bucket = match needs.executor {
        "awsbatch" => Some("s3://"),
        "google-batch" => Some("gs://"),
        _ => None,
    };
    let Some(value) = (machine.env)("NXF_WORK").filter(|v| !v.is_empty()) else {
        return Ok(match bucket {
            Some(scheme) => format!(
                "work dir: NXF_WORK is not set; the pipeline's `workDir` for this profile must be a `{scheme}…` URL (each launch checks it)"
            ),
            None => "work dir: NXF_WORK is not set; the pipeline's `workDir` for this profile, else `work` in the launch directory, under the session's roots (each launch checks it)".to_owned(),
        });
    };
    if !Path::new(&value).is_absolute() && !value.contains(":/") {
        return Ok(format!(
            "work dir `{value}` (NXF_WORK), in each run's launch directory"
        ));
    }
    let checked = checked(
        &value,
        Path::new("/"),
        "NXF_WORK".to_owned(),
        machine.allowed_dirs,
    )
    .map_err(|err| format!("{err}"))?;
    match (&checked.dir, bucket) {
        (WorkDir::Local(dir), Some(scheme)) => Err(format!(
            "the work dir `{}` (NXF_WORK) is local; `{}` runs need a `{scheme}…` URL",
            dir.display(),
            needs.executor
        )),
        (WorkDir::Local(dir), None) => Ok(format!(
            "work dir {} (NXF_WORK), under `allowed_dirs`",
            dir.display()
        )),
        (WorkDir::Cloud(url), _) => Ok(format!("work dir {url} (NXF_WORK), a cloud URL")),
    }
}

/// The work directory a run of `pipeline` (launched from its own directory) with `profile`
/// would use, found and checked as the launch finds and checks it; a cloud batch executor
/// needs a bucket.
fn pipeline_work_dir(
    needs: &Needs,
    profile: &str,
    pipeline: &Path,
    machine: &Machine<'_>,
) -> Result<String, String> {
    use codaris_tools::nextflow::work_dir::{WorkDir, run_work_dir};
    let nxf_work = (machine.env)("NXF_WORK").filter(|v| !v.is_empty());
    let nxf_home = (machine.env)("NXF_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| machine.home.map(|home| home.join(".nextflow")));
    let found = run_work_dir(
        pipeline,
        pipeline,
        &[profile.to_owned()],
        nxf_work.as_deref().map(OsStr::new),
        nxf_home.as_deref(),
        machine.allowed_dirs,
    )
    .map_err(|err| err.to_string())?;
    let bucket = match needs.executor {
        "awsbatch" => Some("s3://"),
        "google-batch" => Some("gs://"),
        _ => None,
    };
    match (&found.dir, bucket) {
        (WorkDir::Local(dir), Some(scheme)) => Err(format!(
            "the work dir `{}` is local; `{}` runs need a `{scheme}…` URL",
            dir.display(),
            needs.executor
        )),
        _ => Ok(found.line()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(dir: &Path, name: &str) {
        use std::os::unix::fs::PermissionsExt as _;
        let path = dir.join(name);
        std::fs::write(
            &path,
            "#!/bin/sh\n# codaris stand-in (not a scheduler client)\n",
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn machine<'a>(
        path: &'a Path,
        env: &'a dyn Fn(&str) -> Option<String>,
        home: Option<&'a Path>,
        munge: &'a Path,
        readable: &'a dyn Fn(&Path) -> bool,
    ) -> Machine<'a> {
        Machine {
            passthrough: &[],
            pass_env: &[],
            allowed_dirs: &[],
            path: Some(path.as_os_str()),
            env,
            home,
            munge,
            readable,
            pipeline: None,
        }
    }

    #[test]
    fn a_missing_client_socket_or_credential_is_named_and_local_profiles_are_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        program(&bin, "sbatch");
        program(&bin, "squeue");
        let profiles: Vec<String> = ["test", "docker", "slurm", "awsbatch"]
            .map(str::to_owned)
            .to_vec();
        let none = |_: &str| None;
        let no_munge = dir.path().join("no-munge");
        let checks = check_executors(
            &profiles,
            &machine(&bin, &none, Some(dir.path()), &no_munge, &|_| true),
        );
        assert_eq!(checks.len(), 2, "{checks:?}");
        assert_eq!(checks[0].profile, "slurm");
        let problem = checks[0].problem.clone().unwrap_or_default();
        assert!(problem.contains("`scancel` is not on PATH"), "{problem}");
        assert!(problem.contains("no munge socket at"), "{problem}");
        assert!(checks[0].found.iter().any(|f| f.starts_with("sbatch at ")));
        let aws = checks[1].problem.clone().unwrap_or_default();
        assert!(
            aws.starts_with("no credentials: set one of `AWS_ACCESS_KEY_ID`"),
            "{aws}"
        );
        assert!(aws.contains("list it in `nextflow.pass_env`"), "{aws}");

        // Everything there: no problem.
        program(&bin, "scancel");
        let munge = dir.path().join("munge.socket.2");
        std::fs::write(&munge, "").unwrap();
        let env = |name: &str| (name == "AWS_PROFILE").then(|| "lab".to_owned());
        let passed = ["AWS_PROFILE".to_owned()];
        let checks = check_executors(
            &profiles,
            &Machine {
                pass_env: &passed,
                ..machine(&bin, &env, None, &munge, &|_| true)
            },
        );
        assert!(checks.iter().all(|c| c.problem.is_none()), "{checks:?}");
        assert!(
            checks[1]
                .found
                .iter()
                .any(|f| f.contains("passed to pipeline runs (`nextflow.pass_env`)")),
            "{checks:?}"
        );
        // `tools.env_passthrough` counts too, and is named as the wider of the two.
        let checks = check_executors(
            &profiles[3..],
            &Machine {
                passthrough: &passed,
                ..machine(&bin, &env, None, &munge, &|_| true)
            },
        );
        assert!(checks[0].problem.is_none(), "{checks:?}");
        // Set for the daemon, not passed to runs: named, with the narrower advice.
        let checks = check_executors(
            &profiles[3..],
            &machine(&bin, &env, None, &munge, &|_| true),
        );
        assert!(
            checks[0]
                .problem
                .as_deref()
                .is_some_and(|p| p.contains("add it to `nextflow.pass_env`")),
            "{checks:?}"
        );
        // A client the sandbox cannot read is named as such.
        let checks = check_executors(
            &profiles[2..3],
            &machine(&bin, &none, None, &munge, &|_| false),
        );
        assert!(
            checks[0]
                .problem
                .as_deref()
                .is_some_and(|p| p.contains("tools.sandbox_readable")),
            "{checks:?}"
        );
    }

    #[test]
    fn the_work_dir_nxf_work_gives_is_named_and_held_to_the_allowed_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let scratch = dir.path().canonicalize().unwrap().join("scratch");
        std::fs::create_dir_all(&scratch).unwrap();
        let allowed = [scratch.clone()];
        let slurm = ["slurm".to_owned()];
        let aws = ["awsbatch".to_owned()];
        let munge = dir.path().join("munge");
        let work_dir = |profiles: &[String], nxf_work: Option<&str>| {
            let env = |name: &str| match name {
                "NXF_WORK" => nxf_work.map(str::to_owned),
                "AWS_PROFILE" => Some("lab".to_owned()),
                _ => None,
            };
            let passed = ["AWS_PROFILE".to_owned()];
            let check = check_executors(
                profiles,
                &Machine {
                    allowed_dirs: &allowed,
                    pass_env: &passed,
                    ..machine(dir.path(), &env, None, &munge, &|_| true)
                },
            )
            .remove(0);
            let found = check.found.iter().find(|f| f.contains("work dir")).cloned();
            (found, check.problem.unwrap_or_default())
        };
        let inside = scratch.join("work").display().to_string();
        let (found, _) = work_dir(&slurm, Some(&inside));
        assert_eq!(
            found,
            Some(format!(
                "work dir {inside} (NXF_WORK), under `allowed_dirs`"
            ))
        );
        let (found, problem) = work_dir(&slurm, Some("/etc/x"));
        assert_eq!(found, None);
        assert!(
            problem.contains("the work dir `/etc/x` (NXF_WORK) is outside"),
            "{problem}"
        );
        let (found, problem) = work_dir(&aws, Some("s3://lab/work"));
        assert_eq!(
            found.as_deref(),
            Some("work dir s3://lab/work (NXF_WORK), a cloud URL")
        );
        assert_eq!(problem, "");
        let (_, problem) = work_dir(&aws, Some(&inside));
        assert!(problem.contains("runs need a `s3://…` URL"), "{problem}");
        let (found, _) = work_dir(&slurm, None);
        assert!(
            found.is_some_and(|f| f.contains("NXF_WORK is not set")),
            "doctor says it cannot know the pipeline's"
        );
    }

    /// With a pipeline, a profile of any name counts by the executor its config sets (an
    /// institution's `cluster`), and the work dir is the one a launch of it would use, checked
    /// as the launch checks it: the profile's `workDir` wins over NXF_WORK, and one outside the
    /// allowed folders is named with what set it.
    #[test]
    fn with_a_pipeline_a_profile_counts_by_its_executor_and_its_own_work_dir() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (pipeline, scratch) = (root.join("pipe"), root.join("scratch"));
        std::fs::create_dir_all(&pipeline).unwrap();
        std::fs::create_dir_all(&scratch).unwrap();
        let bin = root.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        for client in ["sbatch", "squeue", "scancel"] {
            program(&bin, client);
        }
        let munge = root.join("munge");
        std::fs::write(&munge, "").unwrap();
        let allowed = [pipeline.clone(), scratch.clone()];
        let check = |config: &str, profile: &str| {
            std::fs::write(pipeline.join("nextflow.config"), config).unwrap();
            let env = |name: &str| (name == "NXF_WORK").then(|| "/etc/nxf-work".to_owned());
            check_executors(
                &[profile.to_owned()],
                &Machine {
                    allowed_dirs: &allowed,
                    pipeline: Some(&pipeline),
                    ..machine(&bin, &env, None, &munge, &|_| true)
                },
            )
        };
        let inside = scratch.join("work");
        let checks = check(
            &format!(
                "profiles {{\n  cluster {{\n    process.executor = 'slurm'\n    workDir = '{}'\n  }}\n}}\n",
                inside.display()
            ),
            "cluster",
        );
        assert_eq!(checks.len(), 1, "{checks:?}");
        assert_eq!(checks[0].executor, "slurm");
        assert_eq!(checks[0].problem, None, "{checks:?}");
        assert!(
            checks[0].found.iter().any(|f| f.starts_with(&format!(
                "work dir: {} (`workDir` of profile `cluster`",
                inside.display()
            ))),
            "{checks:?}"
        );

        let checks = check(
            "profiles {\n  cluster {\n    process.executor = 'slurm'\n    workDir = '/etc/x'\n  }\n}\n",
            "cluster",
        );
        let problem = checks[0].problem.clone().unwrap_or_default();
        assert!(
            problem.contains("the work dir `/etc/x` (`workDir` of profile `cluster`")
                && problem.contains("is outside the session's roots"),
            "{problem}"
        );
        // A profile that sets no executor of a cluster is not one, whatever it is called.
        assert!(check("profiles {\n  slurm_like { }\n}\n", "slurm_like").is_empty());
    }
}
