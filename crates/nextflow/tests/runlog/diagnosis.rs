//! Likely causes, always worded as hints.

use codaris_nextflow::runlog::{Diagnosis, LikelyCause, diagnose, read_console, read_log};

fn console_with(exit: &str, stderr: &str) -> String {
    format!(
        "ERROR ~ Error executing process > 'ALIGN (s1)'\n\nCaused by:\n  Process `ALIGN (s1)` terminated with an error exit status ({exit})\n\nCommand executed:\n\n  bwa mem ref.fa r1.fq\n\nCommand exit status:\n  {exit}\n\nCommand output:\n  (empty)\n\nCommand error:\n  {stderr}\n\nWork dir:\n  /w/ab/cdef\n\n -- Check '.nextflow.log' file for details\n"
    )
}

fn cause_of(exit: &str, stderr: &str) -> Option<LikelyCause> {
    let report = read_console(&console_with(exit, stderr));
    report.error.as_ref().and_then(diagnose).map(|d| d.cause)
}

#[test]
fn common_exit_codes_and_stderr_signs() {
    assert_eq!(
        cause_of("127", ".command.sh: line 2: bwa: command not found"),
        Some(LikelyCause::CommandNotFound)
    );
    assert_eq!(cause_of("137", "Killed"), Some(LikelyCause::OutOfMemory));
    assert_eq!(cause_of("143", "Terminated"), Some(LikelyCause::Terminated));
    assert_eq!(
        cause_of(
            "1",
            "[E::bwa_idx_load] fail to locate the index files: No such file or directory"
        ),
        Some(LikelyCause::MissingFile)
    );
    assert_eq!(
        cause_of("1", "cannot open output: Permission denied"),
        Some(LikelyCause::PermissionDenied)
    );
    assert_eq!(
        cause_of(
            "1",
            "Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space"
        ),
        Some(LikelyCause::JavaHeap)
    );
    // A tool that fails on its own terms and says so: its words are the likely cause.
    assert_eq!(
        cause_of("1", "some message the tool wrote"),
        Some(LikelyCause::TaskError)
    );
}

#[test]
fn every_hint_is_worded_as_a_hint() {
    for (exit, stderr) in [
        ("127", "x: command not found"),
        ("137", ""),
        ("143", ""),
        ("1", "No such file or directory"),
        ("1", "Permission denied"),
        ("1", "Java heap space"),
    ] {
        let report = read_console(&console_with(exit, stderr));
        let d = report
            .error
            .as_ref()
            .and_then(diagnose)
            .expect("a diagnosis");
        assert!(d.hint.starts_with("likely "), "{}", d.hint);
    }
}

#[test]
fn an_unrecognised_failure_says_so_in_the_answer() {
    let text = read_console(&console_with("2", "")).render();
    assert!(
        text.contains("likely_cause: unknown — read the stderr tail and the command\n"),
        "{text}"
    );
}

/// The diagnosis of a console text.
fn console(text: &str) -> Option<Diagnosis> {
    read_console(text).error.as_ref().and_then(diagnose)
}

/// The diagnosis of a `.nextflow.log` text.
fn log(text: &str) -> Option<Diagnosis> {
    read_log(text.as_bytes())
        .ok()
        .and_then(|r| r.error)
        .as_ref()
        .and_then(diagnose)
}

fn cause(d: &Option<Diagnosis>) -> Option<LikelyCause> {
    d.as_ref().map(|d| d.cause)
}

/// Every hint a hint, one sentence each.
fn worded(d: &Option<Diagnosis>) {
    let d = d.as_ref().expect("a diagnosis");
    assert!(d.hint.starts_with("likely "), "{}", d.hint);
    assert!(
        !d.hint.contains(". ") && !d.next_step.contains(". "),
        "{d:?}"
    );
}

// The excerpts below are verbatim from the real-failure corpus
// (`tests/fixtures/nextflow/real-failures/`, cases not held out), paths shortened where noted.

