//! The process runner and the probe, on small real programs.

use std::path::Path;
use std::time::{Duration, Instant};

use codaris_nextflow::runner::{Exit, Invocation, ProcessRunner, RunError, Runner, probe};

use super::support::{TestResult, fake_nextflow_dir};

fn sh(script: &str) -> Invocation {
    Invocation::new("sh", vec!["-c".into(), script.into()], Path::new("/"))
}

#[test]
fn a_missing_program_names_what_to_install() {
    let err = ProcessRunner::default()
        .run(&Invocation::new("nf-core", vec![], Path::new("/")).with_env("PATH", "/nonexistent"))
        .err();
    let Some(err @ RunError::NotFound { .. }) = err else {
        unreachable!("expected NotFound, got {err:?}");
    };
    assert_eq!(
        err.to_string(),
        "`nf-core` is not installed or not on PATH: install `nf-core` from PyPI: `pip install nf-core==4.2.1`"
    );
}

#[test]
fn exit_status_streams_cwd_and_environment_come_back() -> TestResult {
    let out = ProcessRunner::default().run(
        &Invocation::new(
            "sh",
            vec!["-c".into(), "pwd; echo \"$X\" >&2; exit 3".into()],
            Path::new("/tmp"),
        )
        .with_env("X", "a value\nwith a newline"),
    )?;
    assert_eq!(out.exit, Exit::Code(3));
    assert_eq!(out.stdout.text, "/tmp\n");
    assert_eq!(out.stderr.text, "a value\nwith a newline\n");
    Ok(())
}

#[test]
fn output_past_the_limit_is_dropped_and_flagged() -> TestResult {
    let runner = ProcessRunner { output_limit: 1000 };
    let out = runner.run(&sh("head -c 500000 /dev/zero | tr '\\0' x"))?;
    assert!(out.exit.success());
    assert_eq!(out.stdout.text.len(), 1000);
    assert!(out.stdout.truncated);
    Ok(())
}

#[test]
fn a_timeout_stops_the_whole_group() {
    let started = Instant::now();
    // The background sleep holds stdout open: only killing the group ends the call.
    let err = ProcessRunner::default()
        .run(&sh("sleep 30 & sleep 30").with_timeout(Duration::from_millis(300)))
        .err();
    assert!(matches!(err, Some(RunError::TimedOut { .. })), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn a_missing_working_directory_is_its_own_error() {
    let err = ProcessRunner::default()
        .run(&Invocation::new(
            "true",
            vec![],
            Path::new("/nonexistent/dir"),
        ))
        .err();
    assert!(matches!(err, Some(RunError::NoCwd { .. })), "{err:?}");
}

#[test]
fn the_probe_finds_the_fake_nextflow_and_says_what_is_missing() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = std::env::join_paths([fake_nextflow_dir()])?;
    let found = probe(&ProcessRunner::default(), Some(&path), dir.path());
    let names: Vec<&str> = found.iter().map(|p| p.name).collect();
    assert_eq!(names, ["nf-core", "nextflow", "git"]);
    assert_eq!(found[1].version.as_deref(), Some("25.10.4.fake"));
    assert!(found[0].path.is_none());
    assert!(
        found[0].render().contains("pip install nf-core==4.2.1"),
        "{}",
        found[0].render()
    );
    Ok(())
}

#[test]
fn a_nul_byte_in_an_argument_is_an_error_not_a_crash() {
    let err = ProcessRunner::default()
        .run(&Invocation::new(
            "true",
            vec!["a\0b".into()],
            Path::new("/"),
        ))
        .err();
    assert!(matches!(err, Some(RunError::Spawn { .. })), "{err:?}");
}
