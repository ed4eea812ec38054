//! Files a reader derives from a directory it was given (a pipeline's `nextflow_schema.json`,
//! the schema that names, its modules, a rules directory's files) are opened beneath that
//! directory: a cloned pipeline that ships one as a symlink to a secret gets a refusal, and the
//! secret's text appears nowhere. A symlink that stays inside still works.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use codaris_nextflow::files;
use codaris_nextflow::launch::{params_file_values, samplesheet_params};
use codaris_nextflow::parse::Pipeline;
use codaris_nextflow::rules::RuleSet;
use codaris_nextflow::samplesheet::{GateError, GateRequest, prepare_samplesheet_gate};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const MARKER: &str = "SECRETMARKER7f3a";

/// A base directory and, beside it (outside it), a secret file holding [`MARKER`].
struct Planted {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    secret: PathBuf,
}

fn planted(secret_text: &str) -> std::io::Result<Planted> {
    let tmp = tempfile::tempdir()?;
    let base = tmp.path().join("pipeline");
    std::fs::create_dir(&base)?;
    let secret = tmp.path().join("id_ed25519");
    std::fs::write(&secret, secret_text)?;
    Ok(Planted {
        _tmp: tmp,
        base,
        secret,
    })
}

fn refused(err: &std::io::Error) -> bool {
    err.get_ref()
        .and_then(|e| e.downcast_ref::<files::BeneathError>())
        .is_some_and(|e| matches!(e, files::BeneathError::Outside { .. }))
}

#[test]
fn the_helpers_refuse_a_link_out_and_follow_one_that_stays_inside() -> TestResult {
    let p = planted(MARKER)?;
    symlink(&p.secret, p.base.join("out.json"))?;
    symlink("../id_ed25519", p.base.join("up.json"))?;
    std::fs::write(p.base.join("real.json"), "inside")?;
    symlink("real.json", p.base.join("in.json"))?;

    for name in ["out.json", "up.json"] {
        let err = files::read_beneath(&p.base, Path::new(name), 1 << 20)
            .err()
            .ok_or("a link out of the base was read")?;
        assert!(refused(&err), "{err}");
        assert!(!err.to_string().contains(MARKER));
        assert!(
            err.to_string().contains(&format!("`{name}` leads outside")),
            "{err}"
        );
    }
    let inside = files::read_beneath(&p.base, Path::new("in.json"), 1 << 20)?;
    assert_eq!(inside.as_deref(), Some(b"inside".as_slice()));

    // Nor written through: the secret keeps its bytes.
    let err = files::write_beneath(&p.base, Path::new("out.json"), b"overwritten")
        .err()
        .ok_or("a link out of the base was written through")?;
    assert!(refused(&err), "{err}");
    assert_eq!(std::fs::read_to_string(&p.secret)?, MARKER);

    // A directory symlinked out is not listed either.
    let outside_dir = p.secret.with_file_name("outside");
    std::fs::create_dir(&outside_dir)?;
    std::fs::write(outside_dir.join(format!("{MARKER}.nf")), "")?;
    symlink(&outside_dir, p.base.join("modules"))?;
    let err = files::list_beneath(&p.base, Path::new("modules"))
        .err()
        .ok_or("a directory out of the base was listed")?;
    assert!(refused(&err), "{err}");

    // A file the caller names is read as named: a symlink in its place is not followed.
    let err = files::open_nofollow(&p.base.join("out.json"))
        .err()
        .ok_or("a symlink named by the caller was followed")?;
    assert!(!err.to_string().contains(MARKER));
    Ok(())
}

