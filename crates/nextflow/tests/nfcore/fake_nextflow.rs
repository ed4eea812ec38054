//! The fake `nextflow`: it says it is fake, evaluates the real template's `nextflow.config`
//! into what nf-core reads, and refuses everything else.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

use super::support::{TestResult, fake_nextflow_dir, fixtures};

fn fake(args: &[&str], cwd: &Path) -> std::io::Result<Output> {
    Command::new(fake_nextflow_dir().join("nextflow"))
        .args(args)
        .current_dir(cwd)
        .env_remove("FAKE_NXF_LOG")
        .env("NXF_OFFLINE", "true")
        .output()
}

#[test]
fn it_says_it_is_fake_and_refuses_what_it_does_not_implement() -> TestResult {
    let dir = tempfile::tempdir()?;
    let version = fake(&["-v"], dir.path())?;
    assert_eq!(
        String::from_utf8(version.stdout)?,
        "nextflow version 25.10.4.fake\n"
    );
    let help = String::from_utf8(fake(&["-h"], dir.path())?.stdout)?;
    assert!(help.contains("NOT Nextflow"), "{help}");
    for args in [
        &["run", "main.nf"][..],
        &["lint", "."],
        &["config", "-profile", "test", "."],
    ] {
        let out = fake(args, dir.path())?;
        assert_eq!(out.status.code(), Some(127), "{args:?}");
        assert!(String::from_utf8(out.stderr)?.contains("fake nextflow: unsupported command"));
    }
    Ok(())
}

#[test]
fn the_template_config_comes_out_as_nf_core_reads_it() -> TestResult {
    let template = fixtures().join("nfcore-template");
    let out = fake(
        &["config", "-o", "json", &template.to_string_lossy()],
        Path::new("/"),
    )?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(
        config["manifest"]["contributors"],
        json!([{"name": "Tester", "affiliation": "", "email": "", "github": "", "contribution": [], "orcid": ""}])
    );
    assert_eq!(config["manifest"]["name"], "nf-core/demo");
    assert_eq!(config["plugins"], json!(["nf-schema@2.7.3"]));
    assert_eq!(
        config["params"]["custom_config_base"],
        "https://raw.githubusercontent.com/nf-core/configs/master"
    );
    assert_eq!(config["timeline"]["enabled"], true);
    // includeConfig: base.config (plain), igenomes.config (the ternary), modules.config.
    assert_eq!(config["process"]["cpus"], "{ 1      * task.attempt }");
    assert!(
        config["params"]["genomes"]["GRCh38"]["fasta"]
            .as_str()
            .is_some_and(|f| f.starts_with("s3://ngi-igenomes/igenomes//Homo_sapiens/"))
    );
    assert_eq!(
        config["process"]["withName:FASTQC"]["ext"]["args"],
        "--quiet"
    );
    // Profiles are skipped, not merged.
    assert!(config.get("profiles").is_none());
    assert_eq!(config["docker"], json!({"registry": "quay.io"}));

    let flat = fake(
        &["config", "-flat", &template.to_string_lossy()],
        Path::new("/"),
    )?;
    let flat = String::from_utf8(flat.stdout)?;
    assert!(
        flat.lines().any(|l| l == "manifest.name = 'nf-core/demo'"),
        "{flat}"
    );
    Ok(())
}

#[test]
fn calls_are_logged_and_odd_configs_fail_plainly() -> TestResult {
    let dir = tempfile::tempdir()?;
    let log = dir.path().join("calls.log");
    std::fs::write(
        dir.path().join("nextflow.config"),
        "params.x = 1\nincludeConfig params.x ? 'missing.config' : 'other.config'\n",
    )?;
    let out = Command::new(fake_nextflow_dir().join("nextflow"))
        .args(["config", "-o", "json", "."])
        .current_dir(dir.path())
        .env("FAKE_NXF_LOG", &log)
        .output()?;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr)?;
    assert!(
        stderr.starts_with("fake nextflow: cannot evaluate") && stderr.contains("missing.config"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&log)?,
        "[\"config\", \"-o\", \"json\", \".\"]\n"
    );

    std::fs::write(
        dir.path().join("nextflow.config"),
        "includeConfig 'a.config'\n",
    )?;
    std::fs::write(
        dir.path().join("a.config"),
        "process { includeConfig 'nextflow.config' }\n",
    )?;
    let cycle = fake(&["config", "-o", "json", "."], dir.path())?;
    assert_eq!(cycle.status.code(), Some(1));
    assert!(String::from_utf8(cycle.stderr)?.contains("includes itself"));

    std::fs::write(dir.path().join("nextflow.config"), "")?;
    let empty = fake(&["config", "-o", "json", "."], dir.path())?;
    assert_eq!(serde_json::from_slice::<Value>(&empty.stdout)?, json!({}));
    Ok(())
}
