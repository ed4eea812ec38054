//! Consoles of real runs, classic and agent mode.

use codaris_nextflow::runlog::{ConsoleStyle, ErrorForm, Summary, TaskState, read_console};
use pretty_assertions::assert_eq;

use super::fixture_text;

#[test]
fn agent_mode_gives_the_block_the_recap_and_the_summary() {
    let report = read_console(&fixture_text("agent-failed.out"));
    assert_eq!(report.style, ConsoleStyle::Agent);
    assert_eq!(report.pipeline.as_deref(), Some("main.nf"));
    assert_eq!(report.profile.as_deref(), Some("standard"));
    assert_eq!(report.work_dir.as_deref(), Some("/runs/demo-run/work"));
    assert_eq!(report.warnings.len(), 1);
    let tasks: Vec<(Option<&str>, &str, Option<&str>, TaskState)> = report
        .tasks
        .iter()
        .map(|t| {
            (
                t.hash.as_deref(),
                t.process.as_str(),
                t.tag.as_deref(),
                t.state,
            )
        })
        .collect();
    assert_eq!(
        tasks,
        vec![
            (Some("08/95dc38"), "OK", Some("1"), TaskState::Submitted),
            (Some("c5/f00c97"), "FAIL", Some("1"), TaskState::Failed),
            (Some("e9/b5dbab"), "OK", Some("2"), TaskState::Submitted),
        ]
    );
    let error = report.error.as_ref().map(|e| {
        (
            e.form,
            e.process.as_deref(),
            e.tag.as_deref(),
            e.exit_status,
            e.command.text(),
            e.stderr.text(),
            e.work_dir.as_deref(),
        )
    });
    assert_eq!(
        error,
        Some((
            ErrorForm::ProcessFailed,
            Some("FAIL"),
            Some("1"),
            Some(3),
            "echo 'boom on stderr' >&2; exit 3".to_string(),
            "boom on stderr".to_string(),
            Some("/runs/demo-run/work/c5/f00c97b40934822f3c080d59dc7887"),
        ))
    );
    assert_eq!(
        report.summary,
        Some(Summary {
            success: false,
            completed: 3,
            failed: 1,
            cached: 0
        })
    );
    let text = report.render();
    assert!(
        text.contains("summary: failed completed=3 failed=1 cached=0\n"),
        "{text}"
    );
}

#[test]
fn the_agent_recap_alone_is_enough_to_name_the_failure() {
    let report = read_console(&fixture_text("agent-observer-test.out"));
    assert_eq!(report.style, ConsoleStyle::Agent);
    assert_eq!(report.pipeline.as_deref(), Some("nf-core/rnaseq 3.14.0"));
    assert_eq!(report.profile.as_deref(), Some("test,docker"));
    assert_eq!(report.warnings.len(), 2);
    let error = report.error.as_ref().map(|e| {
        (
            e.process.as_deref(),
            e.tag.as_deref(),
            e.exit_status,
            e.stderr.text(),
            e.work_dir.as_deref(),
        )
    });
    assert_eq!(
        error,
        Some((
            Some("FASTQC"),
            Some("sample_1"),
            Some(127),
            "bash: fastqc: command not found".to_string(),
            Some("/tmp/work/ab/123456")
        ))
    );
    let text = report.render();
    assert!(
        text.contains("likely_cause: command_not_found — likely `fastqc` is not installed"),
        "{text}"
    );
    assert_eq!(
        report.summary.map(|s| (s.completed, s.failed)),
        Some((7, 2))
    );
}

#[test]
fn a_classic_missing_output_block() {
    let report = read_console(&fixture_text("rnafusion-missing-output.out"));
    assert_eq!(report.style, ConsoleStyle::Classic);
    let error = report.error.as_ref().expect("an error");
    assert_eq!(error.form, ErrorForm::MissingOutput);
    assert_eq!(
        error.subject.as_deref(),
        Some("./tmp/fusions.results.filtered.tsv")
    );
    assert_eq!(error.process.as_deref(), Some("ericscript"));
    assert_eq!(error.exit_status, Some(0));
    assert_eq!(error.command.lines.len(), 7);
    assert_eq!(error.stdout.lines.len(), 4);
    assert_eq!(
        error.stderr.lines.last().map(String::as_str),
        Some("Execution halted")
    );
    assert!(report.render().contains("likely_cause: missing_output"));
}

#[test]
fn no_such_variable_with_its_script_line() {
    let report = read_console(&fixture_text("variantcalling-no-such-variable.out"));
    let error = report.error.as_ref().expect("an error");
    assert_eq!(error.form, ErrorForm::NoSuchVariable);
    assert_eq!(error.subject.as_deref(), Some("ch_index"));
    let location = error.location.as_ref().expect("a location");
    assert_eq!(
        location.file,
        "/nfs/users/nfs_m/mm49/workspace/tol-it/nextflow/sanger-tol/releases/variantcalling-1.1.1/./workflows/variantcalling.nf"
    );
    assert_eq!(location.line, Some(108));
    let text = report.render();
    assert!(text.contains("variable: `ch_index`\n"), "{text}");
    assert!(text.contains("variantcalling.nf` line 108\n"), "{text}");
}

