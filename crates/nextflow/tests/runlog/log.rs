//! `.nextflow.log` excerpts from real runs.

use codaris_nextflow::runlog::{ErrorForm, read_log};
use pretty_assertions::assert_eq;

use super::fixture;

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[test]
fn an_exit_1_block_gives_the_task_command_stderr_and_work_dir() -> TestResult {
    let report = read_log(&fixture("cleansumstats-exit1.log")[..])?;
    let error = report.error.clone().ok_or("no error found")?;
    assert_eq!(error.form, ErrorForm::ProcessFailed);
    assert_eq!(error.process.as_deref(), Some("check_sumstat_format"));
    assert_eq!(error.tag.as_deref(), Some("1"));
    assert_eq!(error.exit_status, Some(1));
    assert_eq!(
        error.cause,
        vec!["Process `check_sumstat_format (1)` terminated with an error exit status (1)"]
    );
    assert_eq!(
        error.command.lines.first().map(String::as_str),
        Some("# Sumstat file check on first 1000 lines")
    );
    assert_eq!(error.command.lines.len(), 11);
    assert!(error.stdout.is_empty(), "(empty) is no output");
    assert_eq!(
        error.stderr.lines,
        vec![
            "gzip: stdout: Broken pipe",
            "/cleansumstats/bin/check_and_format_sfile.sh: line 86: [: too many arguments",
            "one or more problems detected with the meta data format, see logfile",
        ]
    );
    assert_eq!(
        error.work_dir.as_deref(),
        Some("/cleansumstats/work/3d/5d47d6f9de0144058ba1d6f6034261")
    );
    assert_eq!(report.errors.len(), 1);
    assert_eq!(report.lines, 34);
    assert!(!report.finished);
    Ok(())
}

#[test]
fn the_rendered_answer_has_one_fact_per_line() -> TestResult {
    let report = read_log(&fixture("cleansumstats-exit1.log")[..])?;
    let text = report.render();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "log: 34 lines, 1 error records, finished: no");
    assert!(lines.contains(&"error: process_failed"));
    assert!(lines.contains(&"process: `check_sumstat_format`"));
    assert!(lines.contains(&"tag: `1`"));
    assert!(lines.contains(&"exit_status: 1"));
    assert!(lines.contains(&"work_dir: `/cleansumstats/work/3d/5d47d6f9de0144058ba1d6f6034261`"));
    let stderr = lines
        .iter()
        .find(|l| l.starts_with("stderr_tail: "))
        .ok_or("no stderr line")?;
    assert!(
        stderr.contains("gzip: stdout: Broken pipe\\n/cleansumstats/bin/"),
        "{stderr}"
    );
    // The tab inside the command is escaped, not printed raw.
    let command = lines
        .iter()
        .find(|l| l.starts_with("command: "))
        .ok_or("no command")?;
    assert!(command.contains("$rowsBefore\\t$rowsAfter"), "{command}");
    Ok(())
}

#[test]
fn a_log_cut_before_its_error_block_still_names_the_failing_task() -> TestResult {
    let report = read_log(&fixture("nf-lo-retried.log")[..])?;
    assert!(report.errors.is_empty());
    assert_eq!(report.retried, 2);
    let error = report
        .error
        .clone()
        .ok_or("the debug record should give the task")?;
    assert_eq!(error.form, ErrorForm::ProcessFailed);
    // The last failing task the log names.
    assert_eq!(error.process.as_deref(), Some("PREPROC:splitsrc"));
    assert_eq!(error.tag.as_deref(), Some("splitsrc"));
    assert_eq!(error.exit_status, Some(127));
    assert_eq!(
        error.work_dir.as_deref(),
        Some("/home/udiland/align_and_lift/work/f5/b3338cd3e787aaace18b4b74e199c5")
    );
    assert!(report.render().contains("likely_cause: command_not_found"));
    Ok(())
}

#[test]
fn a_log_starting_mid_record_with_no_error_header_reports_none() -> TestResult {
    let report = read_log(&fixture("differentialabundance-tail.log")[..])?;
    assert_eq!(report.error, None);
    assert_eq!(report.lines, 8);
    let text = report.render();
    assert!(text.contains("error: none found\n"), "{text}");
    assert!(text.contains("log_tail: `Mar-15 15:44:36.772 [main] INFO  nextflow.Nextflow - -[nf-core/differentialabundance] Pipeline completed with errors-`"), "{text}");
    Ok(())
}

#[test]
fn an_unknown_launcher_error_reads_the_exception_below_it() -> TestResult {
    let report = read_log(&fixture("ampliseq-no-such-variable.log")[..])?;
    let error = report.error.clone().ok_or("no error")?;
    assert_eq!(error.form, ErrorForm::NoSuchVariable);
    assert_eq!(error.subject.as_deref(), Some("outfile"));
    assert_eq!(
        error.message,
        "groovy.lang.MissingPropertyException: No such property: outfile for class: nextflow.script.WorkflowBinding"
    );
    // Stack frames are not kept.
    assert!(
        error.cause.iter().all(|c| !c.starts_with("at ")),
        "{:?}",
        error.cause
    );
    Ok(())
}

#[test]
fn an_unknown_config_attribute_is_a_config_error() -> TestResult {
    let report = read_log(&fixture("dualrnaseq-config.log")[..])?;
    let error = report.error.clone().ok_or("no error")?;
    assert_eq!(error.form, ErrorForm::ConfigError);
    assert_eq!(error.subject.as_deref(), Some("params.genomes_ignore"));
    assert!(report.render().contains("likely_cause: config_syntax"));
    Ok(())
}
