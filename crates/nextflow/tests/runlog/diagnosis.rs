//! Likely causes, always worded as hints.

use codaris_nextflow::runlog::{LikelyCause, diagnose, read_console};

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
    assert_eq!(cause_of("1", "some message the tool wrote"), None);
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
    let text = read_console(&console_with("2", "usage: bwa mem")).render();
    assert!(
        text.contains("likely_cause: unknown — read the stderr tail and the command\n"),
        "{text}"
    );
}
