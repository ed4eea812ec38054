//! A likely cause and a next step for an error, from its exit status, its stderr and its form.
//! Every sentence is a hint ("likely", "may"): the text shows symptoms, not the cause.

use serde::Serialize;

use super::block::{ErrorForm, RunError, clip};
pub(crate) use super::messages::is_signature;
use super::messages::{Found, from_messages};

/// The causes the diagnosis knows, most specific first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LikelyCause {
    /// A container image that could not be pulled, converted or started.
    ContainerPull,
    /// `Process requirement exceeds available memory|CPUs`.
    ResourcesExceeded,
    /// The grid scheduler refused the job (`sbatch: error`, `qsub`).
    SubmissionFailed,
    /// `Script compilation error`, `Unexpected input`: a script this Nextflow does not parse.
    CompileError,
    /// nf-schema / nf-validation refused a parameter or the samplesheet.
    Validation,
    /// S3 or another store refused access (`Access Denied`, status 403).
    CloudAccess,
    /// `No space left on device`, `Disk quota exceeded`.
    DiskFull,
    /// `Process exceeded running time limit`, exit 140, a scheduler's time limit.
    TimeLimit,
    /// Exit 134 or 139, `Segmentation fault`, `core dumped`.
    AbortSegfault,
    /// The task's work directory is not there where it runs (`cd: …: No such file or
    /// directory`, `.command.run: No such file or directory`).
    WorkDirMissing,
    /// Exit 127 or `command not found`.
    CommandNotFound,
    /// `java.lang.OutOfMemoryError` / `Java heap space`.
    JavaHeap,
    /// Exit 137, `Killed`, `Cannot allocate memory`, `std::bad_alloc`.
    OutOfMemory,
    /// Exit 143: SIGTERM, usually a scheduler's time or memory limit.
    Terminated,
    /// Exit 126 or `Permission denied`.
    PermissionDenied,
    /// `No such file or directory`.
    MissingFile,
    MissingOutput,
    ExternalKill,
    UndefinedVariable,
    UnknownMethod,
    ConfigSyntax,
    /// `Unknown configuration profile: 'x'`: the profile is not defined where the run looked.
    UnknownProfile,
    /// A download or connection that failed: a host not resolved, refused, timed out, or an
    /// HTTP error from a server other than a container registry or a cloud store.
    Network,
    /// The command inside the task failed on its own terms (a non-zero exit with a stderr
    /// that says why, and none of the signs above): the tool's message is the diagnosis.
    TaskError,
}

impl LikelyCause {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ContainerPull => "container_pull",
            Self::ResourcesExceeded => "resources_exceeded",
            Self::SubmissionFailed => "submission_failed",
            Self::CompileError => "compile_error",
            Self::Validation => "validation",
            Self::CloudAccess => "cloud_access",
            Self::DiskFull => "disk_full",
            Self::TimeLimit => "time_limit",
            Self::AbortSegfault => "abort_segfault",
            Self::WorkDirMissing => "work_dir_missing",
            Self::CommandNotFound => "command_not_found",
            Self::JavaHeap => "java_heap",
            Self::OutOfMemory => "out_of_memory",
            Self::Terminated => "terminated",
            Self::PermissionDenied => "permission_denied",
            Self::MissingFile => "missing_file",
            Self::MissingOutput => "missing_output",
            Self::ExternalKill => "external_kill",
            Self::UndefinedVariable => "undefined_variable",
            Self::UnknownMethod => "unknown_method",
            Self::ConfigSyntax => "config_syntax",
            Self::UnknownProfile => "unknown_profile",
            Self::Network => "network",
            Self::TaskError => "task_error",
        }
    }
}

/// A hint, never a verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnosis {
    pub cause: LikelyCause,
    /// What probably happened, in one sentence.
    pub hint: String,
    /// What to look at or change next.
    pub next_step: String,
}

