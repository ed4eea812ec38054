//! The real nf-core 4.2.1 (from `.ci/nfcore.sh`), offline, with the fake nextflow first on
//! PATH. The nf-core subprocess times are printed, never asserted.

use std::path::{Path, PathBuf};

use codaris_nextflow::nfcore::NfCoreError;
use codaris_nextflow::nfcore::create::{CreateReport, CreateRequest, create};
use codaris_nextflow::nfcore::lint::{LintReport, LintRequest, run_lint};
use codaris_nextflow::nfcore::schema::{Stage, ValidateRequest, validate};
use codaris_nextflow::runner::ProcessRunner;
use pretty_assertions::assert_eq;

use super::support::{TestResult, copy_tree, fixtures, nfcore_bin, nfcore_env, repo_root};

/// A pipeline made by the real `nf-core pipelines create` in `home/demo`.
fn created(bin: &Path, home: &Path) -> Result<(CreateReport, PathBuf), Box<dyn std::error::Error>> {
    let env = nfcore_env(bin, home)?;
    let outdir = home.join("demo");
    let report = create(
        &ProcessRunner::default(),
        &env,
        &CreateRequest {
            name: "demo".into(),
            description: "Demo pipeline".into(),
            author: "Tester".into(),
            outdir: outdir.clone(),
            skip_features: vec!["igenomes".into()],
        },
    )?;
    eprintln!(
        "nf-core pipelines create took {:.2} s",
        report.elapsed.as_secs_f64()
    );
    Ok((report, outdir))
}

fn lint(
    bin: &Path,
    home: &Path,
    pipeline: &Path,
    tests: &[&str],
) -> Result<LintReport, NfCoreError> {
    lint_with(bin, home, pipeline, tests, false)
}

fn lint_with(
    bin: &Path,
    home: &Path,
    pipeline: &Path,
    tests: &[&str],
    release: bool,
) -> Result<LintReport, NfCoreError> {
    let env = nfcore_env(bin, home).map_err(|e| NfCoreError::Unreadable {
        command: "test setup",
        detail: e.to_string(),
    })?;
    let report = run_lint(
        &ProcessRunner::default(),
        &env,
        &LintRequest {
            pipeline: pipeline.to_path_buf(),
            release,
            tests: tests.iter().map(|t| (*t).to_owned()).collect(),
        },
    )?;
    if let Some(elapsed) = report.elapsed {
        eprintln!("nf-core pipelines lint took {:.2} s", elapsed.as_secs_f64());
    }
    Ok(report)
}

#[test]
fn create_makes_a_pipeline_with_its_three_branches() -> TestResult {
    let Some(bin) = nfcore_bin()? else {
        return Ok(());
    };
    let home = tempfile::tempdir()?;
    let (report, outdir) = created(&bin, home.path())?;
    assert_eq!(report.branches, ["TEMPLATE", "dev", "master"]);
    // What `codaris status` would show on this PATH.
    let env = nfcore_env(&bin, home.path())?;
    let path = env
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone());
    let found = codaris_nextflow::runner::probe(
        &ProcessRunner::default(),
        path.as_deref().map(std::ffi::OsStr::new),
        home.path(),
    );
    let versions: Vec<Option<&str>> = found.iter().map(|p| p.version.as_deref()).collect();
    assert_eq!(versions[..2], [Some("4.2.1"), Some("25.10.4.fake")]);
    assert!(versions[2].is_some());
    let text = report.render();
    assert_eq!(
        text.lines().next(),
        Some(
            format!(
                "created nf-core pipeline `nf-core/demo` at `{}`",
                outdir.display()
            )
            .as_str()
        )
    );
    assert!(text.contains("skipped offline: rocrate: "), "{text}");
    assert!(text.contains("skipped on request: igenomes"), "{text}");
    let tools = std::fs::read_to_string(outdir.join(".nf-core.yml"))?;
    assert!(
        tools.contains("- rocrate") && tools.contains("- igenomes"),
        "{tools}"
    );
    assert!(!outdir.join("conf/igenomes.config").exists());

    // A second create into the now full directory is refused before nf-core runs.
    let again = create(
        &ProcessRunner::default(),
        &nfcore_env(&bin, home.path())?,
        &CreateRequest {
            name: "demo".into(),
            description: "d".into(),
            author: "a".into(),
            outdir,
            skip_features: vec![],
        },
    );
    assert!(
        matches!(again, Err(NfCoreError::OutdirNotEmpty { .. })),
        "{again:?}"
    );
    Ok(())
}

