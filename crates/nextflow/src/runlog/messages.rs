//! The causes a failure's own words name: the error's message, its `Caused by:` lines, the
//! task's stderr and stdout. They rank above the exit-status rules in [`super::diagnose`]:
//! a line that says the image did not pull explains more than the status the task ended with.
//! The same words, gathered as [`SIGNATURES`], tell the readers which lines outside an error
//! block to keep.

use super::block::{RunError, after, between, clip};
use super::diagnose::{LikelyCause, location_step};

pub(super) type Found = (LikelyCause, String, String);

/// Words of a container image that could not be pulled, converted or started (Singularity,
/// Apptainer, Docker, Kubernetes, AWS Batch, Wave).
const CONTAINER: &[&str] = &[
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
    "Cannot connect to the Docker daemon",
    "permission denied while trying to connect to the Docker daemon",
    "ImagePullBackOff",
    "ErrImagePull",
    "container creation failed",
    "Unable to build container",
];

/// Words of a grid scheduler refusing a job.
const SUBMISSION: &[&str] = &[
    "Failed to submit process to grid scheduler",
    "sbatch: error",
    "qsub: ",
    "bsub: ",
    "Batch job submission failed",
];

/// Words of a script or config this Nextflow does not compile.
const COMPILE: &[&str] = &[
    "Script compilation error",
    "Module compilation error",
    "Unexpected input: ",
    "end of line reached within a simple string",
];

/// Words of nf-validation and nf-schema refusing a parameter or a samplesheet: nf-schema 2's
/// own (its ParameterValidator, SamplesheetConverter and SchemaEvaluator), nf-validation 1's
/// for a file a parameter names, and the checks nf-core pipelines print themselves.
const VALIDATION: &[&str] = &[
    "Validation of pipeline parameters failed",
    "The following invalid input values have been detected",
    "Please check samplesheet",
    "Please check input samplesheet",
    "Validation of samplesheet failed",
    "Validation of file failed",
    "file failed!",
    "Missing required parameter(s)",
    "Missing required field(s)",
    ": Error for field '",
];

/// Words of a cloud store refusing access.
const CLOUD_ACCESS: &[&str] = &[
    "Access Denied",
    "AccessDenied",
    "Status Code: 403",
    "403 Forbidden",
    "AmazonS3Exception",
    "AccessDeniedException",
];

const DISK_FULL: &[&str] = &["No space left on device", "Disk quota exceeded"];

const TIME_LIMIT: &[&str] = &["Process exceeded running time limit", "DUE TO TIME LIMIT"];

/// A scheduler's or the kernel's out-of-memory kill.
const OOM_KILL: &[&str] = &["oom-kill event", "out-of-memory handler", "OOMKilled"];

const ABORT: &[&str] = &["Segmentation fault", "core dumped"];

/// Words the rules below read that are no list of their own (a message with a value to
/// take from it), and the task's own status line.
const OTHER_SIGNATURES: &[&str] = &[
    "Process requirement exceed",
    "OutOfMemoryError",
    "Invalid maximum heap size",
    ".command.run: No such file or directory",
    ": command not found",
    "terminated with an error exit status",
    "Unknown configuration profile",
    "Unknown config attribute",
    "No such file: ",
    "JSONObject[",
    "ModuleNotFoundError",
    "there is no package called",
];

/// Words of a download or connection that failed. Container pulls, cloud stores and grid
/// submissions are named before these are asked, so a registry's refused connection stays a
/// container failure.
const NETWORK: &[&str] = &[
    "UnknownHostException",
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Connection refused",
    "Connection timed out",
    "Connection reset by peer",
    "Read timed out",
    "SocketTimeoutException",
    "ConnectException",
    "Network is unreachable",
    "SSLHandshakeException",
    "Unable to establish SSL connection",
    "The server couldn't fulfill the request",
    "ERROR 404: Not Found",
    "ERROR 500: Internal Server Error",
    "ERROR 503: Service Unavailable",
    "HTTP Error 404",
    "HTTP Error 500",
    "HTTP Error 503",
    "Failed to connect to",
];

