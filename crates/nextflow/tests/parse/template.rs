//! The reader on the real nf-core 4.2.1 template, as committed under tests/fixtures.

use std::error::Error;
use std::path::PathBuf;

use codaris_nextflow::parse::{Pipeline, ScriptKind, SelectorKind, Value};
use pretty_assertions::assert_eq;

pub(crate) fn template() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nfcore-template")
}

#[test]
fn the_template_reads_without_anything_unparsed() -> Result<(), Box<dyn Error>> {
    let p = Pipeline::load(&template())?;
    assert_eq!(
        p.unparsed(),
        Vec::<&codaris_nextflow::parse::Unparsed>::new()
    );
    let paths: Vec<&str> = p.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        vec![
            "main.nf",
            "workflows/demo.nf",
            "subworkflows/local/utils_nfcore_demo_pipeline/main.nf",
            "subworkflows/nf-core/utils_nextflow_pipeline/main.nf",
            "subworkflows/nf-core/utils_nfcore_pipeline/main.nf",
            "subworkflows/nf-core/utils_nfschema_plugin/main.nf",
            "modules/nf-core/fastqc/main.nf",
            "modules/nf-core/multiqc/main.nf",
        ]
    );
    Ok(())
}

#[test]
fn fastqc_has_its_label_container_images_and_emits() -> Result<(), Box<dyn Error>> {
    let p = Pipeline::load(&template())?;
    let (file, fastqc) = p.process("FASTQC").ok_or("no FASTQC")?;
    assert_eq!(file.path, "modules/nf-core/fastqc/main.nf");
    assert_eq!((fastqc.line, fastqc.end_line), (1, 57));
    assert_eq!(fastqc.labels(), vec!["process_low"]);
    assert_eq!(
        fastqc.container_images(),
        vec![
            "https://community-cr-prod.seqera.io/docker/registry/v2/blobs/sha256/81/816bda6dd014e810753f642611232443ddeabb2b47f9681ad43f9044816f00ff/data",
            "community.wave.seqera.io/library/fastqc:0.13.0--b342db7b694c9af4",
        ]
    );
    let names: Vec<(&str, u32)> = fastqc
        .directives
        .iter()
        .map(|d| (d.name.as_str(), d.line))
        .collect();
    assert_eq!(
        names,
        vec![("tag", 2), ("label", 3), ("conda", 5), ("container", 6)]
    );
    assert_eq!(
        fastqc.directive("conda").map(|d| d.value.as_str()),
        Some("\"${moduleDir}/environment.yml\"")
    );
    assert_eq!(fastqc.emits(), vec!["html", "zip", "versions_fastqc"]);
    let versions = fastqc.outputs.get(2).ok_or("no third output")?;
    assert_eq!(versions.line, 16);
    assert_eq!(versions.topic.as_deref(), Some("versions"));
    assert_eq!(versions.qualifier.as_deref(), Some("tuple"));
    let input = fastqc.inputs.first().ok_or("no input")?;
    assert_eq!(
        (input.line, input.text.as_str()),
        (11, "tuple val(meta), path(reads, stageAs: '?/*')")
    );
    assert_eq!(
        fastqc.when.as_ref().map(|w| (w.line, w.text.as_str())),
        Some((19, "task.ext.when == null || task.ext.when"))
    );
    let script = fastqc.script.as_ref().ok_or("no script")?;
    assert_eq!((script.kind, script.line), (ScriptKind::Script, 22));
    assert!(script.text.contains("--threads ${task.cpus}"));
    assert!(script.text.ends_with("\"\"\""));
    assert_eq!(fastqc.stub.as_ref().map(|s| s.line), Some(52));
    Ok(())
}