#[test]
fn a_fresh_pipeline_lints_clean_with_the_network_tests_skipped() -> TestResult {
    let Some(bin) = nfcore_bin()? else {
        return Ok(());
    };
    let home = tempfile::tempdir()?;
    let (_, pipeline) = created(&bin, home.path())?;
    let before = std::fs::read(pipeline.join(".nf-core.yml"))?;
    let report = lint(&bin, home.path(), &pipeline, &[])?;
    assert_eq!(report.failed, vec![]);
    assert!(report.passed > 100, "{}", report.passed);
    let skipped: Vec<&str> = report
        .skipped_offline
        .iter()
        .map(|s| s.test.as_str())
        .collect();
    assert_eq!(
        skipped,
        [
            "nfcore_components",
            "files_unchanged",
            "actions_schema_validation"
        ]
    );
    // Skipped is not passed: no finding of those tests in any group.
    assert!(
        report
            .ignored
            .iter()
            .chain(&report.warned)
            .all(|f| !skipped.contains(&f.test.as_str()))
    );
    let text = report.render();
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("skipped offline: "))
            .count(),
        3
    );
    assert!(
        text.lines()
            .next()
            .is_some_and(|l| l.contains(" 0 failed,")),
        "{text}"
    );
    // The pipeline's tools config has its bytes back.
    assert_eq!(std::fs::read(pipeline.join(".nf-core.yml"))?, before);

    // `--release`: the `dev` version fails, and the two release tests run.
    let release = lint_with(&bin, home.path(), &pipeline, &[], true)?;
    let failed: Vec<&str> = release.failed.iter().map(|f| f.test.as_str()).collect();
    assert_eq!(
        failed,
        [
            "nextflow_config",
            "version_consistency",
            "version_consistency",
            "included_configs"
        ]
    );
    Ok(())
}

#[test]
fn seeded_defects_are_exactly_the_failures() -> TestResult {
    let Some(bin) = nfcore_bin()? else {
        return Ok(());
    };
    let home = tempfile::tempdir()?;
    let (_, pipeline) = created(&bin, home.path())?;
    std::fs::remove_file(pipeline.join("CHANGELOG.md"))?;
    let main = pipeline.join("main.nf");
    let mut text = std::fs::read_to_string(&main)?;
    text.push_str("<<<<<<< HEAD\n");
    std::fs::write(&main, text)?;
    let schema = pipeline.join("nextflow_schema.json");
    let renamed =
        std::fs::read_to_string(&schema)?.replace("\"multiqc_title\"", "\"multiqc_titel\"");
    std::fs::write(&schema, renamed)?;

    let report = lint(&bin, home.path(), &pipeline, &[])?;
    let failed: Vec<(&str, Option<&str>)> = report
        .failed
        .iter()
        .map(|f| (f.test.as_str(), f.file.as_deref()))
        .collect();
    assert_eq!(
        failed,
        vec![
            ("files_exist", Some("CHANGELOG.md")),
            ("schema_params", None),
            // "Default value for param `multiqc_titel` invalid: … Check `nextflow.config`."
            ("schema_params", Some("nextflow.config")),
            ("merge_markers", Some("main.nf")),
        ]
    );
    assert!(report.failed[1].message.contains("`multiqc_title`"));

    // `tests` runs only the named ones.
    let only = lint(&bin, home.path(), &pipeline, &["merge_markers"])?;
    assert_eq!(only.failed.len(), 1);
    assert_eq!(only.failed[0].test, "merge_markers");
    assert_eq!(only.skipped_offline, vec![]);
    Ok(())
}

#[test]
fn a_fatal_lint_is_an_error_with_its_error_line() -> TestResult {
    let Some(bin) = nfcore_bin()? else {
        return Ok(());
    };
    let home = tempfile::tempdir()?;
    let (_, pipeline) = created(&bin, home.path())?;
    let config = pipeline.join("nextflow.config");
    let text = std::fs::read_to_string(&config)?.replace("'nf-core/demo'", "'demo'");
    std::fs::write(&config, text)?;
    let before = std::fs::read(pipeline.join(".nf-core.yml"))?;
    let err = lint(&bin, home.path(), &pipeline, &[]).err();
    let Some(NfCoreError::Fatal { message, .. }) = &err else {
        return Err(format!("expected a fatal error, got {err:?}").into());
    };
    assert_eq!(
        message,
        "ERROR not enough values to unpack (expected 2, got 1)"
    );
    assert_eq!(std::fs::read(pipeline.join(".nf-core.yml"))?, before);
    Ok(())
}