/// [`SIGNATURES`] as searchers: the log reader asks every line of a log of any size. Thirty
/// `contains` per line made reading a 100 MB log five times slower; an Aho-Corasick automaton
/// still took 150 ms of it. The packed (SIMD, Teddy) searcher is used where the CPU has it; it
/// takes at most 64 words (past that the crate falls back to a scan that doubled the time), so
/// the words are split into groups of at most [`PACKED_WORDS`].
enum SignatureSearch {
    Packed(Vec<aho_corasick::packed::Searcher>),
    Automaton(aho_corasick::AhoCorasick),
    Plain,
}

/// The most words one packed searcher is given.
const PACKED_WORDS: usize = 64;

/// Words that name a failure's cause wherever they stand, so a reader that found no error
/// block keeps the lines that hold them (a report cut to a few lines, a scheduler's message
/// after the block): every list above, so a cause the diagnosis knows is a line the readers
/// keep.
static SIGNATURES: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
    let mut all = [
        CONTAINER,
        SUBMISSION,
        COMPILE,
        VALIDATION,
        CLOUD_ACCESS,
        DISK_FULL,
        TIME_LIMIT,
        OOM_KILL,
        ABORT,
        NETWORK,
        OTHER_SIGNATURES,
    ]
    .concat();
    all.sort_unstable();
    all.dedup();
    all
});

static SIGNATURE_SEARCH: std::sync::LazyLock<SignatureSearch> = std::sync::LazyLock::new(|| {
    let groups = SIGNATURES.len().div_ceil(PACKED_WORDS).max(1);
    let size = SIGNATURES.len().div_ceil(groups).max(1);
    let packed: Option<Vec<_>> = SIGNATURES
        .chunks(size)
        .map(|words| {
            // Teddy or nothing: its own fallback (Rabin-Karp) is slower than the automaton.
            aho_corasick::packed::Config::new()
                .only_teddy(true)
                .builder()
                .extend(words.iter())
                .build()
        })
        .collect();
    if let Some(packed) = packed {
        SignatureSearch::Packed(packed)
    } else if let Ok(automaton) = aho_corasick::AhoCorasick::new(SIGNATURES.iter()) {
        SignatureSearch::Automaton(automaton)
    } else {
        SignatureSearch::Plain
    }
});

/// Whether `line` names a cause the diagnosis knows wherever it appears.
pub(crate) fn is_signature(line: &[u8]) -> bool {
    match &*SIGNATURE_SEARCH {
        SignatureSearch::Packed(packed) => packed.iter().any(|s| s.find(line).is_some()),
        SignatureSearch::Automaton(automaton) => automaton.is_match(line),
        SignatureSearch::Plain => SIGNATURES
            .iter()
            .any(|s| line.windows(s.len()).any(|w| w == s.as_bytes())),
    }
}

