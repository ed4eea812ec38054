//! `codaris doctor`'s executor profiles: for each profile in `[nextflow] profiles` that names
//! one of Nextflow's distributed executors, what a run with it needs from this machine — the
//! scheduler's client programs (found on the daemon's PATH and readable by the sandbox's
//! commands) and, for Slurm, munge's socket; for a cloud executor, its credentials, which a
//! run gets only through a variable `tools.env_passthrough` lists or a file commands can read
//! — each found or named as missing.
//!
//! Known by name only (`slurm`, `pbs`, `pbspro`, `sge`, `lsf`, `awsbatch`, `google_batch`,
//! `k8s`): an institution's nf-core/configs profile that sets `process.executor` itself is not
//! read here.

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
        "google_batch" => Needs {
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

/// Checks each executor profile of `profiles`: clients on `path` and readable by commands
/// (`readable`), munge's socket at `munge` for Slurm, credentials in `env` (and passed to
/// commands: `passthrough`, `tools.env_passthrough`) or in a file under `home` commands can read.
pub fn check_executors(
    profiles: &[String],
    passthrough: &[String],
    path: Option<&OsStr>,
    env: &dyn Fn(&str) -> Option<String>,
    home: Option<&Path>,
    munge: &Path,
    readable: &dyn Fn(&Path) -> bool,
) -> Vec<ExecutorCheck> {
    profiles
        .iter()
        .filter_map(|profile| {
            let needs = needs(profile)?;
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
                    (Some(var), _) if passthrough.iter().any(|p| p == var) => {
                        found.push(format!("credentials named by `{var}`, passed to commands"));
                    }
                    (Some(var), _) => missing.push(format!(
                        "`{var}` is set for the daemon but commands do not get it: add it to `tools.env_passthrough`"
                    )),
                    (None, Some(file)) if readable(&file) => {
                        found.push(format!("credentials in {}", file.display()));
                    }
                    (None, Some(file)) => missing.push(format!(
                        "commands cannot read `{}` (the sandbox hides it): name the credentials by a variable in `tools.env_passthrough`",
                        file.display()
                    )),
                    (None, None) => missing.push(format!(
                        "no credentials: set one of {} for the daemon and list it in `tools.env_passthrough`",
                        needs
                            .credential_vars
                            .iter()
                            .map(|v| format!("`{v}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                }
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
        let checks = check_executors(
            &profiles,
            &[],
            Some(bin.as_os_str()),
            &none,
            Some(dir.path()),
            &dir.path().join("no-munge"),
            &|_| true,
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

        // Everything there: no problem.
        program(&bin, "scancel");
        let munge = dir.path().join("munge.socket.2");
        std::fs::write(&munge, "").unwrap();
        let env = |name: &str| (name == "AWS_PROFILE").then(|| "lab".to_owned());
        let passed = ["AWS_PROFILE".to_owned()];
        let checks = check_executors(
            &profiles,
            &passed,
            Some(bin.as_os_str()),
            &env,
            None,
            &munge,
            &|_| true,
        );
        assert!(checks.iter().all(|c| c.problem.is_none()), "{checks:?}");
        // Set for the daemon, not passed to commands: named.
        let checks = check_executors(
            &profiles[3..],
            &[],
            Some(bin.as_os_str()),
            &env,
            None,
            &munge,
            &|_| true,
        );
        assert!(
            checks[0]
                .problem
                .as_deref()
                .is_some_and(|p| p.contains("add it to `tools.env_passthrough`")),
            "{checks:?}"
        );
        // A client the sandbox cannot read is named as such.
        let checks = check_executors(
            &profiles[2..3],
            &[],
            Some(bin.as_os_str()),
            &none,
            None,
            &munge,
            &|_| false,
        );
        assert!(
            checks[0]
                .problem
                .as_deref()
                .is_some_and(|p| p.contains("tools.sandbox_readable")),
            "{checks:?}"
        );
    }
}
