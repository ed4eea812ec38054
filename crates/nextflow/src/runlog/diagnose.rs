//! A likely cause and a next step for an error, from its exit status, its stderr and its form.
//! Every sentence is a hint ("likely", "may"): the text shows symptoms, not the cause.

use serde::Serialize;

use super::block::{ErrorForm, RunError, after, between, clip};

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
        _ => return None,
    };
    Some(Diagnosis {
        cause,
        hint,
        next_step,
    })
}

type Found = (LikelyCause, String, String);

/// Words that name a failure's cause wherever they stand, so a reader that found no error
/// block keeps the lines that hold them (a report cut to a few lines, a scheduler's message
/// after the block).
const SIGNATURES: &[&str] = &[
    "Failed to pull singularity image",
    "Failed to pull apptainer image",
    "CannotPullContainerError",
    "CannotStartContainerError",
    "Unable to find image",
    "pull access denied",
    "manifest unknown",
    "While making image from oci registry",
    "requested access to the resource is denied",
    "Process requirement exceed",
    "Failed to submit process to grid scheduler",
    "sbatch: error",
    "Batch job submission failed",
    "Script compilation error",
    "Module compilation error",
    "Validation of pipeline parameters failed",
    "The following invalid input values have been detected",
    "Access Denied (Service:",
    "Status Code: 403",
    "No space left on device",
    "Disk quota exceeded",
    "Process exceeded running time limit",
    "DUE TO TIME LIMIT",
    "Segmentation fault",
    "core dumped",
    "oom-kill event",
    "OutOfMemoryError",
    "Invalid maximum heap size",
    ".command.run: No such file or directory",
    ": command not found",
];

/// [`SIGNATURES`] as one searcher: the log reader asks every line of a log of any size.
/// Thirty `contains` per line made reading a 100 MB log five times slower; an Aho-Corasick
/// automaton still took 150 ms of it. The packed (SIMD) searcher is used where the CPU has
/// it, the automaton elsewhere.
enum SignatureSearch {
    Packed(aho_corasick::packed::Searcher),
    Automaton(aho_corasick::AhoCorasick),
    Plain,
}

static SIGNATURE_SEARCH: std::sync::LazyLock<SignatureSearch> = std::sync::LazyLock::new(|| {
    if let Some(packed) = aho_corasick::packed::Searcher::new(SIGNATURES) {
        SignatureSearch::Packed(packed)
    } else if let Ok(automaton) = aho_corasick::AhoCorasick::new(SIGNATURES) {
        SignatureSearch::Automaton(automaton)
    } else {
        SignatureSearch::Plain
    }
});

/// Whether `line` names a cause the diagnosis knows wherever it appears.
pub(crate) fn is_signature(line: &[u8]) -> bool {
    match &*SIGNATURE_SEARCH {
        SignatureSearch::Packed(packed) => packed.find(line).is_some(),
        SignatureSearch::Automaton(automaton) => automaton.is_match(line),
        SignatureSearch::Plain => SIGNATURES
            .iter()
            .any(|s| line.windows(s.len()).any(|w| w == s.as_bytes())),
    }
}