#[test]
fn multiqc_is_single_with_an_optional_output() -> Result<(), Box<dyn Error>> {
    let p = Pipeline::load(&template())?;
    let (_, multiqc) = p.process("MULTIQC").ok_or("no MULTIQC")?;
    assert_eq!(multiqc.labels(), vec!["process_single"]);
    assert_eq!(
        multiqc.container_images(),
        vec![
            "https://community-cr-prod.seqera.io/docker/registry/v2/blobs/sha256/c8/c8e346f4f6080eadf1253505e6ff09ef004454fc18e8d672006fd7b222cc412e/data",
            "community.wave.seqera.io/library/multiqc:1.35--c17fb751507e9dfc",
        ]
    );
    assert_eq!(multiqc.emits(), vec!["report", "data", "plots", "versions"]);
    let optional: Vec<bool> = multiqc.outputs.iter().map(|o| o.optional).collect();
    assert_eq!(optional, vec![false, false, true, false]);
    // The comment between two outputs is not an output.
    assert_eq!(multiqc.outputs.get(3).map(|o| o.line), Some(18));
    assert_eq!(multiqc.inputs.len(), 1);
    Ok(())
}

#[test]
fn the_demo_workflow_includes_and_sections() -> Result<(), Box<dyn Error>> {
    let p = Pipeline::load(&template())?;
    let demo = p.file("workflows/demo.nf").ok_or("no demo.nf")?;
    let includes: Vec<(u32, &str, &str)> = demo
        .includes
        .iter()
        .flat_map(|i| {
            i.names
                .iter()
                .map(move |n| (i.line, n.local_name(), i.source.as_str()))
        })
        .collect();
    assert_eq!(
        includes,
        vec![
            (6, "FASTQC", "../modules/nf-core/fastqc/main"),
            (7, "MULTIQC", "../modules/nf-core/multiqc/main"),
            (8, "paramsSummaryMap", "plugin/nf-schema"),
            (
                9,
                "paramsSummaryMultiqc",
                "../subworkflows/nf-core/utils_nfcore_pipeline"
            ),
            (
                10,
                "softwareVersionsToYAML",
                "../subworkflows/nf-core/utils_nfcore_pipeline"
            ),
            (
                11,
                "methodsDescriptionText",
                "../subworkflows/local/utils_nfcore_demo_pipeline"
            ),
        ]
    );
    let w = demo.workflows.first().ok_or("no workflow")?;
    assert_eq!(w.name.as_deref(), Some("DEMO"));
    assert_eq!((w.line, w.end_line), (19, 95));
    let take: Vec<&str> = w.take.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        take,
        vec![
            "ch_samplesheet",
            "multiqc_config",
            "multiqc_logo",
            "multiqc_methods_description",
            "outdir"
        ]
    );
    // `emit:multiqc_report = …` on the label's own line, then one more.
    let emits: Vec<(Option<&str>, u32)> = w
        .emits
        .iter()
        .map(|e| (e.name.as_deref(), e.line))
        .collect();
    assert_eq!(
        emits,
        vec![(Some("multiqc_report"), 93), (Some("versions"), 94)]
    );
    assert_eq!(w.main.as_ref().map(|m| m.line), Some(30));
    let calls: Vec<&str> = w.calls.iter().map(|c| c.name.as_str()).collect();
    assert!(calls.starts_with(&["FASTQC", "softwareVersionsToYAML"]));
    assert!(calls.contains(&"MULTIQC"));
    Ok(())
}

#[test]
fn main_nf_has_the_entry_workflow_params_and_functions_elsewhere() -> Result<(), Box<dyn Error>> {
    let p = Pipeline::load(&template())?;
    let main = p.file("main.nf").ok_or("no main.nf")?;
    let names: Vec<Option<&str>> = main.workflows.iter().map(|w| w.name.as_deref()).collect();
    assert_eq!(names, vec![Some("NFCORE_DEMO"), None]);
    let entry = main.workflows.get(1).ok_or("no entry workflow")?;
    let calls: Vec<&str> = entry.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        calls,
        vec![
            "PIPELINE_INITIALISATION",
            "NFCORE_DEMO",
            "PIPELINE_COMPLETION"
        ]
    );
    let param = main.params.first().ok_or("no params")?;
    assert_eq!(
        (param.name.as_str(), param.line, &param.value),
        (
            "fasta",
            32,
            &Value::Expr("getGenomeAttribute('fasta')".into())
        )
    );
    let utils = p
        .file("subworkflows/local/utils_nfcore_demo_pipeline/main.nf")
        .ok_or("no utils")?;
    let funcs: Vec<&str> = utils.functions.iter().map(|f| f.name.as_str()).collect();
    assert!(funcs.contains(&"getGenomeAttribute"));
    assert!(funcs.contains(&"methodsDescriptionText"));
    Ok(())
}