/// The causes the error's own words name (its message, `Caused by:` lines, stderr and
/// stdout), ranked above the exit-status rules: a `Caused by:` that says the image did not
/// pull explains more than the status the task ended with.
pub(super) fn from_messages(error: &RunError, process: &str) -> Option<Found> {
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
    if any(CONTAINER)
        || lines
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
    if any(SUBMISSION) {
        return Some((
            LikelyCause::SubmissionFailed,
            "likely the grid scheduler refused the job: an invalid directive, queue, account or limit, or the scheduler was unreachable".to_string(),
            format!("read the scheduler's message above and check {process}'s `queue`, `clusterOptions`, `time` and `memory` against the cluster's limits"),
        ));
    }
    if any(COMPILE) {
        return Some((
            LikelyCause::CompileError,
            "likely a script or config that this Nextflow version does not parse: a syntax error, or a pipeline written for another Nextflow version".to_string(),
            location_step(error, "compare `nextflow -version` with the pipeline's `manifest.nextflowVersion`, then fix the syntax at the position shown"),
        ));
    }
    if any(VALIDATION) {
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
        let field = lines
            .iter()
            .find_map(|l| between(l, "Error for field '", "'"))
            .map(clip);
        return Some((
            LikelyCause::Validation,
            match (&param, &field) {
                (Some(p), Some(f)) => format!("likely the samplesheet given to `--{p}` has a bad `{f}` value for the pipeline's schema"),
                (Some(p), None) => format!("likely the parameter `--{p}` does not pass the pipeline's schema"),
                (None, Some(f)) => format!("likely the samplesheet's `{f}` value does not pass the pipeline's schema"),
                (None, None) => "likely a parameter or the samplesheet does not pass the pipeline's schema".to_string(),
            },
            "fix the value or samplesheet as the message says (`nextflow_schema.json` and the pipeline's usage docs list what each accepts), then run again".to_string(),
        ));
    }
    if any(CLOUD_ACCESS) {
        return Some((
            LikelyCause::CloudAccess,
            "likely the cloud store refused access (403): missing credentials, a role without permission on the bucket, or a requester-pays or private bucket".to_string(),
            "check the credentials Nextflow uses (`aws.accessKey`, a profile or role) and the bucket's policy; `aws.client.anonymous = true` for public buckets".to_string(),
        ));
    }
    if let Some(line) = line_with("Unknown configuration profile") {
        let profile = between(line, "'", "'")
            .map(|p| format!(" `{}`", clip(p)))
            .unwrap_or_default();
        return Some((
            LikelyCause::UnknownProfile,
            format!("likely the profile{profile} is not defined in the configuration this run read: a typo, an institutional profile not loaded (nf-core/configs unreachable), or a launch from a directory that is not the pipeline's root"),
            "launch the pipeline's root (the directory with `main.nf` and `nextflow.config`) and list its profiles with `nextflow config -show-profiles`".to_string(),
        ));
    }
    // nf-validation 1.x fails this way on a parameter the run sets but the schema lacks.
    if let Some(line) = lines
        .iter()
        .find(|l| l.contains("JSONObject[\"") && l.contains("not found"))
    {
        let param = between(line, "JSONObject[\"", "\"]")
            .map(|p| format!(" `{}`", clip(p)))
            .unwrap_or_default();
        return Some((
            LikelyCause::Validation,
            format!("likely the parameter{param} is set (in a config or on the command line) but `nextflow_schema.json` does not declare it, and parameter validation fails on it"),
            "declare the parameter in `nextflow_schema.json` (`nf-core pipelines schema build`), or stop setting it, then run again".to_string(),
        ));
    }
    if let Some(line) = lines.iter().find(|l| {
        let lower = l.to_ascii_lowercase();
        l.contains("No such file: ")
            || lower.contains("not able to find file")
            || lower.contains("file does not exist")
            || l.contains("FileNotFoundException")
            || l.contains("NoSuchFileException")
    }) {
        return Some((
            LikelyCause::MissingFile,
            format!("likely a file the run needs is not there: `{}`", clip(line.trim())),
            "check the path (absolute, or relative to where Nextflow runs), the samplesheet's entries and the reference files; download or rebuild what is missing, then run again".to_string(),
        ));
    }
    if let Some(line) = lines.iter().find(|l| NETWORK.iter().any(|n| l.contains(n))) {
        return Some((
            LikelyCause::Network,
            format!("likely a download or connection failed: `{}`", clip(line.trim())),
            "check that the host is reachable from where the task runs (proxies, an offline cluster node) and that the URL still exists; download the file beforehand and pass its local path if the nodes are offline".to_string(),
        ));
    }
    if any(DISK_FULL) {
        return Some((
            LikelyCause::DiskFull,
            "likely a disk or quota was full where the task wrote (the work dir, `/tmp`, or the container cache)".to_string(),
            "free space or move the work dir (`-w`) and `TMPDIR` to a larger file system, then run again with -resume".to_string(),
        ));
    }
    if exit == Some(140) || any(TIME_LIMIT) {
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
    if let Some(what) = missing_software(&lines) {
        return Some((
            LikelyCause::CommandNotFound,
            format!("likely {what} is not installed in the task's container or environment"),
            format!(
                "check {process}'s `container`/`conda` directive: the image or environment must provide it; a run without a software profile (`-profile docker`, `singularity` or `conda`) uses the machine's own"
            ),
        ));
    }
    if any(OOM_KILL) {
        return Some((
            LikelyCause::OutOfMemory,
            "likely the scheduler killed the task for using more memory than it was given (an out-of-memory kill)".to_string(),
            format!("raise {process}'s `memory` (a `withName` selector or `resourceLimits`), then run again with -resume"),
        ));
    }
    if matches!(exit, Some(134 | 139)) || any(ABORT) {
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

/// A library the task's script imports and its environment lacks: Python's
/// `ModuleNotFoundError: No module named 'x'`, R's `there is no package called ‘x’`, Perl's
/// `Can't locate X.pm in @INC`. The same cause as a program not found, one level down.
fn missing_software(lines: &[&str]) -> Option<String> {
    lines.iter().find_map(|line| {
        let name = |rest: &str| {
            let name = rest
                .trim()
                .trim_matches(['\'', '"', '‘', '’', '`'])
                .split(['\'', '"', '‘', '’', ' '])
                .next()
                .unwrap_or_default();
            (!name.is_empty()).then(|| clip(name))
        };
        if let Some(rest) = after(line, "No module named ") {
            return name(rest).map(|n| format!("the Python module `{n}`"));
        }
        if let Some(rest) = after(line, "there is no package called ") {
            return name(rest).map(|n| format!("the R package `{n}`"));
        }
        let rest = after(line, "Can't locate ")?;
        let module = rest.split(" in @INC").next()?;
        name(module).map(|n| format!("the Perl module `{n}`"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_named_with_its_language() {
        let found = |line: &str| missing_software(&[line]);
        assert_eq!(
            found("ModuleNotFoundError: No module named 'pysam'").as_deref(),
            Some("the Python module `pysam`")
        );
        assert_eq!(
            found("Error in library(DESeq2) : there is no package called ‘DESeq2’").as_deref(),
            Some("the R package `DESeq2`")
        );
        assert_eq!(
            found(
                "Can't locate Bio/SeqIO.pm in @INC (you may need to install the Bio::SeqIO module)"
            )
            .as_deref(),
            Some("the Perl module `Bio/SeqIO.pm`")
        );
        assert_eq!(found("all is well"), None);
    }

    /// Past 64 words the packed searcher gives way to a scan that doubled the time a 100 MB
    /// log takes; on a CPU with SSSE3 the words must stay in packed groups.
    #[test]
    fn the_signatures_stay_with_the_packed_searcher() {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("ssse3") {
            assert!(matches!(&*SIGNATURE_SEARCH, SignatureSearch::Packed(_)));
        }
        assert!(SIGNATURES.len() > PACKED_WORDS, "the groups are exercised");
    }

    #[test]
    fn every_signature_is_found_anywhere_in_a_line_and_a_plain_line_is_not() {
        for signature in SIGNATURES.iter() {
            let line = format!("Dec-06 08:00:00.000 [main] INFO  x - {signature} (at the end)");
            assert!(is_signature(line.as_bytes()), "{signature}");
        }
        assert!(!is_signature(
            b"Dec-06 08:00:00.000 [Task monitor] DEBUG n.processor.TaskProcessor - Task completed"
        ));
        assert!(!is_signature(b""));
    }
}
