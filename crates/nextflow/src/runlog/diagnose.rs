//! A likely cause and a next step for an error, from its exit status, its stderr and its form.
//! Every sentence is a hint ("likely", "may"): the text shows symptoms, not the cause.

use serde::Serialize;

use super::block::{ErrorForm, RunError, clip};

/// The causes the diagnosis knows, most specific first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LikelyCause {
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
}

impl LikelyCause {
    pub fn as_str(self) -> &'static str {
        match self {
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
        _ if has("OutOfMemoryError") || has("Java heap space") => (
            LikelyCause::JavaHeap,
            "likely the Java program ran out of heap memory".to_string(),
            format!("raise {process}'s `memory` (and the tool's -Xmx if it sets one), then run again with -resume"),
        ),
        _ if error.exit_status == Some(137)
            || has("Cannot allocate memory")
            || has("std::bad_alloc")
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
        _ => return None,
    };
    Some(Diagnosis {
        cause,
        hint,
        next_step,
    })
}

fn subject(error: &RunError) -> String {
    error
        .subject
        .as_deref()
        .map(|s| format!(" (`{}`)", clip(s)))
        .unwrap_or_default()
}

fn location_step(error: &RunError, what: &str) -> String {
    match &error.location {
        Some(loc) => match loc.line {
            Some(line) => format!("{what}: `{}` line {line}", loc.file),
            None => format!("{what}: `{}`", loc.file),
        },
        None => what.to_string(),
    }
}

/// `bash: fastqc: command not found`, `.command.sh: line 2: fastqc: command not found`.
fn missing_program(stderr: &str) -> Option<String> {
    stderr.lines().find_map(|line| {
        let head = line.trim().strip_suffix(": command not found")?;
        let tool = head.rsplit(": ").next()?.trim();
        (!tool.is_empty()).then(|| clip(tool))
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
        assert_eq!(missing_program("all good"), None);
    }
}