/// The likely cause of `error`, or `None` when nothing in it is a known sign (an exit 1 whose
/// stderr says nothing recognised is the command's own failure: its stderr is the answer).
pub fn diagnose(error: &RunError) -> Option<Diagnosis> {
    let stderr = error.stderr.text();
    let stdout = error.stdout.text();
    let has = |needle: &str| stderr.contains(needle) || stdout.contains(needle);
    let process = error
        .process
        .as_deref()
        .map_or_else(|| "the process".to_string(), |p| format!("`{p}`"));
    if let Some((cause, hint, next_step)) = from_messages(error, &process) {
        return Some(Diagnosis {
            cause,
            hint,
            next_step,
        });
    }
    // One arm per sign, the most specific first: a Java heap error exits 1 and says so, an
    // exit 137 can print `Killed`, a 127 names the missing program.
    let (cause, hint, next_step) = match error.form {
        ErrorForm::NoSuchVariable => (
            LikelyCause::UndefinedVariable,
            format!(
                "likely a variable used before it is defined{}: a typo, or a channel, param or output not declared",
                subject(error)
            ),
            location_step(error, "check the spelling and where it is defined"),
        ),
        ErrorForm::UnknownMethod => (
            LikelyCause::UnknownMethod,
            format!(
                "likely a method or operator that does not exist on that value{}: a typo, or one this Nextflow version lacks",
                subject(error)
            ),
            location_step(error, "check the name against the Nextflow documentation for this version"),
        ),
        ErrorForm::ConfigError => (
            LikelyCause::ConfigSyntax,
            format!("likely a configuration file that does not parse{}", subject(error)),
            location_step(error, "fix the config at the position shown, then run again"),
        ),
        ErrorForm::MissingOutput => (
            LikelyCause::MissingOutput,
            format!(
                "the command may have succeeded without writing the declared output{}",
                subject(error)
            ),
            format!("compare {process}'s `output:` block with the files its script writes in the work dir"),
        ),
        // Bash running an option as a command: a line continuation lost above it, a bug in
        // the script rather than a program missing.
        _ if missing_program(&stderr).is_some_and(|tool| tool.starts_with('-')) => (
            LikelyCause::TaskError,
            format!(
                "likely {process}'s script broke a command across lines: bash ran the option `{}` as a program (a `\\` line continuation lost or followed by a space)",
                missing_program(&stderr).unwrap_or_default()
            ),
            "open `.command.sh` in the task's work dir and join the line that starts with that option to the command above it".to_string(),
        ),
        _ if error.exit_status == Some(127) || has("command not found") => (
            LikelyCause::CommandNotFound,
            match missing_program(&stderr) {
                Some(tool) => format!(
                    "likely `{tool}` is not installed in the task's container or environment"
                ),
                None => "likely a program the command calls is not installed in the task's container or environment".to_string(),
            },
            format!("check {process}'s `container`/`conda` directive and that the run uses a software profile (`-profile docker`, `singularity` or `conda`)"),
        ),
        _ if has("OutOfMemoryError")
            || has("Java heap space")
            || has("GC overhead limit exceeded") =>
        (
            LikelyCause::JavaHeap,
            "likely the Java program ran out of heap memory".to_string(),
            format!("raise {process}'s `memory` (and the tool's -Xmx if it sets one), then run again with -resume"),
        ),
        _ if error.exit_status == Some(137)
            || has("Cannot allocate memory")
            || has("std::bad_alloc")
            || has("oom-kill event")
            || has("out-of-memory handler")
            || stderr.lines().any(|l| l.trim_end().ends_with("Killed")) =>
        (
            LikelyCause::OutOfMemory,
            "likely the task was killed (SIGKILL), most often for using more memory than it was given".to_string(),
            format!("raise {process}'s `memory` (a `withName` selector or `resourceLimits`), then run again with -resume"),
        ),
        _ if error.exit_status == Some(143) => (
            LikelyCause::Terminated,
            "likely the task was stopped (SIGTERM), often by a scheduler's time or memory limit".to_string(),
            format!("check the scheduler's record of the job and raise {process}'s `time` or `memory`"),
        ),
        _ if error.exit_status == Some(126) || has("Permission denied") => (
            LikelyCause::PermissionDenied,
            "likely a file the command runs or writes lacks permission (a script without the executable bit, a read-only path)".to_string(),
            "check the modes of the scripts in the pipeline's `bin/` and of the paths the command writes".to_string(),
        ),
        _ if has("No such file or directory") => (
            LikelyCause::MissingFile,
            "likely a file the command names is not in the work dir: an input not staged, or a path outside it".to_string(),
            "check the task's inputs (staged as links in the work dir) and the paths its script uses".to_string(),
        ),
        ErrorForm::UnknownTermination => (
            LikelyCause::ExternalKill,
            "the task may have been ended by the system (a scheduler, the OOM killer) before it wrote an exit status".to_string(),
            "read `.command.log` in the work dir and the scheduler's record of the job".to_string(),
        ),
        _ => task_error(error, &stderr, &stdout)?,
    };
    Some(Diagnosis {
        cause,
        hint,
        next_step,
    })
}

