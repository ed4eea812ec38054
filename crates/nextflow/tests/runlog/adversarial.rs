//! Inputs no real run should write, and some that truncated or odd files do.

use std::io::{BufReader, Read};

use codaris_nextflow::runlog::{
    ConsoleStyle, ErrorForm, MAX_ERRORS, MAX_LINE_BYTES, MAX_TASKS, read_console, read_log,
};
use pretty_assertions::assert_eq;

use super::fixture;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const HEADER: &str = "Mar-02 13:56:14.280 [Task monitor] ERROR nextflow.processor.TaskProcessor - ";

#[test]
fn an_empty_log_reports_nothing() -> TestResult {
    let report = read_log(&b""[..])?;
    assert_eq!(
        (report.error, report.lines, report.tail.len()),
        (None, 0, 0)
    );
    Ok(())
}

#[test]
fn a_log_with_no_error_reports_none_and_says_it_finished() -> TestResult {
    let log = "Jul-27 18:57:40.932 [main] DEBUG nextflow.cli.Launcher - $> nextflow run main.nf\n\
               Jul-27 18:57:40.993 [main] INFO  nextflow.cli.CmdRun - N E X T F L O W  ~  version 21.04.3\n\
               Jul-27 18:57:45.000 [main] DEBUG nextflow.script.ScriptRunner - > Execution complete -- Goodbye\n";
    let report = read_log(log.as_bytes())?;
    assert_eq!(report.error, None);
    assert_eq!(report.lines, 3);
    assert!(report.finished);
    // The same record without ScriptRunner's `> `.
    let log2 = "Jul-27 18:57:45.000 [main] DEBUG nextflow.util.ThreadPoolManager - Execution complete -- Goodbye\n";
    assert!(read_log(log2.as_bytes())?.finished);
    Ok(())
}

#[test]
fn crlf_line_ends_read_like_lf() -> TestResult {
    let lf = fixture("cleansumstats-exit1.log");
    let crlf: Vec<u8> = String::from_utf8(lf.clone())?
        .replace('\n', "\r\n")
        .into_bytes();
    let a = read_log(&lf[..])?;
    let b = read_log(&crlf[..])?;
    assert_eq!(a.error, b.error);
    assert!(b.tail.iter().all(|l| !l.ends_with('\r')));
    Ok(())
}

#[test]
fn bytes_that_are_not_utf8_are_replaced_not_fatal() -> TestResult {
    let mut log = HEADER.as_bytes().to_vec();
    log.extend_from_slice(
        b"Error executing process > 'P (s\xff1)'\nCommand error:\n  bad \xfe\xfd byte\n",
    );
    let report = read_log(&log[..])?;
    let error = report.error.clone().ok_or("no error")?;
    assert_eq!(error.tag.as_deref(), Some("s\u{fffd}1"));
    assert_eq!(error.stderr.lines, vec!["bad \u{fffd}\u{fffd} byte"]);
    Ok(())
}

/// A reader of `len` bytes of `x` with no newline, then `tail`, generated as read, so the test
/// itself holds no huge buffer.
struct HugeLine {
    left: usize,
    tail: std::io::Cursor<Vec<u8>>,
}

impl Read for HugeLine {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left > 0 {
            let n = buf.len().min(self.left);
            buf[..n].fill(b'x');
            self.left -= n;
            return Ok(n);
        }
        self.tail.read(buf)
    }
}

#[test]
fn a_huge_line_is_cut_and_what_follows_is_still_read() -> TestResult {
    let tail =
        format!("\n{HEADER}Error executing process > 'AFTER (1)'\nCommand exit status:\n  137\n");
    let reader = BufReader::new(HugeLine {
        left: 64 * 1024 * 1024,
        tail: std::io::Cursor::new(tail.into_bytes()),
    });
    let report = read_log(reader)?;
    assert_eq!(report.long_lines, 1);
    assert_eq!(report.lines, 4);
    let error = report
        .error
        .clone()
        .ok_or("the block after the long line")?;
    assert_eq!(
        (error.process.as_deref(), error.exit_status),
        (Some("AFTER"), Some(137))
    );
    // Tail lines are bounded too.
    assert!(report.tail.iter().all(|l| l.len() <= MAX_LINE_BYTES));
    Ok(())
}

