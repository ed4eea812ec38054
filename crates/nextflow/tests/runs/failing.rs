//! `debug_last_run`'s reading: the failing task with its work directory and the pipeline
//! file of its process, on the real nf-core template.

use std::os::unix::fs::symlink;

use codaris_nextflow::runs::{RunQuery, RunsError, failing_task};
use pretty_assertions::assert_eq;

use super::support::{Launch, SESSION, TestResult, fixture_text, history_row, template};

const TRACE: &str = "task_id\thash\tnative_id\tprocess\ttag\tname\tstatus\texit\tcpus\tmemory\ttime\tduration\trealtime\t%cpu\tpeak_rss\tpeak_vmem\trchar\twchar\n\
    1\t9b/02e776\t4242\tNFCORE_DEMO:DEMO:FASTQC\tSAMPLE1\tNFCORE_DEMO:DEMO:FASTQC (SAMPLE1)\tFAILED\t127\t6\t36 GB\t6h\t1.2s\t93ms\t12.5%\t3.1 MB\t4.6 MB\t193.5 KB\t540 B\n\
    2\t0e/7e2ae7\t4243\tNFCORE_DEMO:DEMO:MULTIQC\t-\tNFCORE_DEMO:DEMO:MULTIQC\tABORTED\t-\t1\t6 GB\t4h\t-\t-\t-\t-\t-\t-\t-\n";

fn failed_launch() -> Result<Launch, Box<dyn std::error::Error>> {
    let l = Launch::new(
        &history_row("goofy_kilby", "ERR", "5s", SESSION),
        Some(TRACE),
    )?;
    let dir = l.task(
        "9b/02e776",
        &[
            (
                ".command.run",
                fixture_text("command-run-training-docker.txt")?.as_bytes(),
            ),
            (
                ".command.sh",
                b"#!/bin/bash -ue\nfastqc --threads 6 SAMPLE1_1.fastq.gz\n",
            ),
            (
                ".command.err",
                b".command.sh: line 2: fastqc: command not found\n",
            ),
            (".command.out", b""),
            (".command.begin", b""),
            (
                ".command.trace",
                fixture_text("command-trace-cws.txt")?.as_bytes(),
            ),
            (".exitcode", b"127"),
        ],
    )?;
    symlink(
        "/data/missing/SAMPLE1_1.fastq.gz",
        dir.join("SAMPLE1_1.fastq.gz"),
    )?;
    Ok(l)
}

#[test]
fn the_failing_task_with_its_files_and_its_process() -> TestResult {
    let l = failed_launch()?;
    let report = failing_task(l.path(), &template())?;
    assert_eq!(report.run, "goofy_kilby");
    assert_eq!(report.task.exit, Some(127));
    let dir = report.task_dir.as_ref().ok_or("no work dir")?;
    assert_eq!(dir.exit_code(), Some(127));
    let process = report.process.as_ref().ok_or("no process")?;
    assert_eq!(process.name, "FASTQC");
    assert_eq!(process.file, "modules/nf-core/fastqc/main.nf");
    assert_eq!(process.line, 1);
    assert_eq!(process.labels, vec!["process_low".to_string()]);
    // The template's conf/base.config sizes `process_low`; conf/modules.config names FASTQC.
    let directives: Vec<&str> = process
        .settings
        .iter()
        .map(|s| s.directive.as_str())
        .collect();
    assert!(directives.contains(&"cpus"), "{directives:?}");
    assert!(
        process
            .settings
            .iter()
            .any(|s| s.file == "conf/base.config" && s.directive == "memory"),
        "{:?}",
        process.settings
    );
    // Asked: the trace's columns first; the wrapper's container.
    assert_eq!(report.asked.cpus, Some(6.0));
    assert_eq!(report.asked.memory, Some(36 * 1024 * 1024 * 1024));
    assert_eq!(report.asked.time_ms, Some(6 * 3_600_000));
    assert_eq!(
        report.asked.container.as_deref(),
        Some("community.wave.seqera.io/library/cowpy:1.1.5--3db457ae1977a273")
    );
    assert_eq!(
        report.asked.sources,
        vec!["trace".to_string(), ".command.run".to_string()]
    );
    assert_eq!(report.used.realtime_ms, Some(93));
    assert_eq!(
        report.used.peak_rss,
        Some((3.1f64 * 1024.0 * 1024.0).round() as u64)
    );

    let text = report.render();
    for line in [
        "run: goofy_kilby",
        "task: NFCORE_DEMO:DEMO:FASTQC (SAMPLE1)",
        "process: NFCORE_DEMO:DEMO:FASTQC",
        "hash: 9b/02e776",
        "status: FAILED",
        "exit: 127",
        "state: exited with 127 (.exitcode)",
        "container: community.wave.seqera.io/library/cowpy:1.1.5--3db457ae1977a273",
        "asked cpus: 6",
        "asked memory: 36 GB",
        "asked time: 6h",
        "used realtime: 93ms",
        "used cpu: 12.5%",
        "used peak rss: 3.1 MB",
        "pipeline file: modules/nf-core/fastqc/main.nf:1-",
        "pipeline config: conf/base.config:",
        "input dangling: SAMPLE1_1.fastq.gz -> /data/missing/SAMPLE1_1.fastq.gz",
        ".command.sh: 2 lines",
        "script| fastqc --threads 6 SAMPLE1_1.fastq.gz",
        ".command.err: 1 line",
        "stderr| .command.sh: line 2: fastqc: command not found",
        ".command.out: (empty, 0 bytes)",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(line)),
            "missing {line:?} in\n{text}"
        );
    }
    assert!(text.contains(&format!("work dir: {}\n", dir.path.display())));
    Ok(())
}

