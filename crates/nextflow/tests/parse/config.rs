//! Config reading beyond the template: includes that leave the pipeline, cycles, values.

use std::error::Error;
use std::fs;

use codaris_nextflow::parse::{Pipeline, Value, load_config, parse_config};
use pretty_assertions::assert_eq;

#[test]
fn literals_stay_literals_and_the_rest_is_source_text() {
    let c = parse_config(
        "nextflow.config",
        "params {\n  a = 'x'\n  b = 2\n  c = -1.5\n  d = [1, 'two', true]\n  e = [k: 'v', n: null]\n  f = [:]\n  g = \"${params.a}/y\"\n}\nprocess.memory = { 2.GB * task.attempt }\n",
    );
    let got: Vec<(&str, &Value)> = c
        .settings
        .iter()
        .map(|s| (s.key.as_str(), &s.value))
        .collect();
    assert_eq!(
        got,
        vec![
            ("params.a", &Value::Str("x".into())),
            ("params.b", &Value::Number("2".into())),
            ("params.c", &Value::Number("-1.5".into())),
            (
                "params.d",
                &Value::List(vec![
                    Value::Number("1".into()),
                    Value::Str("two".into()),
                    Value::Bool(true)
                ])
            ),
            (
                "params.e",
                &Value::Map(vec![
                    ("k".into(), Value::Str("v".into())),
                    ("n".into(), Value::Null)
                ])
            ),
            ("params.f", &Value::Map(vec![])),
            ("params.g", &Value::Expr("\"${params.a}/y\"".into())),
            (
                "process.memory",
                &Value::Expr("{ 2.GB * task.attempt }".into())
            ),
        ]
    );
    assert_eq!(c.unparsed, vec![]);
}

#[test]
fn the_last_assignment_wins() {
    let c = parse_config("n.config", "params.x = 1\nparams { x = 2 }\n");
    assert_eq!(c.get("params.x").map(|s| s.line), Some(2));
    assert_eq!(c.params().len(), 1);
}

#[test]
fn includes_outside_the_pipeline_and_cycles_are_not_followed() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    fs::create_dir_all(dir.path().join("conf"))?;
    fs::write(
        dir.path().join("nextflow.config"),
        "includeConfig '../outside.config'\nincludeConfig '/etc/passwd'\nincludeConfig 'conf/a.config'\nincludeConfig 'conf/missing.config'\n",
    )?;
    fs::write(
        dir.path().join("conf/a.config"),
        "includeConfig 'b.config'\nparams.a = 1\n",
    )?;
    fs::write(
        dir.path().join("conf/b.config"),
        "includeConfig 'a.config'\n",
    )?;
    let c = load_config(dir.path(), "nextflow.config")?;
    let got: Vec<(&str, u32, Option<&str>, bool)> = c
        .includes
        .iter()
        .map(|i| {
            (
                i.file.as_str(),
                i.line,
                i.loaded.as_deref(),
                i.note.is_some(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("nextflow.config", 1, None, true),
            ("nextflow.config", 2, None, true),
            ("nextflow.config", 3, Some("conf/a.config"), false),
            ("conf/a.config", 1, Some("conf/b.config"), false),
            ("conf/b.config", 1, None, true),
            ("nextflow.config", 4, None, true),
        ]
    );
    assert_eq!(
        c.get("params.a").map(|s| s.file.as_str()),
        Some("conf/a.config")
    );
    Ok(())
}

#[test]
fn unknown_config_statements_are_unparsed() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    fs::write(
        dir.path().join("nextflow.config"),
        "if (x) { params.a = 1 }\nprofiles {\n  'quoted' { docker.enabled = true }\n  broken\n}\n",
    )?;
    let p = Pipeline::load(dir.path())?;
    let lines: Vec<u32> = p.unparsed().iter().map(|u| u.line).collect();
    assert_eq!(lines, vec![1, 4]);
    assert_eq!(p.config.profile_names(), vec!["quoted"]);
    Ok(())
}

#[test]
fn quoted_block_names_are_key_parts_that_cannot_be_split_or_forge_a_key() {
    let c = parse_config(
        "n.config",
        "params {\n  genomes {\n    'GRCh37' { fasta = 'a.fa' }\n    'GATK.GRCh37' { fasta = 'b.fa' }\n    'it\\'s.x' { fasta = 'c.fa' }\n    \"${x}\" { fasta = 'd.fa' }\n  }\n}\n",
    );
    let keys: Vec<&str> = c.settings.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "params.genomes.GRCh37.fasta",
            "params.genomes.'GATK.GRCh37'.fasta",
            "params.genomes.'it\\'s.x'.fasta",
        ]
    );
    // A computed block name is not a key: it is said, not guessed.
    assert_eq!(c.unparsed.len(), 1, "{:?}", c.unparsed);
    assert_eq!(
        codaris_nextflow::parse::key_parts("genomes.'it\\'s.x'.fasta"),
        ["genomes", "'it\\'s.x'", "fasta"]
    );
    let nested = c.nested_params();
    assert_eq!(nested.len(), 1);
    assert_eq!((nested[0].0, nested[0].1.len()), ("genomes", 3));
    assert!(c.params().is_empty());
}