#[test]
fn nextflow_config_params_manifest_includes_and_profiles() -> Result<(), Box<dyn Error>> {
    let p = Pipeline::load(&template())?;
    let c = &p.config;
    let input = c.get("params.input").ok_or("no params.input")?;
    assert_eq!(
        (input.file.as_str(), input.line, &input.value),
        ("nextflow.config", 14, &Value::Null)
    );
    assert_eq!(c.get("params.outdir").map(|s| &s.value), Some(&Value::Null));
    assert_eq!(
        c.get("params.publish_dir_mode").map(|s| &s.value),
        Some(&Value::Str("copy".into()))
    );
    assert_eq!(
        c.get("params.validate_params").map(|s| &s.value),
        Some(&Value::Bool(true))
    );
    assert_eq!(
        c.get("manifest.name").map(|s| &s.value),
        Some(&Value::Str("nf-core/demo".into()))
    );
    assert_eq!(
        c.get("manifest.nextflowVersion")
            .and_then(|s| s.value.as_str()),
        Some("!>=25.10.4")
    );
    let contributors = &c
        .get("manifest.contributors")
        .ok_or("no contributors")?
        .value;
    let Value::List(list) = contributors else {
        return Err("contributors is not a list".into());
    };
    assert_eq!(
        list.first().and_then(|m| m.get("name")),
        Some(&Value::Str("Tester".into()))
    );
    assert_eq!(
        c.get("process.cpus").map(|s| &s.value),
        Some(&Value::Expr("{ 1      * task.attempt }".into()))
    );
    assert_eq!(
        c.get("plugins.id").and_then(|s| s.value.as_str()),
        Some("nf-schema@2.7.3")
    );
    let loaded: Vec<(u32, Option<&str>)> = c
        .includes
        .iter()
        .map(|i| (i.line, i.loaded.as_deref()))
        .collect();
    assert_eq!(
        loaded,
        vec![
            (60, Some("conf/base.config")),
            (172, Some("conf/test.config")),
            (173, Some("conf/test_full.config")),
            (180, None),
            (197, Some("conf/igenomes.config")),
            (274, Some("conf/modules.config")),
        ]
    );
    // The custom-config include depends on the environment: said, not guessed.
    let custom = c.includes.get(3).ok_or("no fourth include")?;
    assert!(
        custom
            .note
            .as_deref()
            .is_some_and(|n| n.contains("not evaluated"))
    );
    let igenomes = c.includes.get(4).ok_or("no fifth include")?;
    assert_eq!(
        igenomes.candidates,
        vec!["conf/igenomes.config", "conf/igenomes_ignored.config"]
    );
    assert_eq!(
        c.profile_names(),
        vec![
            "debug",
            "conda",
            "mamba",
            "docker",
            "arm64",
            "emulate_amd64",
            "singularity",
            "podman",
            "shifter",
            "charliecloud",
            "apptainer",
            "wave",
            "gpu",
            "test",
            "test_full"
        ]
    );
    // A profile's settings stay in their profile; the test profile's come from its file.
    assert_eq!(c.get("docker.enabled"), None);
    let test_input = c
        .settings
        .iter()
        .find(|s| s.key == "params.input" && s.profile.as_deref() == Some("test"))
        .ok_or("no params.input in the test profile")?;
    assert_eq!(test_input.file, "conf/test.config");
    Ok(())
}

