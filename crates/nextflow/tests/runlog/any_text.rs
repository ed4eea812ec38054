//! The log reader on any text a run left: every real failure report of the corpus
//! (`tests/fixtures/nextflow/real-failures/`, console pastes and log excerpts alike) read as if
//! saved as `.nextflow.log`, which is what a user hands over. Before the log reader also read
//! consoles, 43 of 43 pasted consoles read this way gave no error at all.

use std::path::{Path, PathBuf};

use codaris_nextflow::runlog::{ConsoleStyle, diagnose, read_console, read_log};

fn reports() -> Vec<(String, String, String)> {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/nextflow/real-failures");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.iter()
        .map(|d| {
            let case = std::fs::read_to_string(d.join("case.toml")).unwrap();
            let form = case
                .lines()
                .find_map(|l| l.strip_prefix("form = "))
                .unwrap()
                .trim_matches('"')
                .to_string();
            let report = std::fs::read_to_string(d.join("report.txt")).unwrap();
            (
                d.file_name().unwrap().to_string_lossy().into_owned(),
                form,
                report,
            )
        })
        .collect()
}

/// Whatever its form, a report read as a log names the same failing task, exit status and
/// likely cause as the reader made for its form.
#[test]
fn every_real_report_read_as_a_log_says_what_its_own_reader_says() {
    let mut differ = Vec::new();
    let mut consoles = 0;
    let mut named = 0;
    for (slug, form, report) in reports() {
        let as_log = read_log(report.as_bytes()).unwrap();
        let own = match form.as_str() {
            "log" => read_log(report.as_bytes()).unwrap().error,
            _ => {
                consoles += 1;
                named += usize::from(as_log.error.is_some());
                read_console(&report).error
            }
        };
        let key = |e: &Option<codaris_nextflow::runlog::RunError>| {
            e.as_ref().map(|e| {
                (
                    e.process.clone(),
                    e.exit_status,
                    diagnose(e).map(|d| d.cause),
                )
            })
        };
        if key(&as_log.error) != key(&own) {
            differ.push(format!(
                "{slug} ({form}): as a log {:?}, by its own reader {:?}",
                key(&as_log.error),
                key(&own)
            ));
        }
    }
    assert!(consoles >= 40, "only {consoles} console reports");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    // The rest are a scheduler's or a cloud's words alone, with no error block and no line
    // the diagnosis knows (61 of 72 when this was written, all 0 before).
    assert!(
        named >= 60,
        "{named} of {consoles} consoles read as a log name an error"
    );
}

/// A console saved as a log is reported as the console it is.
#[test]
fn a_console_read_as_a_log_says_its_style() {
    let text = "N E X T F L O W  ~  version 24.04.4\n\
                Launching `main.nf` [goofy_kilby] DSL2 - revision: 6b9515aba6\n\
                executor >  local (1)\n\
                [9b/02e776] process > FASTQC (s1) [100%] 1 of 1, failed: 1 \u{2718}\n\
                ERROR ~ Error executing process > 'FASTQC (s1)'\n\
                \n\
                Caused by:\n  Process `FASTQC (s1)` terminated with an error exit status (127)\n\
                \n\
                Command error:\n  .command.sh: line 2: fastqc: command not found\n\
                \n -- Check '.nextflow.log' file for details\n";
    let log = read_log(text.as_bytes()).unwrap();
    let console = log.console.as_ref().expect("no console read");
    assert_eq!(console.style, ConsoleStyle::Classic);
    assert_eq!(console.run_name.as_deref(), Some("goofy_kilby"));
    let error = log.error.as_ref().expect("no error");
    assert_eq!(error.process.as_deref(), Some("FASTQC"));
    assert_eq!(error.exit_status, Some(127));
    // A log of records alone holds no console.
    let plain = read_log(
        &b"Dec-01 10:00:00.000 [main] DEBUG nextflow.cli.Launcher - $> nextflow run main.nf\n"[..],
    )
    .unwrap();
    assert_eq!(plain.console, None);
}

/// A paste past the cap keeps its end from a line start, whatever characters the cut falls
/// in; a paste within it is kept whole.
#[test]
fn a_long_paste_keeps_its_end_from_a_line_start() {
    use codaris_nextflow::runlog::{MAX_PASTED_BYTES, pasted_tail};
    assert_eq!(pasted_tail("ERROR ~ boom\n"), ("ERROR ~ boom\n", 0));
    let line = "é€ a line of two- and three-byte characters\n";
    let mut text = String::new();
    while text.len() <= MAX_PASTED_BYTES + 100 {
        text.push_str(line);
    }
    text.push_str("ERROR ~ the end\n");
    let (kept, cut) = pasted_tail(&text);
    assert!(kept.len() <= MAX_PASTED_BYTES);
    assert_eq!(cut + kept.len(), text.len());
    assert!(kept.starts_with(line), "{:?}", &kept[..40]);
    assert!(kept.ends_with("ERROR ~ the end\n"));
}