/// A task that exited non-zero and wrote why: its own message, quoted, is the likely cause.
/// Only with an exit status (a task's: a run-level error has none), so an error without words
/// of its own stays unknown rather than being blamed on a tool.
fn task_error(error: &RunError, stderr: &str, stdout: &str) -> Option<Found> {
    let status = error.exit_status.filter(|s| *s != 0)?;
    let process = error
        .process
        .as_deref()
        .map_or_else(|| "the task".to_string(), |p| format!("`{p}`"));
    let said = telling_line(stderr).or_else(|| telling_line(stdout))?;
    Some((
        LikelyCause::TaskError,
        format!(
            "likely {process}'s command failed on its own terms (exit {status}); it says: `{}`",
            clip(said)
        ),
        "fix what that message names (an input file, an option, a reference), check it by running `.command.sh` in the task's work dir, then run again with -resume".to_string(),
    ))
}

/// The line of a task's output that says what went wrong: the first with a word of failure,
/// else the last one written.
fn telling_line(text: &str) -> Option<&str> {
    const WORDS: &[&str] = &[
        "error",
        "fail",
        "invalid",
        "unexpected",
        "usage:",
        "cannot",
        "can't",
        "unable",
        "not found",
        "exception",
        "fatal",
        "abort",
    ];
    let lines = || text.lines().map(str::trim).filter(|l| !l.is_empty());
    lines()
        .find(|l| {
            let lower = l.to_ascii_lowercase();
            WORDS.iter().any(|w| lower.contains(w))
        })
        .or_else(|| lines().next_back())
}

fn subject(error: &RunError) -> String {
    error
        .subject
        .as_deref()
        .map(|s| format!(" (`{}`)", clip(s)))
        .unwrap_or_default()
}

pub(super) fn location_step(error: &RunError, what: &str) -> String {
    match &error.location {
        Some(loc) => match loc.line {
            Some(line) => format!("{what}: `{}` line {line}", loc.file),
            None => format!("{what}: `{}`", loc.file),
        },
        None => what.to_string(),
    }
}

/// `bash: fastqc: command not found`, `.command.sh: line 2: fastqc: command not found`, and
/// `env: ‘singularity’: No such file or directory` (the wrapper starting a container engine
/// the machine lacks).
fn missing_program(stderr: &str) -> Option<String> {
    stderr.lines().find_map(|line| {
        let line = line.trim();
        if let Some(head) = line.strip_suffix(": command not found") {
            let tool = head.rsplit(": ").next()?.trim();
            return (!tool.is_empty()).then(|| clip(tool));
        }
        let quoted = line
            .strip_prefix("env: ")?
            .strip_suffix(": No such file or directory")?;
        let tool = quoted.trim_matches(['‘', '’', '\'', '"', '`']);
        (!tool.is_empty() && !tool.contains('/')).then(|| clip(tool))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_missing_program_is_named() {
        assert_eq!(
            missing_program(".command.sh: line 2: fastqc: command not found").as_deref(),
            Some("fastqc")
        );
        assert_eq!(
            missing_program("env: ‘singularity’: No such file or directory").as_deref(),
            Some("singularity")
        );
        assert_eq!(
            missing_program("env: ‘/opt/x/run.sh’: No such file or directory"),
            None
        );
        assert_eq!(missing_program("all good"), None);
    }
}