#[test]
fn a_symlinked_nextflow_schema_names_no_parameter_of_the_secret() -> TestResult {
    let secret = format!(r#"{{"properties": {{"{MARKER}": {{"schema": "x.json"}}}}}}"#);
    let p = planted(&secret)?;
    symlink(&p.secret, p.base.join("nextflow_schema.json"))?;
    let names = samplesheet_params(&p.base);
    assert_eq!(names, vec!["input".to_owned()]);

    // The same schema as a real file, or a symlink inside the pipeline, is read.
    std::fs::remove_file(p.base.join("nextflow_schema.json"))?;
    std::fs::write(p.base.join("schema.json"), &secret)?;
    symlink("schema.json", p.base.join("nextflow_schema.json"))?;
    assert_eq!(
        samplesheet_params(&p.base),
        vec!["input".to_owned(), MARKER.to_owned()]
    );
    Ok(())
}

#[test]
fn a_params_file_that_is_a_symlink_is_refused() -> TestResult {
    let p = planted(&format!(r#"{{"input": "{MARKER}"}}"#))?;
    let link = p.base.join("params.json");
    symlink(&p.secret, &link)?;
    let result = params_file_values(&link, &["input".to_owned()]);
    let shown = format!("{result:?}");
    assert!(!shown.contains(MARKER), "{shown}");
    let err = result.err().ok_or("the symlinked params file was read")?;
    assert!(err.to_string().contains("symbolic link"), "{err}");
    Ok(())
}

#[test]
fn the_gate_refuses_a_samplesheet_schema_linked_out_of_the_pipeline() -> TestResult {
    let p = planted(&format!(r#"{{"$comment": "{MARKER}", "type": "array"}}"#))?;
    std::fs::create_dir(p.base.join("assets"))?;
    symlink(&p.secret, p.base.join("assets/schema_input.json"))?;
    std::fs::write(p.base.join("sheet.csv"), "sample\na\n")?;
    let result = prepare_samplesheet_gate(&GateRequest::new(&p.base, "sheet.csv"));
    let shown = format!("{result:?}");
    assert!(!shown.contains(MARKER), "{shown}");
    match result {
        Err(GateError::Io { source, .. }) => assert!(refused(&source), "{source}"),
        other => return Err(format!("not refused: {other:?}").into()),
    }

    // `nextflow_schema.json` linked out is not read for the schema it names either.
    let q = planted(r#"{"properties": {"input": {"schema": "../id_ed25519"}}}"#)?;
    symlink(&q.secret, q.base.join("nextflow_schema.json"))?;
    let request = GateRequest::new(&q.base, "sheet.csv");
    assert_eq!(
        request.schema_path(),
        q.base.join("assets/schema_input.json")
    );
    Ok(())
}

#[test]
fn a_modules_directory_linked_out_of_the_pipeline_is_not_walked() -> TestResult {
    let p = planted("")?;
    let outside = p.secret.with_file_name("outside");
    std::fs::create_dir(&outside)?;
    std::fs::write(
        outside.join(format!("{MARKER}.nf")),
        format!("// {MARKER}\n"),
    )?;
    symlink(&outside, p.base.join("modules"))?;
    std::fs::write(p.base.join("main.nf"), "workflow {}\n")?;
    let pipeline = Pipeline::load(&p.base)?;
    let shown = format!("{pipeline:?}");
    assert!(!shown.contains(MARKER), "{shown}");
    Ok(())
}

#[test]
fn a_rule_file_linked_to_a_secret_is_refused_and_not_echoed() -> TestResult {
    let p = planted(&format!("{MARKER} = [ not toml\n"))?;
    symlink(&p.secret, p.base.join("evil.toml"))?;
    let err = RuleSet::load(&p.base)
        .err()
        .ok_or("a rule file linked out of the rules directory was read")?;
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains(MARKER), "{shown}");
    assert!(shown.contains("leads outside"), "{shown}");

    // A rules file linked inside the directory is read as before.
    std::fs::remove_file(p.base.join("evil.toml"))?;
    std::fs::write(p.base.join("real.txt"), "")?;
    symlink("real.txt", p.base.join("empty.toml"))?;
    RuleSet::load(&p.base)?;
    Ok(())
}

/// A stand-in `nf-core` that leaves its `--json` report as a symlink to `$SECRET`, as a
/// pipeline could make the real one do.
fn linking_nf_core(dir: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let program = dir.join("nf-core");
    std::fs::write(
        &program,
        "#!/bin/sh\nwhile [ $# -gt 0 ]; do\n  if [ \"$1\" = --json ]; then ln -s \"$SECRET\" \"$2\"; fi\n  shift\ndone\n",
    )?;
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755))?;
    Ok(program)
}

#[test]
fn a_lint_report_left_as_a_symlink_is_refused_and_not_echoed() -> TestResult {
    use codaris_nextflow::nfcore::lint::{LintRequest, run_lint};
    use codaris_nextflow::nfcore::{NfCoreEnv, NfCoreError};
    use codaris_nextflow::runner::ProcessRunner;

    let p = planted(&format!(
        r#"{{"nf_core_tools_version": "3.3.2", "tests_failed": [["{MARKER}", "{MARKER}"]]}}"#
    ))?;
    for (name, text) in [
        ("main.nf", "workflow {}\n"),
        ("nextflow.config", ""),
        (".nf-core.yml", "repository_type: pipeline\n"),
    ] {
        std::fs::write(p.base.join(name), text)?;
    }
    let program = linking_nf_core(p.secret.parent().ok_or("no parent")?)?;
    let env = NfCoreEnv {
        program: program.to_string_lossy().into_owned(),
        env: vec![("SECRET".into(), p.secret.to_string_lossy().into_owned())],
        timeout: std::time::Duration::from_secs(30),
    };
    let request = LintRequest {
        pipeline: p.base.clone(),
        release: false,
        tests: Vec::new(),
    };
    let result = run_lint(&ProcessRunner::default(), &env, &request);
    let shown = format!("{result:?}");
    assert!(!shown.contains(MARKER), "{shown}");
    match result {
        Err(NfCoreError::Io { source, .. }) => assert!(refused(&source), "{source}"),
        other => return Err(format!("not refused: {other:?}").into()),
    }
    Ok(())
}

#[test]
fn the_schema_check_refuses_a_params_file_that_is_a_symlink() -> TestResult {
    use codaris_nextflow::nfcore::schema::{ValidateRequest, validate};
    use codaris_nextflow::nfcore::{NfCoreEnv, NfCoreError};
    use codaris_nextflow::runner::ProcessRunner;

    let p = planted(&format!(r#"{{"input": "{MARKER}"}}"#))?;
    for (name, text) in [
        ("main.nf", "workflow {}\n"),
        ("nextflow.config", ""),
        ("nextflow_schema.json", "{}"),
    ] {
        std::fs::write(p.base.join(name), text)?;
    }
    let link = p.base.join("params.json");
    symlink(&p.secret, &link)?;
    let env = NfCoreEnv {
        program: "true".to_owned(),
        env: Vec::new(),
        timeout: std::time::Duration::from_secs(30),
    };
    let request = ValidateRequest {
        pipeline: p.base.clone(),
        params_file: Some(link),
    };
    let result = validate(&ProcessRunner::default(), &env, &request);
    let shown = format!("{result:?}");
    assert!(!shown.contains(MARKER), "{shown}");
    match result {
        Err(NfCoreError::Io { source, .. }) => {
            let symlink = source
                .get_ref()
                .and_then(|e| e.downcast_ref::<files::BeneathError>())
                .is_some_and(|e| matches!(e, files::BeneathError::Symlink { .. }));
            assert!(symlink, "{source}");
        }
        other => return Err(format!("not refused: {other:?}").into()),
    }
    Ok(())
}

#[test]
fn an_nf_test_report_that_is_a_symlink_is_refused() -> TestResult {
    let p = planted(&format!("1..1\nnot ok 1 {MARKER}\n"))?;
    let link = p.base.join("nf-test.tap");
    symlink(&p.secret, &link)?;
    let result = codaris_nextflow::nftest::read_report(&link);
    let shown = format!("{result:?}");
    assert!(!shown.contains(MARKER), "{shown}");
    let err = result.err().ok_or("the symlinked report was read")?;
    assert!(err.to_string().contains("symbolic link"), "{err}");
    Ok(())
}