#[test]
fn a_singularity_pull_failure_is_the_container_not_the_exit_status() {
    // nf-core-rnaseq-562
    let d = console(
        "Error executing process > 'RNASEQ:CAT_FASTQ (72h_R1)'\n\nCaused by:\n  Failed to pull singularity image\n  command: singularity pull  --name biocontainers_v1.2.0_cv1.img.img.pulling.1612345761257 https://containers.biocontainers.pro/s3/SingImgsRepo/biocontainers/v1.2.0_cv1/biocontainers_v1.2.0_cv1.img > /dev/null\n  status : 255\n",
    );
    assert_eq!(cause(&d), Some(LikelyCause::ContainerPull));
    worded(&d);
    // nf-core-nanoseq-77: the Singularity message alone, no block.
    let d = console(
        "Caused by:\n  Failed to pull singularity image\n    FATAL:   While making image from oci registry: error fetching image to cache: failed to get checksum for docker://nfcore/nanoseq:1.1.0: Error reading manifest 1.1.0 in docker.io/nfcore/nanoseq: manifest unknown: manifest unknown\n",
    );
    assert_eq!(cause(&d), Some(LikelyCause::ContainerPull));
}

#[test]
fn a_process_asking_more_than_the_machine_has_points_at_resource_limits() {
    // nextflow-io-nextflow-3684
    let d = console(
        "Error executing process > 'pipeline:process_bams:align_to_transcriptome (1)'\n\nCaused by:\n  Process requirement exceeds available CPUs -- req: 6; avail: 4\n\nCommand exit status:\n  -\n",
    );
    assert_eq!(cause(&d), Some(LikelyCause::ResourcesExceeded));
    worded(&d);
    let d = d.expect("a diagnosis");
    assert!(
        d.hint.contains("`cpus`") && d.hint.contains("req: 6; avail: 4"),
        "{}",
        d.hint
    );
    assert!(
        d.next_step.contains("process.resourceLimits"),
        "{}",
        d.next_step
    );
}

#[test]
fn a_time_limit_is_named_with_its_limit() {
    // nf-core-crisprseq-114 (a log excerpt)
    let d = log(
        "Feb-08 15:11:52.579 [Task monitor] ERROR nextflow.processor.TaskProcessor - Error executing process > 'NFCORE_CRISPRSEQ:CRISPRSEQ_SCREENING:MAGECK_MLE (treatment_vs_control)'\n\nCaused by:\n  Process exceeded running time limit (8h)\n",
    );
    assert_eq!(cause(&d), Some(LikelyCause::TimeLimit));
    worded(&d);
    assert!(d.expect("a diagnosis").hint.contains("`8h`"));
    // Exit 140 is how SLURM's time limit reaches Nextflow.
    assert_eq!(cause_of("140", ""), Some(LikelyCause::TimeLimit));
}

#[test]
fn an_abort_or_a_segfault_is_a_crash() {
    // nf-core-raredisease-53
    assert_eq!(cause_of("134", ""), Some(LikelyCause::AbortSegfault));
    // nextflow-io-nextflow-756: the stderr line alone.
    let d = console(
        "  .command.sh: line 2:  4804 Segmentation fault      (core dumped) polishpair -q FF10801_Pool3_S8_R1_001.fastq.gz FF10801_Pool3_S8_R2_001.fastq.gz\n\nWork dir:\n  /analysisdir/work/62/ec69c563330e9a6b0b7fa61eee42a2\n",
    );
    assert_eq!(cause(&d), Some(LikelyCause::AbortSegfault));
    worded(&d);
}

#[test]
fn a_script_compilation_error_relates_to_the_nextflow_version() {
    // nf-core-rnasplice-227
    let d = console(
        " N E X T F L O W   ~  version 25.10.4\n\nERROR ~ Script compilation error\n- file : /home/u/.nextflow/assets/nf-core/rnasplice/main.nf\n- cause: Unexpected input: '{' @ line 12, column 8.\n   params {\n          ^\n\n1 error\n",
    );
    assert_eq!(cause(&d), Some(LikelyCause::CompileError));
    worded(&d);
    assert!(
        d.expect("a diagnosis")
            .next_step
            .contains("manifest.nextflowVersion")
    );
}

#[test]
fn an_s3_refusal_is_cloud_access() {
    // nextflow-io-nextflow-1203
    let d = console(
        "N E X T F L O W  ~  version 19.04.1\nERROR ~ Access Denied (Service: Amazon S3; Status Code: 403; Error Code: AccessDenied; Request ID: 74368FB5431A1FC2)\n",
    );
    assert_eq!(cause(&d), Some(LikelyCause::CloudAccess));
    worded(&d);
}