#[test]
fn config_selectors_from_base_and_modules() -> Result<(), Box<dyn Error>> {
    let p = Pipeline::load(&template())?;
    let c = &p.config;
    let labels: Vec<&str> = c
        .selectors
        .iter()
        .filter(|s| s.selector.kind == SelectorKind::WithLabel)
        .map(|s| s.selector.pattern.as_str())
        .collect();
    assert!(labels.contains(&"process_single"));
    assert!(labels.contains(&"process_medium"));
    let args = c
        .settings
        .iter()
        .find(|s| s.key == "process.withName:FASTQC.ext.args")
        .ok_or("no FASTQC ext.args")?;
    assert_eq!(
        (args.file.as_str(), args.line, &args.value),
        ("conf/modules.config", 22, &Value::Str("--quiet".into()))
    );
    // Quoted and unquoted selector names read the same.
    assert!(
        c.settings
            .iter()
            .any(|s| s.key == "process.withName:MULTIQC.publishDir")
    );
    let publish = c.get("process.publishDir").ok_or("no publishDir")?;
    assert_eq!(
        publish.value.get("mode"),
        Some(&Value::Expr("params.publish_dir_mode".into()))
    );
    Ok(())
}

#[test]
fn includes_resolve_to_the_files_nextflow_would_read() -> Result<(), Box<dyn Error>> {
    let p = Pipeline::load(&template())?;
    let resolved: Vec<(String, Option<String>)> = p
        .includes()
        .filter(|(f, _)| f.path == "workflows/demo.nf" || f.path == "main.nf")
        .map(|(f, i)| (i.source.clone(), p.resolve_include(f, i)))
        .collect();
    let want = |s: &str, r: Option<&str>| (s.to_string(), r.map(str::to_string));
    assert_eq!(
        resolved,
        vec![
            want("./workflows/demo", Some("workflows/demo.nf")),
            want(
                "./subworkflows/local/utils_nfcore_demo_pipeline",
                Some("subworkflows/local/utils_nfcore_demo_pipeline/main.nf")
            ),
            want(
                "./subworkflows/local/utils_nfcore_demo_pipeline",
                Some("subworkflows/local/utils_nfcore_demo_pipeline/main.nf")
            ),
            want(
                "./subworkflows/local/utils_nfcore_demo_pipeline",
                Some("subworkflows/local/utils_nfcore_demo_pipeline/main.nf")
            ),
            want(
                "../modules/nf-core/fastqc/main",
                Some("modules/nf-core/fastqc/main.nf")
            ),
            want(
                "../modules/nf-core/multiqc/main",
                Some("modules/nf-core/multiqc/main.nf")
            ),
            want("plugin/nf-schema", None),
            want(
                "../subworkflows/nf-core/utils_nfcore_pipeline",
                Some("subworkflows/nf-core/utils_nfcore_pipeline/main.nf")
            ),
            want(
                "../subworkflows/nf-core/utils_nfcore_pipeline",
                Some("subworkflows/nf-core/utils_nfcore_pipeline/main.nf")
            ),
            want(
                "../subworkflows/local/utils_nfcore_demo_pipeline",
                Some("subworkflows/local/utils_nfcore_demo_pipeline/main.nf")
            ),
        ]
    );
    Ok(())
}

#[test]
fn the_outline_has_one_construct_a_line() -> Result<(), Box<dyn Error>> {
    let p = Pipeline::load(&template())?;
    let outline = codaris_nextflow::parse::render_outline(&p);
    let lines: Vec<&str> = outline.lines().collect();
    for want in [
        "main.nf:18: include DEMO from ./workflows/demo (workflows/demo.nf)",
        "main.nf:69: workflow (entry) calls PIPELINE_INITIALISATION, NFCORE_DEMO, PIPELINE_COMPLETION",
        "workflows/demo.nf:8: include paramsSummaryMap from plugin/nf-schema",
        "modules/nf-core/multiqc/main.nf:1: process MULTIQC label process_single container \
         'https://community-cr-prod.seqera.io/docker/registry/v2/blobs/sha256/c8/c8e346f4f6080eadf1253505e6ff09ef004454fc18e8d672006fd7b222cc412e/data', \
         'community.wave.seqera.io/library/multiqc:1.35--c17fb751507e9dfc' inputs 1 emits report, data, plots, versions",
        "nextflow.config:14: param input = null",
        "nextflow.config:30: param publish_dir_mode = 'copy'",
        "nextflow.config:60: includeConfig conf/base.config",
        "nextflow.config:172: profile test",
    ] {
        assert!(lines.contains(&want), "missing `{want}` in\n{outline}");
    }
    // Every line is `FILE:LINE: …`.
    for line in &lines {
        let mut parts = line.splitn(3, ':');
        let (file, num) = (parts.next(), parts.next());
        assert!(
            file.is_some_and(|f| !f.is_empty()) && num.is_some_and(|n| n.parse::<u32>().is_ok()),
            "{line}"
        );
    }
    Ok(())
}