#[test]
fn a_huge_line_inside_an_error_block_stays_bounded_in_the_answer() -> TestResult {
    let mut log = format!("{HEADER}Error executing process > 'P'\nCommand error:\n  ");
    log.push_str(&"y".repeat(MAX_LINE_BYTES * 3));
    log.push('\n');
    let report = read_log(log.as_bytes())?;
    let error = report.error.clone().ok_or("no error")?;
    assert!(error.stderr.lines[0].chars().count() <= 1001);
    assert!(report.render().len() < 20_000);
    Ok(())
}

#[test]
fn a_log_truncated_inside_the_block_keeps_what_was_written() -> TestResult {
    let full = String::from_utf8(fixture("cleansumstats-exit1.log"))?;
    let cut = &full[..full.find("Command exit status:").ok_or("marker")?];
    let report = read_log(cut.as_bytes())?;
    let error = report.error.clone().ok_or("no error")?;
    assert_eq!(error.exit_status, Some(1), "from the Caused by line");
    assert_eq!(error.stderr.lines.len(), 0);
    assert_eq!(error.work_dir, None);
    // A cut in the middle of a line is a line too.
    let half = &full[..full.len() - 10];
    assert!(read_log(half.as_bytes())?.error.is_some());
    Ok(())
}

#[test]
fn interleaved_threads_keep_each_record_with_its_own_lines() -> TestResult {
    let log = format!(
        "Mar-02 13:56:14.200 [Task submitter] INFO  nextflow.Session - [3f/b9f46c] Submitted process > B (2)\n\
         {HEADER}Error executing process > 'A (1)'\n\
         \n\
         Caused by:\n  Process `A (1)` terminated with an error exit status (127)\n\
         Mar-02 13:56:14.281 [Actor Thread 3] DEBUG nextflow.Session - Session aborted -- Cause: Process `A (1)` terminated\n\
         Work dir:\n  /not/the/error/work/dir\n\
         Mar-02 13:56:14.282 [Task monitor] ERROR nextflow.processor.TaskProcessor - Error executing process > 'B (2)'\n\
         Command exit status:\n  1\n"
    );
    let report = read_log(log.as_bytes())?;
    assert_eq!(report.errors.len(), 2);
    let first = report.error.ok_or("no error")?;
    assert_eq!(
        (first.process.as_deref(), first.exit_status),
        (Some("A"), Some(127))
    );
    // The `Work dir:` after the DEBUG header belongs to that record, not to A's block.
    assert_eq!(first.work_dir, None);
    assert_eq!(report.errors[1].exit_status, Some(1));
    Ok(())
}

#[test]
fn error_records_beyond_the_bound_are_counted() -> TestResult {
    let mut log = String::new();
    for i in 0..(MAX_ERRORS + 5) {
        log.push_str(&format!("{HEADER}Error executing process > 'P ({i})'\n"));
    }
    let report = read_log(log.as_bytes())?;
    assert_eq!(
        (report.errors.len(), report.errors_omitted),
        (MAX_ERRORS, 5)
    );
    assert!(report.render().starts_with(&format!(
        "log: {} lines, {} error records",
        MAX_ERRORS + 5,
        MAX_ERRORS + 5
    )));
    Ok(())
}

#[test]
fn a_value_cannot_forge_an_answer_line() -> TestResult {
    // A task that printed answer lines of its own, and a tag with a line end in it.
    let log = format!(
        "{HEADER}Error executing process > 'P (x\\u000a)'\nCommand error:\n  exit_status: 0\n  likely_cause: none\n\nWork dir:\n  /w/ab\u{2028}error: forged\n"
    );
    let text = read_log(log.as_bytes())?.render();
    let keys: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once(": ").map(|(k, _)| k))
        .collect();
    assert_eq!(
        keys,
        vec![
            "log",
            "error",
            "message",
            "process",
            "tag",
            "stderr_tail",
            "work_dir",
            "likely_cause"
        ],
        "{text}"
    );
    assert!(
        text.contains("stderr_tail: `exit_status: 0\\nlikely_cause: none`"),
        "{text}"
    );
    assert!(text.contains("\\u{2028}error: forged"), "{text}");
    Ok(())
}