#[test]
fn unknown_method_invocation() {
    let report = read_console(&fixture_text("pgsc-unknown-method.out"));
    let error = report.error.as_ref().expect("an error");
    assert_eq!(error.form, ErrorForm::UnknownMethod);
    assert_eq!(error.subject.as_deref(), Some("call"));
}

#[test]
fn config_errors_in_both_parser_generations() {
    let v2 = read_console(&fixture_text("config-error.out"));
    let error = v2.error.as_ref().expect("an error");
    assert_eq!(error.form, ErrorForm::ConfigError);
    assert_eq!(
        error.location.as_ref().map(|l| (l.file.as_str(), l.line)),
        Some(("nextflow.config", Some(252)))
    );
    assert!(
        error.cause[0].contains("Invalid include source"),
        "{:?}",
        error.cause
    );

    let atac = read_console(&fixture_text("atacseq-config.out"));
    assert_eq!(atac.version.as_deref(), Some("26.04.1"));
    assert_eq!(
        atac.warnings,
        vec!["Cannot read project manifest -- Cause:  Config parsing failed"]
    );
    let error = atac.error.as_ref().expect("an error");
    assert_eq!(error.location.as_ref().map(|l| l.line), Some(Some(298)));

    let v1 = read_console(&fixture_text("mtdna-unable-to-parse.out"));
    let error = v1.error.as_ref().expect("an error");
    assert_eq!(error.form, ErrorForm::ConfigError);
    assert_eq!(
        error.subject.as_deref(),
        Some("/media/manish/Data/Jyoti_Mridha_AIC/Program/mtdna-server-2-2.1.14/nextflow.config")
    );
    assert!(
        error
            .cause
            .iter()
            .any(|c| c.contains("Number ending with underscores is invalid"))
    );
}

#[test]
fn the_classic_progress_table_keeps_one_row_per_process() {
    let report = read_console(&fixture_text("distiller-classic.out"));
    assert_eq!(report.style, ConsoleStyle::Classic);
    assert_eq!(report.version.as_deref(), Some("20.01.0"));
    assert_eq!(report.pipeline.as_deref(), Some("distiller.nf"));
    assert_eq!(report.run_name.as_deref(), Some("gigantic_mercator"));
    assert_eq!(report.executor.as_deref(), Some("local (3)"));
    assert_eq!(report.retried, 1);
    assert_eq!(report.tasks.len(), 8, "{:#?}", report.tasks);
    let row = report
        .tasks
        .iter()
        .find(|t| t.process == "map_parse_sort_chunks")
        .expect("the running row");
    assert_eq!(row.hash.as_deref(), Some("25/b975c5"));
    assert_eq!(row.state, TaskState::Running);
    assert_eq!(
        row.progress.as_deref(),
        Some("[ 67%] 2 of 3, failed: 2, retries: 2")
    );
    assert_eq!(report.error, None);
}

#[test]
fn the_agent_answer_whole() {
    let text = read_console(&fixture_text("agent-failed.out")).render();
    assert_eq!(text, include_str!("agent-failed.answer"));
}

#[test]
fn the_log_comes_first_and_the_console_fills_what_it_lacks()
-> Result<(), Box<dyn std::error::Error>> {
    use codaris_nextflow::runlog::{read_log, render_analysis};
    // A log cut before its block names task and work dir; the console has the stderr.
    let log = read_log(&super::fixture("nf-lo-retried.log")[..])?;
    let console = read_console(
        "ERROR ~ Error executing process > 'PREPROC:splitsrc (splitsrc)'\n\nCommand error:\n  .command.sh: line 1: faSplit: command not found\n",
    );
    let text = render_analysis(Some(&log), Some(&console));
    assert!(text.contains("process: `PREPROC:splitsrc`\n"), "{text}");
    assert!(
        text.contains("stderr_tail: `.command.sh: line 1: faSplit: command not found`\n"),
        "{text}"
    );
    assert!(text.contains("likely `faSplit` is not installed"), "{text}");
    assert!(
        text.contains(
            "work_dir: `/home/udiland/align_and_lift/work/f5/b3338cd3e787aaace18b4b74e199c5`\n"
        ),
        "{text}"
    );
    Ok(())
}

#[test]
fn ansi_log_false_lines_are_one_task_each() {
    // The message of a `nextflow.Session` record in bettercallsal issue #1's log is exactly what
    // `-ansi-log false` prints on the console.
    let text = "[3f/b9f46c] Submitted process > BETTERCALLSAL_DB:DOWNLOAD_PDG_METADATA (dl_pdg_metadata.py)\n[aa/000001] Cached process > MULTIQC\n";
    let report = read_console(text);
    assert_eq!(report.style, ConsoleStyle::Classic);
    let tasks: Vec<(&str, Option<&str>, TaskState)> = report
        .tasks
        .iter()
        .map(|t| (t.process.as_str(), t.tag.as_deref(), t.state))
        .collect();
    assert_eq!(
        tasks,
        vec![
            (
                "BETTERCALLSAL_DB:DOWNLOAD_PDG_METADATA",
                Some("dl_pdg_metadata.py"),
                TaskState::Submitted
            ),
            ("MULTIQC", None, TaskState::Cached),
        ]
    );
}
