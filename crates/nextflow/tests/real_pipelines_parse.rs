//! The reader on five published pipelines (tests/fixtures/nextflow/real-pipelines/, read in
//! place): every file read whole, nothing left "not understood", and values a pipeline
//! developer would look up found where the pipeline sets them.

use std::path::{Path, PathBuf};

use codaris_nextflow::parse::{
    Pipeline, Value, describe_runtime, parse_config, render_outline, render_unparsed,
};
use pretty_assertions::assert_eq;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Each pipeline with its `.nf` file and process counts, whether it has an `nf-test.config`,
/// and how many genomes its `conf/igenomes.config` defines (0: none read).
const PIPELINES: &[(&str, usize, usize, bool, usize)] = &[
    ("sarek-3.10.0", 199, 124, true, 42),
    ("rnaseq-3.24.0", 103, 76, true, 39),
    ("fetchngs-1.12.0", 17, 10, true, 0),
    ("demo-1.0.2", 9, 3, false, 39),
    ("rnaseq-nf", 6, 4, false, 0),
];

fn real(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/nextflow/real-pipelines")
        .join(name)
}

fn load(name: &str) -> Result<Pipeline, Box<dyn std::error::Error>> {
    Ok(Pipeline::load(&real(name))?)
}

fn setting<'p>(p: &'p Pipeline, key: &str) -> Result<&'p Value, String> {
    p.config
        .get(key)
        .map(|s| &s.value)
        .ok_or_else(|| format!("`{key}` not found"))
}

#[test]
fn every_real_pipeline_is_read_whole() -> TestResult {
    for &(name, files, processes, nftest, genomes) in PIPELINES {
        let p = load(name)?;
        assert_eq!(render_unparsed(p.unparsed()), "", "{name}");
        assert_eq!(
            (p.files.len(), p.processes().count()),
            (files, processes),
            "{name}"
        );
        // nf-test's own file is seen and named, never read as a Nextflow config.
        let skipped: Vec<&str> = p.config.skipped.iter().map(|s| s.file.as_str()).collect();
        let want: Vec<&str> = if nftest {
            vec!["nf-test.config"]
        } else {
            vec![]
        };
        assert_eq!(skipped, want, "{name}");
        assert!(
            !p.config.files.iter().any(|f| f.ends_with("nf-test.config")),
            "{name}"
        );
        let found = p
            .config
            .nested_params()
            .into_iter()
            .find(|(param, _)| *param == "genomes")
            .map(|(_, settings)| {
                let mut names: Vec<String> = settings
                    .iter()
                    .filter_map(|s| {
                        codaris_nextflow::parse::key_parts(&s.key)
                            .get(2)
                            .map(|n| (*n).to_owned())
                    })
                    .collect();
                names.dedup();
                names.len()
            })
            .unwrap_or(0);
        assert_eq!(found, genomes, "{name}");
    }
    Ok(())
}

#[test]
fn quoted_genome_blocks_are_nested_settings_with_their_paths() -> TestResult {
    let rnaseq = load("rnaseq-3.24.0")?;
    let fasta = rnaseq
        .config
        .get("params.genomes.GRCh37.fasta")
        .ok_or("rnaseq GRCh37 fasta not found")?;
    assert_eq!(
        (fasta.file.as_str(), fasta.line),
        ("conf/igenomes.config", 15)
    );
    assert_eq!(
        fasta.value,
        Value::Expr(
            "\"${params.igenomes_base}/Homo_sapiens/Ensembl/GRCh37/Sequence/WholeGenomeFasta/genome.fa\""
                .into()
        )
    );

    // A dotted quoted name is one part, kept quoted as `nextflow config -flat` prints it.
    let sarek = load("sarek-3.10.0")?;
    let gatk = sarek
        .config
        .get("params.genomes.'GATK.GRCh37'.fasta")
        .ok_or("sarek GATK.GRCh37 fasta not found")?;
    assert_eq!(
        (gatk.file.as_str(), gatk.line),
        ("conf/igenomes.config", 26)
    );
    assert!(
        matches!(&gatk.value, Value::Expr(t) if t.ends_with("/GATK/GRCh37/Sequence/WholeGenomeFasta/human_g1k_v37_decoy.fasta\"")),
        "{:?}",
        gatk.value
    );
    assert_eq!(
        setting(&sarek, "params.genomes.'GATK.GRCh37'.ascat_genome")?,
        &Value::Str("hg19".into())
    );
    // The genome map is not a plain param: the params list stays the pipeline's own.
    assert!(
        !sarek
            .params()
            .iter()
            .any(|s| s.key.starts_with("params.genomes"))
    );
    assert!(
        render_outline(&sarek)
            .contains("conf/igenomes.config:15: param genomes = map of 42 entries"),
    );
    Ok(())
}