#[test]
fn a_full_disk_is_named() {
    // No case not held out carries it; Linux's own message.
    assert_eq!(
        cause_of(
            "1",
            "samtools sort: failed to create temporary file: No space left on device"
        ),
        Some(LikelyCause::DiskFull)
    );
    assert_eq!(
        cause_of("1", "write error: Disk quota exceeded"),
        Some(LikelyCause::DiskFull)
    );
}

#[test]
fn a_refused_grid_submission_is_named() {
    // nextflow-io-nextflow-2898
    let d = console(
        "Error executing process > 'sayHello'\n\nCaused by:\n  Failed to submit process to grid scheduler for execution\n\nCommand executed:\n\n  sbatch .command.run\n",
    );
    assert_eq!(cause(&d), Some(LikelyCause::SubmissionFailed));
    worded(&d);
    // nextflow-io-nextflow-981: a log with no ERROR record, sbatch's own words.
    let d = log(
        "Jan-13 20:22:07.572 [Task submitter] DEBUG nextflow.executor.GridTaskHandler - Failed to submit process align (29-32) > exit: 1; workDir: /w/c8/9d4af698\nsbatch: error: Batch job submission failed: Transport endpoint is not connected\n",
    );
    assert_eq!(cause(&d), Some(LikelyCause::SubmissionFailed));
}

#[test]
fn a_parameter_validation_failure_names_the_parameter() {
    // nf-core-fetchngs-116
    let d = console(
        "nextflow run nf-core/fetchngs --input PRJNA625551 --outdir results --input_type sra\n\nERROR: Validation of pipeline parameters failed!\n* --input: string [PRJNA602995] does not match pattern ^\\S+\\.txt$ (PRJNA602995)\n",
    );
    assert_eq!(cause(&d), Some(LikelyCause::Validation));
    worded(&d);
    assert!(d.expect("a diagnosis").hint.contains("`--input`"));
}

#[test]
fn a_bad_xmx_is_the_java_heap_though_stderr_also_says_no_such_file() {
    // nf-core-rnaseq-398
    let stderr = "/opt/conda/envs/nf-core-rnaseq-1.4.2/bin/picard: line 5: warning: setlocale: LC_ALL: cannot change locale (en_US.UTF-8): No such file or directory\n  Invalid maximum heap size: -Xmx-1g\n  Error: Could not create the Java Virtual Machine.";
    assert_eq!(cause_of("1", stderr), Some(LikelyCause::JavaHeap));
    let d = diagnose_of("1", stderr);
    worded(&d);
    assert!(d.expect("a diagnosis").hint.contains("`-Xmx-1g`"));
}

#[test]
fn a_missing_work_dir_is_not_a_missing_program() {
    // nextflow-io-nextflow-73
    let d = console(
        "Error executing process > 'sayHello (1)'\n\nCaused by:\n  Process `sayHello (1)` terminated for an unknown reason -- Likely it has been terminated by the external system\n\nCommand exit status:\n  -\n\nCommand output:\n  (empty)\n\nCommand wrapper:\n  /bin/bash: .command.run: No such file or directory\n\nWork dir:\n  /Users/u/nextflow/work/d0/3884fc356ce3a04cdff6a3b27ff4c5\n",
    );
    assert_eq!(cause(&d), Some(LikelyCause::WorkDirMissing));
    worded(&d);
    // Exit 127 from the wrapper's `cd` (bash's own words; no case not held out carries it).
    assert_eq!(
        cause_of(
            "127",
            "bash: line 1: cd: /scratch/work/ab/cdef: No such file or directory"
        ),
        Some(LikelyCause::WorkDirMissing)
    );
}

#[test]
fn a_scheduler_oom_kill_outside_the_block_is_read() {
    // nf-core-rnaseq-867
    let d = log(
        "slurmstepd: error: Detected 39 oom-kill event(s) in StepId=36616044.batch. Some of your processes may have been killed by the cgroup out-of-memory handler.\n",
    );
    assert_eq!(cause(&d), Some(LikelyCause::OutOfMemory));
}

