//! A task directory read as `debug_last_run` reads it, on the verbatim wrapper and on
//! adversarial directories.

use std::fs;
use std::os::unix::fs::symlink;

use codaris_nextflow::runs::{TAIL_BYTES, TAIL_LINES, TaskDir, TaskState};
use pretty_assertions::assert_eq;

use super::support::{Launch, SESSION, TestResult, fixture_text, history_row};

fn launch() -> Result<Launch, Box<dyn std::error::Error>> {
    Launch::new(&history_row("x", "ERR", "1s", SESSION), None)
}

#[test]
fn a_failed_task_with_its_real_files() -> TestResult {
    let l = launch()?;
    let run = fixture_text("command-run-training-docker.txt")?;
    let err = fixture_text("command-err-training-127.txt")?;
    let sh = fixture_text("command-sh-training.txt")?;
    let dir = l.task(
        "9b/02e776",
        &[
            (".command.run", run.as_bytes()),
            (".command.sh", sh.as_bytes()),
            (".command.err", err.as_bytes()),
            (".command.out", b""),
            (".command.log", err.as_bytes()),
            (".command.begin", b""),
            (".exitcode", b"127"),
        ],
    )?;
    symlink(
        "/workspaces/training/hello-nextflow/work/7f/f435e3f2cf95979b5f3d7647ae6696/COLLECTED-batch-output.txt",
        dir.join("COLLECTED-batch-output.txt"),
    )?;
    let task = TaskDir::read(&dir)?;
    assert_eq!(task.state, TaskState::Exited(127));
    assert_eq!(task.exit_code(), Some(127));
    assert_eq!(
        task.err_tail.as_ref().map(|t| t.text.as_str()),
        Some(err.as_str())
    );
    assert_eq!(
        task.script.as_ref().map(|t| t.text.as_str()),
        Some(sh.as_str())
    );
    assert_eq!(task.out_tail.as_ref().map(|t| t.size), Some(0));
    let wrapper = task.wrapper.as_ref().ok_or("no wrapper")?;
    assert_eq!(wrapper.name.as_deref(), Some("cowpy"));
    assert_eq!(task.inputs.len(), 1);
    assert!(
        task.inputs[0].dangling,
        "the training machine's path is not here"
    );
    assert_eq!(task.dangling_inputs().count(), 1);
    assert!(task.outputs.is_empty());
    assert!(task.refused.is_empty());
    Ok(())
}

#[test]
fn killed_or_running_has_no_exit_code() -> TestResult {
    let l = launch()?;
    let started = l.task(
        "aa/000001",
        &[
            (".command.begin", b""),
            (".command.run", b"### name: 'ALIGN (s1)'\n"),
        ],
    )?;
    assert_eq!(TaskDir::read(&started)?.state, TaskState::NoExitCode);
    let queued = l.task("aa/000002", &[(".command.run", b"#!/bin/bash\n")])?;
    assert_eq!(TaskDir::read(&queued)?.state, TaskState::NotStarted);
    let junk = l.task(
        "aa/000003",
        &[(".command.begin", b""), (".exitcode", b"oops")],
    )?;
    assert_eq!(TaskDir::read(&junk)?.state, TaskState::BadExitCode);
    let spaced = l.task("aa/000004", &[(".exitcode", b"0\n")])?;
    assert_eq!(TaskDir::read(&spaced)?.state, TaskState::Exited(0));
    Ok(())
}

#[test]
fn symlinks_are_reported_never_read() -> TestResult {
    let l = launch()?;
    let secret_dir = tempfile::tempdir()?;
    let secret = secret_dir.path().join("id_rsa");
    fs::write(&secret, "PRIVATE KEY")?;
    let dir = l.task("bb/000001", &[(".command.begin", b""), (".exitcode", b"1")])?;
    // A Nextflow file that is a link out of the work dir, and an input pointing out of it.
    symlink(&secret, dir.join(".command.err"))?;
    symlink(&secret, dir.join("reads_1.fastq.gz"))?;
    symlink(dir.join("missing.fa"), dir.join("genome.fa"))?;
    symlink("../../../../../../etc/passwd", dir.join(".command.sh"))?;
    let task = TaskDir::read(&dir)?;
    assert_eq!(task.err_tail, None);
    assert_eq!(task.script, None);
    assert_eq!(
        task.refused,
        vec![
            (
                ".command.sh".to_string(),
                "a symlink, not followed".to_string()
            ),
            (
                ".command.err".to_string(),
                "a symlink, not followed".to_string()
            ),
        ]
    );
    let names: Vec<(&str, bool)> = task
        .inputs
        .iter()
        .map(|i| (i.name.as_str(), i.dangling))
        .collect();
    assert_eq!(
        names,
        vec![("genome.fa", true), ("reads_1.fastq.gz", false)]
    );
    assert_eq!(task.inputs[1].target, secret.display().to_string());
    let dump = format!("{task:?}");
    assert!(
        !dump.contains("PRIVATE KEY"),
        "nothing was read through a link"
    );
    Ok(())
}

#[test]
fn a_huge_err_is_read_as_a_bounded_tail() -> TestResult {
    let l = launch()?;
    let mut err = String::new();
    for i in 0..200_000 {
        err.push_str(&format!("warning line {i}\n"));
    }
    err.push_str("Exception: the real error\n");
    let dir = l.task(
        "cc/000001",
        &[(".command.err", err.as_bytes()), (".exitcode", b"1")],
    )?;
    let tail = TaskDir::read(&dir)?.err_tail.ok_or("no tail")?;
    assert!(tail.truncated);
    assert_eq!(tail.size, err.len() as u64);
    assert!(tail.text.len() as u64 <= TAIL_BYTES);
    assert_eq!(tail.text.lines().count(), TAIL_LINES);
    assert!(tail.text.ends_with("Exception: the real error\n"));
    assert!(
        tail.text.starts_with("warning line "),
        "no partial first line: {:?}",
        &tail.text[..30]
    );
    Ok(())
}

#[test]
fn crlf_and_bad_bytes_are_text() -> TestResult {
    let l = launch()?;
    let dir = l.task(
        "dd/000001",
        &[
            (".command.err", b"line one\r\nbad \xff\xfe byte\r\n"),
            (".command.sh", b"#!/bin/bash -ue\r\necho hi\r\n"),
            (".exitcode", b"1\r\n"),
        ],
    )?;
    let task = TaskDir::read(&dir)?;
    assert_eq!(task.state, TaskState::Exited(1));
    assert_eq!(
        task.err_tail.ok_or("err")?.text,
        "line one\nbad \u{fffd}\u{fffd} byte\n"
    );
    assert_eq!(task.script.ok_or("sh")?.text, "#!/bin/bash -ue\necho hi\n");
    Ok(())
}

#[test]
fn a_fifo_or_directory_in_place_of_a_file_does_not_hang() -> TestResult {
    let l = launch()?;
    let dir = l.task("ee/000001", &[(".exitcode", b"0")])?;
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        dir.join(".command.out"),
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
    )?;
    fs::create_dir(dir.join(".command.err"))?;
    let task = TaskDir::read(&dir)?;
    assert_eq!(task.out_tail, None);
    assert_eq!(task.err_tail, None);
    let mut refused: Vec<_> = task.refused.iter().map(|(n, _)| n.as_str()).collect();
    refused.sort();
    assert_eq!(refused, vec![".command.err", ".command.out"]);
    Ok(())
}

#[test]
fn a_missing_dir_is_an_error() {
    assert!(TaskDir::read(std::path::Path::new("/nonexistent/work/ab/cdef")).is_err());
}