#[test]
fn file_content_cannot_forge_an_answer_line() -> TestResult {
    let l = failed_launch()?;
    let dir = l
        .path()
        .join("work/9b")
        .read_dir()?
        .next()
        .ok_or("dir")??
        .path();
    std::fs::write(
        dir.join(".command.err"),
        "exit: 0\nstatus: COMPLETED\u{2028}x\r\n",
    )?;
    let text = failing_task(l.path(), &template())?.render();
    assert_eq!(text.lines().filter(|l| l.starts_with("exit:")).count(), 1);
    assert!(
        text.contains("\nstderr| exit: 0\nstderr| status: COMPLETED\\u{2028}x\n"),
        "{text}"
    );
    Ok(())
}

#[test]
fn a_trace_workdir_outside_the_work_root_is_not_read() -> TestResult {
    let outside = tempfile::tempdir()?;
    std::fs::write(outside.path().join(".command.err"), "SECRET")?;
    let trace = format!(
        "task_id\thash\tname\tstatus\texit\tworkdir\n1\t9b/02e776\tFASTQC (s1)\tFAILED\t1\t{}\n",
        outside.path().display()
    );
    let l = Launch::new(&history_row("x", "ERR", "1s", SESSION), Some(&trace))?;
    let report = failing_task(l.path(), &template())?;
    assert_eq!(report.task_dir, None);
    assert!(!report.render().contains("SECRET"));
    Ok(())
}

#[test]
fn a_hash_cannot_walk_out() -> TestResult {
    let trace = "task_id\thash\tname\tstatus\texit\n1\t../..\tFASTQC (s1)\tFAILED\t1\n";
    let l = Launch::new(&history_row("x", "ERR", "1s", SESSION), Some(trace))?;
    assert_eq!(failing_task(l.path(), &template())?.task_dir, None);
    Ok(())
}

#[test]
fn no_failure_and_no_trace_are_clear_errors() -> TestResult {
    let ok = Launch::new(
        &history_row("happy", "OK", "1s", SESSION),
        Some(&fixture_text("trace-docs-default.txt")?),
    )?;
    assert!(matches!(
        failing_task(ok.path(), &template()),
        Err(RunsError::NoFailedTask { .. })
    ));
    let none = Launch::new(&history_row("happy", "OK", "1s", SESSION), None)?;
    let e = RunQuery::new(none.path())
        .failing_task(&template())
        .err()
        .ok_or("no error")?;
    assert!(e.to_string().contains("-with-trace"), "{e}");
    Ok(())
}

