//! The scheduler's own word on a run's jobs: `squeue` for a job still queued or running (its
//! state and the reason it waits), `sacct` for one that left the queue. Only asked where the
//! client is on PATH; its absence is said, never guessed around.
//!
//! Formats (Slurm's documentation, slurm.schedmd.com/squeue.html and /sacct.html):
//! `squeue --noheader --jobs 4242,4243 --format %i|%T|%r` prints `4242|PENDING|Resources`;
//! `sacct --noheader --parsable2 --allocations --jobs 4243 --format JobID,State,ExitCode`
//! prints `4243|COMPLETED|0:0`.

use std::ffi::OsStr;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one scheduler command may take: a busy controller answers slowly, and a status
/// should not hang on it.
const ASK_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of a command's output read.
const MAX_OUTPUT: u64 = 64 * 1024;

/// A Slurm job id: digits, an array task (`4242_7`) or a het job part (`4242+1`).
fn is_slurm_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 32
        && id.starts_with(|c: char| c.is_ascii_digit())
        && id
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '_' | '+'))
}

/// `name` as found on `path` (an executable file), if it is there.
fn on_path(name: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs `program args`, its output as text, or why not; killed past [`ASK_TIMEOUT`].
fn ask(program: &Path, args: &[&str]) -> Result<String, String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|err| format!("cannot run `{}`: {err}", program.display()))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < ASK_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`{}` gave no answer in {}s",
                    program.display(),
                    ASK_TIMEOUT.as_secs()
                ));
            }
            Err(err) => return Err(format!("`{}`: {err}", program.display())),
        }
    }
    let mut out = String::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = stdout.take(MAX_OUTPUT).read_to_string(&mut out);
    }
    Ok(out)
}

/// `id|field|field` lines by their first field.
fn rows(text: &str) -> Vec<(String, Vec<String>)> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.trim().split('|').map(str::trim);
            let id = fields.next().filter(|id| !id.is_empty())?;
            Some((id.to_owned(), fields.map(str::to_owned).collect()))
        })
        .collect()
}

/// One line per job of `ids` that looks like a Slurm job: its state as `squeue` (queued,
/// running) or `sacct` (ended) says, or that neither is on `path` to ask. Other executors'
/// ids (a Batch job's) are left to their own consoles: no line.
pub(super) fn scheduler_states(ids: &[&str], path: Option<&OsStr>) -> Vec<String> {
    let ids: Vec<&str> = ids.iter().copied().filter(|id| is_slurm_id(id)).collect();
    if ids.is_empty() {
        return Vec::new();
    }
    let (squeue, sacct) = (on_path("squeue", path), on_path("sacct", path));
    if squeue.is_none() && sacct.is_none() {
        return vec![format!(
            "squeue and sacct are not on PATH: the state of job {} is unknown here",
            ids.join(", ")
        )];
    }
    let list = ids.join(",");
    let mut lines = Vec::new();
    let mut queued: Vec<(String, Vec<String>)> = Vec::new();
    if let Some(squeue) = &squeue {
        match ask(
            squeue,
            &["--noheader", "--jobs", &list, "--format", "%i|%T|%r"],
        ) {
            Ok(text) => queued = rows(&text),
            Err(why) => lines.push(why),
        }
    }
    let mut ended: Vec<(String, Vec<String>)> = Vec::new();
    let left: Vec<&str> = ids
        .iter()
        .copied()
        .filter(|id| !queued.iter().any(|(q, _)| q == id))
        .collect();
    if let (Some(sacct), false) = (&sacct, left.is_empty()) {
        match ask(
            sacct,
            &[
                "--noheader",
                "--parsable2",
                "--allocations",
                "--jobs",
                &left.join(","),
                "--format",
                "JobID,State,ExitCode",
            ],
        ) {
            Ok(text) => ended = rows(&text),
            Err(why) => lines.push(why),
        }
    }
    for id in ids {
        let line = if let Some((_, fields)) = queued.iter().find(|(q, _)| q == id) {
            let state = fields.first().map_or("", String::as_str);
            match fields.get(1).map(String::as_str) {
                Some(reason) if !reason.is_empty() && reason != "None" => {
                    format!("job {id}: {state} ({reason}) per squeue")
                }
                _ => format!("job {id}: {state} per squeue"),
            }
        } else if let Some((_, fields)) = ended.iter().find(|(e, _)| e == id) {
            format!(
                "job {id}: {}, exit {} per sacct",
                fields.first().map_or("", String::as_str),
                fields.get(1).map_or("", String::as_str)
            )
        } else {
            match (&squeue, &sacct) {
                (Some(_), Some(_)) => format!("job {id}: known to neither squeue nor sacct"),
                (Some(_), None) => {
                    format!("job {id}: not in squeue's queue (ended?); sacct is not on PATH")
                }
                _ => format!("job {id}: not in sacct's records; squeue is not on PATH"),
            }
        };
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in program in `dir` that names itself and prints `out`.
    fn stand_in(dir: &Path, name: &str, out: &str) {
        use std::os::unix::fs::PermissionsExt as _;
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\n# codaris stand-in `{name}` for the scheduler tests (not Slurm)\necho \"$@\" >> \"$(dirname \"$0\")/{name}.args\"\nprintf '%s' '{out}'\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn without_the_clients_the_state_is_said_unknown_and_batch_ids_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().as_os_str();
        assert_eq!(
            scheduler_states(&["4242", "4243_1"], Some(path)),
            ["squeue and sacct are not on PATH: the state of job 4242, 4243_1 is unknown here"]
        );
        assert!(scheduler_states(&["ca1878f1-169c-4013-b30d-c5807ea1a3dd"], Some(path)).is_empty());
        assert!(scheduler_states(&["4242;rm"], Some(path)).is_empty());
    }

    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the test reads the arguments its stand-ins recorded"
    )]
    fn squeue_says_why_a_job_waits_and_sacct_how_one_ended() {
        let dir = tempfile::tempdir().unwrap();
        stand_in(dir.path(), "squeue", "4242|PENDING|Resources\n");
        stand_in(dir.path(), "sacct", "4243|COMPLETED|0:0\n");
        let lines = scheduler_states(&["4242", "4243", "4244"], Some(dir.path().as_os_str()));
        assert_eq!(
            lines,
            [
                "job 4242: PENDING (Resources) per squeue",
                "job 4243: COMPLETED, exit 0:0 per sacct",
                "job 4244: known to neither squeue nor sacct",
            ]
        );
        let asked = std::fs::read_to_string(dir.path().join("squeue.args")).unwrap();
        assert_eq!(
            asked.trim(),
            "--noheader --jobs 4242,4243,4244 --format %i|%T|%r"
        );
        let asked = std::fs::read_to_string(dir.path().join("sacct.args")).unwrap();
        assert!(asked.contains("--jobs 4243,4244"), "{asked}");
    }
}