fn diagnose_of(exit: &str, stderr: &str) -> Option<Diagnosis> {
    read_console(&console_with(exit, stderr))
        .error
        .as_ref()
        .and_then(diagnose)
}

/// A report of the real-failure corpus, verbatim.
fn corpus(slug: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/nextflow/real-failures")
        .join(slug)
        .join("report.txt");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn an_unknown_profile_is_named_with_where_to_launch() {
    let d = console(&corpus("nf-core-rnaseq-1574"));
    assert_eq!(cause(&d), Some(LikelyCause::UnknownProfile));
    worded(&d);
    let d = d.expect("a diagnosis");
    assert!(d.hint.contains("`singularity`"), "{}", d.hint);
    assert!(d.next_step.contains("-show-profiles"), "{}", d.next_step);
}

#[test]
fn a_failed_download_is_the_network_and_quotes_the_server() {
    let d = console(&corpus("nf-core-rnafusion-71"));
    assert_eq!(cause(&d), Some(LikelyCause::Network));
    worded(&d);
    assert!(
        d.expect("a diagnosis")
            .hint
            .contains("ERROR 404: Not Found")
    );
}

#[test]
fn a_path_checked_for_existence_is_a_missing_file_not_unknown() {
    let d = console(&corpus("nextflow-io-nextflow-3546"));
    assert_eq!(cause(&d), Some(LikelyCause::MissingFile));
    worded(&d);
    assert!(
        d.expect("a diagnosis")
            .hint
            .contains("/my/nonexisting/path")
    );
}

#[test]
fn a_parameter_missing_from_the_schema_is_named_by_nf_validation_crash() {
    let d = console(&corpus("nextflow-io-nf-validation-48"));
    assert_eq!(cause(&d), Some(LikelyCause::Validation));
    worded(&d);
    let d = d.expect("a diagnosis");
    assert!(d.hint.contains("`project`"), "{}", d.hint);
    assert!(
        d.next_step.contains("nextflow_schema.json"),
        "{}",
        d.next_step
    );
}

#[test]
fn a_tool_failing_on_its_own_terms_is_quoted_not_guessed() {
    // A truncated archive: gzip and tar say so; the Docker swap warning above is noise.
    let d = console(&corpus("nf-core-mag-304"));
    assert_eq!(cause(&d), Some(LikelyCause::TaskError));
    worded(&d);
    let hint = d.expect("a diagnosis").hint;
    assert!(hint.contains("unexpected end of file"), "{hint}");
    assert!(!hint.contains("swap"), "{hint}");
}

#[test]
fn an_option_run_as_a_command_is_a_broken_line_not_a_missing_program() {
    let d = console(&corpus("hillerlab-make_lastz_chains-50"));
    assert_eq!(cause(&d), Some(LikelyCause::TaskError));
    worded(&d);
    let hint = d.expect("a diagnosis").hint;
    assert!(
        hint.contains("`--workdir`") && hint.contains("across lines"),
        "{hint}"
    );
}

#[test]
fn a_container_engine_the_machine_lacks_is_named() {
    let d = console(&corpus("nf-core-rnaseq-887"));
    assert_eq!(cause(&d), Some(LikelyCause::CommandNotFound));
    assert!(d.expect("a diagnosis").hint.contains("`singularity`"));
}

#[test]
fn nf_schema_names_the_parameter_and_the_samplesheet_field() {
    // nf-schema 2's format (its SchemaEvaluator and ValidationResult), as in
    // nextflow-io/nf-schema's own tests.
    let d = console(
        "ERROR ~ Validation of pipeline parameters failed!\n\n -- Check '.nextflow.log' file for details\nThe following invalid input values have been detected:\n\n* --input (samplesheet.csv): Validation of file failed:\n\t-> Entry 1: Error for field 'strandedness' (weird): Expected any of [forward, reverse, unstranded] (Strandedness must be provided and be one of 'forward', 'reverse' or 'unstranded')\n",
    );
    assert_eq!(cause(&d), Some(LikelyCause::Validation));
    worded(&d);
    let hint = d.expect("a diagnosis").hint;
    assert!(
        hint.contains("`--input`") && hint.contains("`strandedness`"),
        "{hint}"
    );
    let d = console(
        "ERROR: Validation of pipeline parameters failed!\n* Missing required parameter(s): ref_fasta\n",
    );
    assert_eq!(cause(&d), Some(LikelyCause::Validation));
}

/// The error a corpus report's text gives, read as a `.nextflow.log` (which reads a console's
/// lines too).
fn log_error(slug: &str) -> codaris_nextflow::runlog::RunError {
    read_log(corpus(slug).as_bytes())
        .expect("readable")
        .error
        .expect("an error")
}

#[test]
fn a_log_cut_to_its_task_records_names_the_first_failed_task() {
    let error = log_error("nf-core-rnaseq-714");
    assert_eq!(
        error.process.as_deref(),
        Some("NFCORE_RNASEQ:RNASEQ:PREPARE_GENOME:UNTAR_SALMON_INDEX")
    );
    assert_eq!(error.tag.as_deref(), Some("salmon.tar.gz"));
    assert_eq!(error.exit_status, Some(127));
    assert_eq!(
        diagnose(&error).map(|d| d.cause),
        Some(LikelyCause::CommandNotFound)
    );
}

#[test]
fn a_failed_submission_record_names_the_task_and_the_schedulers_words() {
    let error = log_error("nextflow-io-nextflow-981");
    assert_eq!(error.process.as_deref(), Some("align"));
    assert_eq!(error.exit_status, Some(1));
    assert_eq!(
        diagnose(&error).map(|d| d.cause),
        Some(LikelyCause::SubmissionFailed)
    );
}

#[test]
fn a_report_cut_to_the_blocks_sections_is_still_the_tasks() {
    // No `Error executing process` line: the process comes from the nf-core module's
    // versions heredoc, the cause from its stderr.
    let report = read_console(&corpus("nf-core-nanoseq-250"));
    let error = report.error.as_ref().expect("an error");
    assert_eq!(
        error.process.as_deref(),
        Some("NFCORE_NANOSEQ:NANOSEQ:QCFASTQ_NANOPLOT_FASTQC:NANOPLOT")
    );
    assert_eq!(error.exit_status, Some(2));
    let d = diagnose(error).expect("a diagnosis");
    assert_eq!(d.cause, LikelyCause::TaskError);
    assert!(d.hint.contains("usage: NanoPlot"), "{}", d.hint);
    // Only `Command error:` kept: the file the tool could not find.
    let d = console(&corpus("nf-core-rnafusion-156"));
    assert_eq!(cause(&d), Some(LikelyCause::MissingFile));
}

#[test]
fn an_error_pasted_in_markdown_bold_is_read() {
    let d = console(&corpus("nf-core-cutandrun-253"));
    assert_eq!(cause(&d), Some(LikelyCause::MissingFile));
    assert!(!d.expect("a diagnosis").hint.contains("**"));
}

#[test]
fn a_report_cut_to_its_caused_by_line_still_names_the_task() {
    // nf-core-smrnaseq-485, its `Caused by:` alone.
    let report = read_console(
        "Caused by:\n  Process `NFCORE_SMRNASEQ:MIRNA_QUANT:SEQCLUSTER_COLLAPSE (Treatment1_REP1)` terminated with an error exit status (137)\n",
    );
    let error = report.error.as_ref().expect("an error");
    assert_eq!(
        error.process.as_deref(),
        Some("NFCORE_SMRNASEQ:MIRNA_QUANT:SEQCLUSTER_COLLAPSE")
    );
    assert_eq!(error.tag.as_deref(), Some("Treatment1_REP1"));
    assert_eq!(error.exit_status, Some(137));
    assert_eq!(
        diagnose(error).map(|d| d.cause),
        Some(LikelyCause::OutOfMemory)
    );
    // A task Nextflow is retrying is not the run's failure (sanger-tol/readmapping#152).
    let report = read_console(
        "[b8/e9892b] NOTE: Process `SANGERTOL_READMAPPING:READMAPPING:CONVERT_STATS:CRUMBLE (Macahu1)` terminated with an error exit status (137) -- Execution is retried (1)\n",
    );
    assert_eq!(report.error, None);
}