#[test]
fn the_config_settings_that_apply_to_fastqc() -> Result<(), Box<dyn Error>> {
    let p = Pipeline::load(&template())?;
    let (_, fastqc) = p.process("FASTQC").ok_or("no FASTQC")?;
    let applied: Vec<(String, String, u32)> = p
        .config
        .process_settings(&fastqc.name, &fastqc.labels())
        .into_iter()
        .filter(|s| s.directive != "shell")
        .map(|s| (s.directive, s.setting.file.clone(), s.setting.line))
        .collect();
    let want = |d: &str, f: &str, l: u32| (d.to_string(), f.to_string(), l);
    assert_eq!(
        applied,
        vec![
            want("cpus", "conf/base.config", 14),
            want("memory", "conf/base.config", 15),
            want("time", "conf/base.config", 16),
            want("errorStrategy", "conf/base.config", 18),
            want("maxRetries", "conf/base.config", 19),
            want("maxErrors", "conf/base.config", 20),
            want("publishDir", "conf/modules.config", 15),
            want("cpus", "conf/base.config", 35),
            want("memory", "conf/base.config", 36),
            want("time", "conf/base.config", 37),
            want("ext.args", "conf/modules.config", 22),
        ]
    );
    Ok(())
}

/// Copies the template into a temporary directory, to seed defects in the copy.
fn template_copy() -> Result<tempfile::TempDir, Box<dyn Error>> {
    fn copy(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            let target = to.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                copy(&entry.path(), &target)?;
            } else {
                std::fs::copy(entry.path(), target)?;
            }
        }
        Ok(())
    }
    let dir = tempfile::tempdir()?;
    copy(&template(), dir.path())?;
    Ok(dir)
}

#[test]
fn a_seeded_defect_is_reported_where_it_is_and_the_rest_still_reads() -> Result<(), Box<dyn Error>>
{
    let dir = template_copy()?;
    let fastqc = dir.path().join("modules/nf-core/fastqc/main.nf");
    let src = std::fs::read_to_string(&fastqc)?;
    // Drop the process's closing brace, and break a config include.
    std::fs::write(&fastqc, src.trim_end().trim_end_matches('}'))?;
    let config = dir.path().join("nextflow.config");
    let cfg = std::fs::read_to_string(&config)?;
    std::fs::write(
        &config,
        cfg.replace(
            "includeConfig 'conf/base.config'",
            "includeConfig 'conf/missing.config'",
        ),
    )?;
    let p = Pipeline::load(dir.path())?;
    assert_eq!(
        codaris_nextflow::parse::render_unparsed(p.unparsed()),
        "modules/nf-core/fastqc/main.nf:1: not understood: `{` opened here is never closed\n\
         modules/nf-core/fastqc/main.nf:1: not understood: process `FASTQC`: its body is not closed\n"
    );
    // FASTQC is still read to the end of its file; MULTIQC and the config are untouched.
    let (_, fastqc) = p.process("FASTQC").ok_or("no FASTQC")?;
    assert_eq!(fastqc.emits(), vec!["html", "zip", "versions_fastqc"]);
    assert!(p.process("MULTIQC").is_some());
    let base = p.config.includes.first().ok_or("no include")?;
    assert_eq!(base.loaded, None);
    assert!(
        base.note
            .as_deref()
            .is_some_and(|n| n.contains("conf/missing.config"))
    );
    assert_eq!(p.config.get("process.cpus"), None);
    assert!(p.config.get("manifest.name").is_some());
    Ok(())
}