#[test]
fn schema_lint_and_params_validation_good_and_bad() -> TestResult {
    let Some(bin) = nfcore_bin()? else {
        return Ok(());
    };
    let home = tempfile::tempdir()?;
    let (_, pipeline) = created(&bin, home.path())?;
    let env = nfcore_env(&bin, home.path())?;
    let runner = ProcessRunner::default();
    let good = home.path().join("good.json");
    std::fs::write(
        &good,
        r#"{"input": "samplesheet.csv", "outdir": "results"}"#,
    )?;
    let bad = home.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"input": "samplesheet.csv", "outdir": "results", "email": "not-an-email"}"#,
    )?;

    let ok = validate(
        &runner,
        &env,
        &ValidateRequest {
            pipeline: pipeline.clone(),
            params_file: Some(good),
        },
    )?;
    eprintln!(
        "nf-core pipelines schema lint + validate took {:.2} s",
        ok.elapsed.as_secs_f64()
    );
    assert!(ok.passed(), "{}", ok.render());
    assert!(
        ok.render()
            .starts_with("passed: nextflow_schema.json is valid (")
    );

    let invalid = validate(
        &runner,
        &env,
        &ValidateRequest {
            pipeline: pipeline.clone(),
            params_file: Some(bad),
        },
    )?;
    let text = invalid.render();
    assert!(text.starts_with("failed: "), "{text}");
    assert_eq!(invalid.findings.len(), 1, "{text}");
    assert_eq!(invalid.findings[0].stage, Stage::Params);
    assert_eq!(invalid.findings[0].parameter.as_deref(), Some("email"));

    // A broken definition in the schema: the schema fails and the parameters are not checked.
    let schema = pipeline.join("nextflow_schema.json");
    let mut value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&schema)?)?;
    value["$defs"]["input_output_options"]["properties"]["outdir"]["type"] = "strang".into();
    std::fs::write(&schema, serde_json::to_string_pretty(&value)?)?;
    let broken = validate(
        &runner,
        &env,
        &ValidateRequest {
            pipeline,
            params_file: Some(home.path().join("good.json")),
        },
    )?;
    assert!(!broken.passed() && !broken.params_checked);
    assert_eq!(broken.findings[0].parameter.as_deref(), Some("outdir"));
    assert!(
        broken
            .render()
            .contains("was not checked against an invalid schema")
    );
    Ok(())
}