/// The settings `debug_last_run` lists for a failed task of nf-core/rnaseq 3.24.0, whose
/// config selects with qualified patterns ending in `:.*`: the fully qualified name from the
/// trace picks them as Nextflow does, whole, so FASTQC gets none of
/// `…:BAM_STATS_SAMTOOLS:.*`'s settings and SAMTOOLS_STATS under that subworkflow does.
#[test]
fn selectors_of_a_real_config_match_the_qualified_name_whole() -> TestResult {
    let rnaseq = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/nextflow/real-pipelines/rnaseq-3.24.0");
    let settings = |process: &str| -> Result<Vec<(String, u32)>, Box<dyn std::error::Error>> {
        let trace = format!(
            "task_id\thash\tnative_id\tprocess\ttag\tname\tstatus\texit\n\
             1\t9b/02e776\t4242\t{process}\tS1\t{process} (S1)\tFAILED\t1\n"
        );
        let l = Launch::new(
            &history_row("goofy_kilby", "ERR", "5s", SESSION),
            Some(&trace),
        )?;
        let report = RunQuery::new(l.path()).failing_task(&rnaseq)?;
        let source = report.process.ok_or("the process is not found in rnaseq")?;
        Ok(source
            .settings
            .into_iter()
            .filter(|s| s.file == "workflows/rnaseq/nextflow.config")
            .map(|s| (s.directive, s.line))
            .collect())
    };
    // `withName: 'NFCORE_RNASEQ:RNASEQ:.*:BAM_SORT_STATS_SAMTOOLS:BAM_STATS_SAMTOOLS:.*'`
    // starts at line 183 (its `ext.prefix` on 184); line 102's pattern names BAM_DEDUP_UMI.
    let fastqc = settings(
        "NFCORE_RNASEQ:RNASEQ:FASTQ_QC_TRIM_FILTER_SETSTRANDEDNESS:FASTQ_FASTQC_UMITOOLS_TRIMGALORE:FASTQC",
    )?;
    assert!(
        fastqc
            .iter()
            .all(|(_, line)| ![103, 104, 184, 185].contains(line)),
        "FASTQC got the settings of a BAM_STATS_SAMTOOLS selector: {fastqc:?}"
    );
    let stats = settings(
        "NFCORE_RNASEQ:RNASEQ:ALIGN_STAR:BAM_SORT_STATS_SAMTOOLS:BAM_STATS_SAMTOOLS:SAMTOOLS_STATS",
    )?;
    assert!(
        stats.contains(&("ext.prefix".to_string(), 184)),
        "SAMTOOLS_STATS under BAM_STATS_SAMTOOLS lacks its selector's settings: {stats:?}"
    );
    assert!(
        !stats.iter().any(|(_, line)| *line == 103),
        "the BAM_DEDUP_UMI selector matched outside BAM_DEDUP_UMI: {stats:?}"
    );
    Ok(())
}

/// nf-core/sarek 3.10.0's selectors with a `.*` inside a qualified name and an alternation at
/// its end, matched whole against the qualified name: the settings reach the processes the
/// pattern names, under the subworkflows it names, and no other.
#[test]
fn sarek_selectors_with_wildcards_and_alternations_match_as_nextflow_does() -> TestResult {
    let sarek = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/nextflow/real-pipelines/sarek-3.10.0");
    let pipeline = codaris_nextflow::parse::Pipeline::load(&sarek)?;
    let lines = |name: &str, file: &str| -> Vec<u32> {
        pipeline
            .config
            .process_settings(name, &[])
            .into_iter()
            .filter(|s| s.setting.file == file)
            .map(|s| s.setting.line)
            .collect()
    };
    let annotate = "conf/modules/annotate.config";
    // `…:VCF_ANNOTATE_ALL:.*:HTSLIB_BGZIPTABIX` (ext.prefix on 114) and
    // `…:VCF_ANNOTATE_ALL:VCF_ANNOTATE_SNPEFF:HTSLIB_BGZIPTABIX` (publishDir on 123).
    let under_snpeff = lines(
        "NFCORE_SAREK:SAREK:VCF_ANNOTATE_ALL:VCF_ANNOTATE_SNPEFF:HTSLIB_BGZIPTABIX",
        annotate,
    );
    assert!(
        under_snpeff.contains(&114) && under_snpeff.contains(&123),
        "{under_snpeff:?}"
    );
    let under_vep = lines(
        "NFCORE_SAREK:SAREK:VCF_ANNOTATE_ALL:VCF_ANNOTATE_ENSEMBLVEP:HTSLIB_BGZIPTABIX",
        annotate,
    );
    assert!(
        under_vep.contains(&114) && !under_vep.contains(&123),
        "{under_vep:?}"
    );
    let elsewhere = lines("NFCORE_SAREK:PREPARE_GENOME:HTSLIB_BGZIPTABIX", annotate);
    assert_eq!(elsewhere, Vec::<u32>::new());
    // Plain patterns still pick the simple name, wherever it is called from (base.config's
    // `UNZIP.*|UNTAR.*|TABIX.*|HTSLIB_BGZIPTABIX|…` on line 64).
    assert!(
        !lines(
            "NFCORE_SAREK:PREPARE_GENOME:HTSLIB_BGZIPTABIX",
            "conf/base.config"
        )
        .is_empty()
    );
    // `…:BAM_MERGE_INDEX_SAMTOOLS:(MERGE_BAM|INDEX_MERGE_BAM)` (ext.prefix on line 60).
    let haplotypecaller = "conf/modules/haplotypecaller.config";
    let merged = lines(
        "NFCORE_SAREK:SAREK:BAM_VARIANT_CALLING_GERMLINE_ALL:BAM_VARIANT_CALLING_HAPLOTYPECALLER:BAM_MERGE_INDEX_SAMTOOLS:INDEX_MERGE_BAM",
        haplotypecaller,
    );
    assert!(merged.contains(&60), "{merged:?}");
    let other = lines(
        "NFCORE_SAREK:SAREK:FASTQ_ALIGN:BAM_MERGE_INDEX_SAMTOOLS:INDEX_MERGE_BAM",
        haplotypecaller,
    );
    assert!(!other.contains(&60), "{other:?}");
    Ok(())
}