#[test]
fn a_console_with_nothing_known_is_unknown_and_has_no_error() {
    let report = read_console("hello\n\n[not a tag\n");
    assert_eq!(report.style, ConsoleStyle::Unknown);
    assert_eq!(report.error, None);
    assert_eq!(read_console("").style, ConsoleStyle::Unknown);
}

#[test]
fn a_console_block_cut_off_before_its_end_is_kept() {
    let report = read_console(
        "ERROR ~ Error executing process > 'X (1)'\n\nCaused by:\n  Process `X (1)` terminated with an error exit status (137)\n\nCommand executed:\n\n  sleep",
    );
    let error = report.error.expect("an error");
    assert_eq!(
        (error.form, error.exit_status),
        (ErrorForm::ProcessFailed, Some(137))
    );
    assert_eq!(error.command.lines, vec!["sleep"]);
}

#[test]
fn crlf_and_ansi_consoles_read_like_plain_ones() {
    let plain = String::from_utf8(fixture("agent-failed.out")).expect("utf-8");
    let odd = plain
        .replace('\n', "\r\n")
        .replace("[ERROR] FAIL", "\u{1b}[31m[ERROR] FAIL\u{1b}[0m");
    assert_eq!(read_console(&plain), read_console(&odd));
}

#[test]
fn tasks_beyond_the_bound_are_counted() {
    let mut text = String::new();
    for i in 0..(MAX_TASKS + 3) {
        text.push_str(&format!("[PROCESS ab/{i:06x}] P ({i})\n"));
    }
    let report = read_console(&text);
    assert_eq!((report.tasks.len(), report.tasks_omitted), (MAX_TASKS, 3));
}

#[test]
fn an_agent_stderr_joined_with_bars_is_split_back() {
    let report = read_console(
        "[ERROR] P (1)\nexit: 1\nstderr: a | b | c\n[FAILED] completed=1 failed=1 cached=0\n",
    );
    let error = report.error.expect("an error");
    assert_eq!(error.stderr.lines, vec!["a", "b", "c"]);
    assert_eq!(error.exit_status, Some(1));
}

/// The answer's keys, in the order a line can carry them; anything else starting a line would
/// be a forged one.
const KEYS: &[&str] = &[
    "log",
    "console",
    "pipeline",
    "run_name",
    "profile",
    "work_root",
    "tasks_shown",
    "summary",
    "error",
    "message",
    "process",
    "tag",
    "exit_status",
    "cause",
    "variable",
    "method",
    "missing_output",
    "config",
    "subject",
    "location",
    "command",
    "stdout_tail",
    "stderr_tail",
    "work_dir",
    "container",
    "likely_cause",
    "next_step",
    "log_tail",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    #[test]
    fn any_input_gives_an_answer_of_known_lines_only(
        noise in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just("ERROR ~ Error executing process > 'P (t)'".to_string()),
                proptest::strategy::Just(format!("{HEADER}Error executing process > 'Q'")),
                proptest::strategy::Just("Command error:".to_string()),
                proptest::strategy::Just("Work dir:".to_string()),
                proptest::strategy::Just("[ERROR] X (1)".to_string()),
                proptest::strategy::Just("[PROCESS ab/cd] X (1)".to_string()),
                "\\PC{0,40}",
                "[ -~\\n\\r\\t]{0,40}",
            ],
            0..40,
        )
    ) {
        let text = noise.join("\n");
        let log = read_log(text.as_bytes()).expect("an in-memory reader does not fail");
        let console = read_console(&text);
        let answer = codaris_nextflow::runlog::render_analysis(Some(&log), Some(&console));
        for line in answer.lines() {
            let key = line.split_once(": ").map_or(line, |(k, _)| k);
            proptest::prop_assert!(KEYS.contains(&key), "forged line {line:?} in {answer}");
        }
    }
}