#[test]
fn a_real_pipeline_whose_config_cannot_be_evaluated_says_so_in_the_headline() -> TestResult {
    let Some(bin) = nfcore_bin()? else {
        return Ok(());
    };
    let home = tempfile::tempdir()?;
    let pipeline = home.path().join("fetchngs");
    copy_tree(
        &repo_root().join("tests/fixtures/nextflow/real-pipelines/fetchngs-1.12.0"),
        &pipeline,
    )?;
    let params = home.path().join("params.json");
    std::fs::write(&params, r#"{"input": "ids.csv", "outdir": "results"}"#)?;
    let request = ValidateRequest {
        pipeline,
        params_file: Some(params.clone()),
    };
    // The fake nextflow stands in for a Nextflow that cannot evaluate this config (it does not
    // read fetchngs' `try { } catch (Exception e) { }` include).
    let env = nfcore_env(&bin, home.path())?;
    let report = validate(&ProcessRunner::default(), &env, &request)?;
    let text = report.render();
    let first = text.lines().next().unwrap_or("");
    assert!(
        first.starts_with(
            "failed: the pipeline's config could not be evaluated (`nextflow config` exited with 1: fake nextflow: cannot evaluate "
        ) && first.ends_with(&format!(
            "so nextflow_schema.json was not checked against its params; `{}` was not checked",
            params.display()
        )),
        "{text}"
    );
    assert!(!report.passed() && !report.params_checked);
    assert!(!text.contains("error(s)"), "{text}");

    // No nextflow at all: PATH holds only nf-core's venv and the system's basic directories.
    let mut bare = env.clone();
    for (key, value) in &mut bare.env {
        if key == "PATH" {
            *value = format!("{}:/usr/bin:/bin", bin.display());
        }
    }
    let report = validate(&ProcessRunner::default(), &bare, &request)?;
    let first = report.render().lines().next().unwrap_or("").to_owned();
    assert!(
        first.starts_with(
            "failed: the pipeline's config could not be evaluated (`nextflow` is not on PATH), so nextflow_schema.json was not checked"
        ),
        "{first}"
    );
    Ok(())
}

#[test]
fn requests_are_checked_before_anything_runs() -> TestResult {
    // No nf-core needed: each of these is refused before a process starts.
    let home = tempfile::tempdir()?;
    let env = codaris_nextflow::nfcore::NfCoreEnv {
        program: "/nonexistent/nf-core".into(),
        ..Default::default()
    };
    let runner = ProcessRunner::default();
    let request = |name: &str, skip: Vec<String>| CreateRequest {
        name: name.into(),
        description: "d".into(),
        author: "a".into(),
        outdir: home.path().join("x"),
        skip_features: skip,
    };
    assert!(matches!(
        create(&runner, &env, &request("demo\n--force", vec![])),
        Err(NfCoreError::BadField { field: "name" })
    ));
    assert!(matches!(
        create(&runner, &env, &request("demo", vec!["rocrate\n- x".into()])),
        Err(NfCoreError::UnknownFeature { .. })
    ));
    let spaced = CreateRequest {
        outdir: home.path().join("a dir/demo"),
        ..request("demo", vec![])
    };
    assert!(matches!(
        create(&runner, &env, &spaced),
        Err(NfCoreError::UnsafePath { .. })
    ));
    std::fs::create_dir(home.path().join("full"))?;
    std::fs::write(home.path().join("full/file"), "")?;
    let full = CreateRequest {
        outdir: home.path().join("full"),
        ..request("demo", vec![])
    };
    assert!(matches!(
        create(&runner, &env, &full),
        Err(NfCoreError::OutdirNotEmpty { .. })
    ));

    let template = home.path().join("template");
    copy_tree(&fixtures().join("nfcore-template"), &template)?;
    let lint_request = |tests: Vec<String>| LintRequest {
        pipeline: template.clone(),
        release: false,
        tests,
    };
    assert!(matches!(
        run_lint(&runner, &env, &lint_request(vec!["no_such_test".into()])),
        Err(NfCoreError::UnknownTest { .. })
    ));
    // Only network tests asked for: nothing runs, and they are reported as skipped.
    let offline = run_lint(&runner, &env, &lint_request(vec!["files_unchanged".into()]))?;
    assert_eq!(offline.passed, 0);
    assert_eq!(offline.skipped_offline.len(), 1);
    // A path with a space is refused: nf-core would split it when it calls `nextflow config`.
    let spaced = home.path().join("a dir");
    copy_tree(&template, &spaced)?;
    let refused = run_lint(
        &runner,
        &env,
        &LintRequest {
            pipeline: spaced,
            release: false,
            tests: vec![],
        },
    );
    assert!(
        matches!(refused, Err(NfCoreError::UnsafePath { .. })),
        "{refused:?}"
    );
    // A symlinked tools config is never written through.
    let tools = template.join(".nf-core.yml");
    std::fs::rename(&tools, home.path().join("real.yml"))?;
    std::os::unix::fs::symlink(home.path().join("real.yml"), &tools)?;
    assert!(matches!(
        run_lint(&runner, &env, &lint_request(vec![])),
        Err(NfCoreError::ToolsConfigSymlink { .. })
    ));
    // A missing nf-core is a clear error naming the package.
    std::fs::remove_file(&tools)?;
    std::fs::rename(home.path().join("real.yml"), &tools)?;
    let missing = run_lint(&runner, &env, &lint_request(vec![]))
        .err()
        .map(|e| e.to_string());
    assert!(
        missing
            .as_deref()
            .is_some_and(|m| m.contains("pip install nf-core==4.2.1")),
        "{missing:?}"
    );
    assert_eq!(
        std::fs::read(&tools)?,
        std::fs::read(fixtures().join("nfcore-template/.nf-core.yml"))?
    );
    Ok(())
}