#[test]
fn manifest_versions_and_params_are_read_from_each_config() -> TestResult {
    for (name, version) in [
        ("sarek-3.10.0", "3.10.0"),
        ("rnaseq-3.24.0", "3.24.0"),
        ("fetchngs-1.12.0", "1.12.0"),
        ("demo-1.0.2", "1.0.2"),
    ] {
        let p = load(name)?;
        assert_eq!(
            setting(&p, "manifest.version")?,
            &Value::Str(version.into()),
            "{name}"
        );
    }
    let nf = load("rnaseq-nf")?;
    assert_eq!(
        setting(&nf, "manifest.nextflowVersion")?,
        &Value::Str(">=25.10.0".into())
    );
    assert_eq!(
        setting(&nf, "workflow.output.mode")?,
        &Value::Str("copy".into())
    );
    assert!(nf.config.profile_names().contains(&"all-reads"));
    Ok(())
}

#[test]
fn run_time_definitions_are_named_for_what_they_are() -> TestResult {
    let p = load("fetchngs-1.12.0")?;
    let defs: Vec<(&str, u32, &str)> = p
        .config
        .defs
        .iter()
        .map(|d| (d.name.as_str(), d.line, d.what.as_str()))
        .collect();
    assert_eq!(
        defs,
        [
            (
                "trace_timestamp",
                199,
                "a new `java.util.Date`, made at run time"
            ),
            (
                "check_max",
                230,
                "function `check_max(obj, type)`, run only when a closure calls it at run time"
            ),
        ]
    );
    let outline = render_outline(&p);
    assert!(
        outline.contains(
            "nextflow.config:199: def trace_timestamp: a new `java.util.Date`, made at run time"
        ),
        "{outline}"
    );
    assert!(!outline.contains("not understood"), "{outline}");
    // The values that use them stay source text, named for what they are.
    let cpus = p
        .config
        .settings
        .iter()
        .find(|s| s.file == "conf/base.config" && s.line == 13)
        .ok_or("base.config cpus not found")?;
    assert_eq!(
        describe_runtime(&cpus.value.to_string()),
        "a closure, evaluated at run time"
    );
    // rnaseq and demo set a param from `new java.util.Date()`.
    let rnaseq = load("rnaseq-3.24.0")?;
    assert_eq!(
        describe_runtime(&setting(&rnaseq, "params.trace_report_suffix")?.to_string()),
        "a new `java.util.Date`, made at run time"
    );
    Ok(())
}

#[test]
fn an_nf_test_config_is_never_read_as_a_nextflow_config() -> TestResult {
    let path = real("rnaseq-3.24.0").join("nf-test.config");
    let text = std::fs::read_to_string(&path)?;
    for name in ["nf-test.config", "tests/nf-test.config"] {
        let c = parse_config(name, &text);
        assert_eq!(
            (c.settings.len(), c.unparsed.len(), c.files.len()),
            (0, 0, 0),
            "{name}"
        );
        assert_eq!(c.skipped.len(), 1, "{name}");
        assert_eq!(c.skipped[0].file, name);
        assert!(c.skipped[0].why.starts_with("nf-test's own configuration"));
    }
    // The same text under another name is read as a config (so the guard is the name).
    assert!(!parse_config("other.config", &text).settings.is_empty());
    Ok(())
}