/// The causes the error's own words name (its message, `Caused by:` lines, stderr and
/// stdout), ranked above the exit-status rules: a `Caused by:` that says the image did not
/// pull explains more than the status the task ended with.
fn from_messages(error: &RunError, process: &str) -> Option<Found> {
    let lines: Vec<&str> = std::iter::once(error.message.as_str())
        .chain(error.cause.iter().map(String::as_str))
        .chain(error.stderr.lines.iter().map(String::as_str))
        .chain(error.stdout.lines.iter().map(String::as_str))
        .collect();
    let has = |needle: &str| lines.iter().any(|l| l.contains(needle));
    let any = |needles: &[&str]| needles.iter().any(|n| has(n));
    let line_with = |needle: &str| lines.iter().find(|l| l.contains(needle)).map(|l| l.trim());
    let exit = error.exit_status;

    // A JVM refusing its `-Xmx` says so on one line, whatever else stderr says.
    if let Some(line) = line_with("Invalid maximum heap size") {
        let size = line.rsplit(": ").next().unwrap_or(line);
        return Some((
            LikelyCause::JavaHeap,
            format!(
                "likely the Java heap size `{}` is invalid, computed from a task memory too small or without units",
                clip(size)
            ),
            format!(
                "give {process} more `memory` (at least a few GB, with units) so the -Xmx it derives is positive, then run again with -resume"
            ),
        ));
    }
    if let Some(line) = ["OutOfMemoryError", "GC overhead limit exceeded"]
        .iter()
        .find_map(|n| {
            error
                .cause
                .iter()
                .chain([&error.message])
                .find(|l| l.contains(n))
        })
    {
        let nextflow = !line.contains("Exception in thread \"main\"") && error.process.is_none();
        return Some((
            LikelyCause::JavaHeap,
            if nextflow {
                "likely a Java program (Nextflow itself when no task is named) ran out of heap memory".to_string()
            } else {
                "likely the Java program ran out of heap memory".to_string()
            },
            if nextflow {
                "give Nextflow more heap (`NXF_OPTS='-Xms1g -Xmx4g'`), or the task more `memory`, then run again with -resume".to_string()
            } else {
                format!(
                    "raise {process}'s `memory` (and the tool's -Xmx if it sets one), then run again with -resume"
                )
            },
        ));
    }
    if any(&[
        "Failed to pull singularity image",
        "Failed to pull apptainer image",
        "CannotPullContainerError",
        "CannotStartContainerError",
        "Unable to find image",
        "pull access denied",
        "manifest unknown",
        "While making image from oci registry",
        "root filesystem extraction failed",
        "pull is only supported for shub",
        "requested access to the resource is denied",
    ]) || lines
        .iter()
        .any(|l| l.contains("FATAL:") && l.contains("image"))
    {
        let image = error
            .container
            .as_deref()
            .map(|c| format!(" (`{}`)", clip(c)))
            .unwrap_or_default();
        return Some((
            LikelyCause::ContainerPull,
            format!("likely the container image{image} could not be pulled, converted or started: a wrong name or tag, no network or registry access, or a pull timeout"),
            "check the image name and that the registry is reachable from where Nextflow runs; pull it once by hand, or set `singularity.cacheDir` / `singularity.pullTimeout`".to_string(),
        ));
    }
    if let Some(line) = line_with("Process requirement exceed") {
        let what = if line.contains("CPUs") {
            "cpus"
        } else {
            "memory"
        };
        let detail = after(line, "-- ")
            .map(|d| format!(" ({})", clip(d.trim())))
            .unwrap_or_default();
        return Some((
            LikelyCause::ResourcesExceeded,
            format!("likely {process} asks for more `{what}` than the executor has{detail}"),
            "cap what processes ask with `process.resourceLimits` (or the pipeline's `--max_cpus`/`--max_memory`) at what the machine has".to_string(),
        ));
    }
    if any(&[
        "Failed to submit process to grid scheduler",
        "sbatch: error",
        "qsub: ",
        "bsub: ",
        "Batch job submission failed",
    ]) {
        return Some((
            LikelyCause::SubmissionFailed,
            "likely the grid scheduler refused the job: an invalid directive, queue, account or limit, or the scheduler was unreachable".to_string(),
            format!("read the scheduler's message above and check {process}'s `queue`, `clusterOptions`, `time` and `memory` against the cluster's limits"),
        ));
    }
    if any(&[
        "Script compilation error",
        "Module compilation error",
        "Unexpected input: ",
        "end of line reached within a simple string",
    ]) {
        return Some((
            LikelyCause::CompileError,
            "likely a script or config that this Nextflow version does not parse: a syntax error, or a pipeline written for another Nextflow version".to_string(),
            location_step(error, "compare `nextflow -version` with the pipeline's `manifest.nextflowVersion`, then fix the syntax at the position shown"),
        ));
    }
    if any(&[
        "Validation of pipeline parameters failed",
        "The following invalid input values have been detected",
        "Please check samplesheet",
        "Please check input samplesheet",
    ]) {
        if has("does not exist") {
            return Some((
                LikelyCause::MissingFile,
                "likely a file the samplesheet names does not exist at that path".to_string(),
                "check the paths in the samplesheet (absolute, or relative to where Nextflow runs) and that the files are there".to_string(),
            ));
        }
        let param = lines.iter().find_map(|l| {
            let rest = l.trim().strip_prefix("* --")?;
            let name = rest.split([':', ' ', '(']).next()?;
            (!name.is_empty()).then(|| clip(name))
        });
        return Some((
            LikelyCause::Validation,
            match &param {
                Some(p) => format!("likely the parameter `--{p}` does not pass the pipeline's schema"),
                None => "likely a parameter or the samplesheet does not pass the pipeline's schema".to_string(),
            },
            "fix the value or samplesheet as the message says (`nextflow_schema.json` and the pipeline's usage docs list what each accepts), then run again".to_string(),
        ));
    }
    if any(&[
        "Access Denied",
        "AccessDenied",
        "Status Code: 403",
        "403 Forbidden",
        "AmazonS3Exception",
        "AccessDeniedException",
    ]) {
        return Some((
            LikelyCause::CloudAccess,
            "likely the cloud store refused access (403): missing credentials, a role without permission on the bucket, or a requester-pays or private bucket".to_string(),
            "check the credentials Nextflow uses (`aws.accessKey`, a profile or role) and the bucket's policy; `aws.client.anonymous = true` for public buckets".to_string(),
        ));
    }
    if any(&["No space left on device", "Disk quota exceeded"]) {
        return Some((
            LikelyCause::DiskFull,
            "likely a disk or quota was full where the task wrote (the work dir, `/tmp`, or the container cache)".to_string(),
            "free space or move the work dir (`-w`) and `TMPDIR` to a larger file system, then run again with -resume".to_string(),
        ));
    }
    if exit == Some(140) || any(&["Process exceeded running time limit", "DUE TO TIME LIMIT"]) {
        let limit = line_with("running time limit (")
            .and_then(|l| between(l, "running time limit (", ")"))
            .map(|t| format!(" (`{}`)", clip(t)))
            .unwrap_or_default();
        return Some((
            LikelyCause::TimeLimit,
            format!("likely {process} ran longer than its time limit{limit}"),
            format!(
                "raise {process}'s `time` (a `withName` selector; `process.resourceLimits` caps it), then run again with -resume"
            ),
        ));
    }
    if any(&["oom-kill event", "out-of-memory handler"]) {
        return Some((
            LikelyCause::OutOfMemory,
            "likely the scheduler killed the task for using more memory than it was given (an out-of-memory kill)".to_string(),
            format!("raise {process}'s `memory` (a `withName` selector or `resourceLimits`), then run again with -resume"),
        ));
    }
    if matches!(exit, Some(134 | 139)) || any(&["Segmentation fault", "core dumped"]) {
        return Some((
            LikelyCause::AbortSegfault,
            "likely the program crashed (abort or segmentation fault): corrupt or unexpected input, a bug, or too little memory".to_string(),
            format!("look at {process}'s stderr and inputs; run `.command.sh` in the work dir, and try more `memory` or another tool version"),
        ));
    }
    let no_dir = lines.iter().any(|l| {
        l.contains(".command.run: No such file or directory")
            || (exit == Some(127)
                && l.contains(" cd: ")
                && l.contains(": No such file or directory"))
    });
    if no_dir {
        return Some((
            LikelyCause::WorkDirMissing,
            "likely the work dir is not visible where the task runs: a path not shared or not mounted on the node, pod or container".to_string(),
            "use a work dir on a file system every node (or the container host) sees at the same path, or mount it there".to_string(),
        ));
    }
    None
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

    #[test]
    fn every_signature_is_found_anywhere_in_a_line_and_a_plain_line_is_not() {
        for signature in SIGNATURES {
            let line = format!("Dec-06 08:00:00.000 [main] INFO  x - {signature} (at the end)");
            assert!(is_signature(line.as_bytes()), "{signature}");
        }
        assert!(!is_signature(
            b"Dec-06 08:00:00.000 [Task monitor] DEBUG n.processor.TaskProcessor - Task completed"
        ));
        assert!(!is_signature(b""));
    }
}
