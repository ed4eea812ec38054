//! Nextflow forms the template does not use but real pipelines do: older nf-core modules and
//! configs, and the newer typed syntax.

use codaris_nextflow::parse::{ScriptKind, Value, parse_config, parse_script};
use pretty_assertions::assert_eq;

#[test]
fn an_older_nf_core_module_reads_whole() -> Result<(), Box<dyn std::error::Error>> {
    let src = r#"
process SAMTOOLS_SORT {
    tag "$meta.id"
    label 'process_medium'

    conda "bioconda::samtools=1.17"
    container "${ workflow.containerEngine == 'singularity' && !task.ext.singularity_pull_docker_container ?
        'https://depot.galaxyproject.org/singularity/samtools:1.17--h00cdaf9_0' :
        'biocontainers/samtools:1.17--h00cdaf9_0' }"
    publishDir "${params.outdir}/samtools", mode: params.publish_dir_mode,
        saveAs: { filename -> filename.equals('versions.yml') ? null : filename }
    errorStrategy { task.exitStatus in 137..140 ? 'retry' : 'terminate' }
    memory { 2.GB * task.attempt }

    input:
    tuple val(meta), path(bam)

    output:
    tuple val(meta), path("*.bam"), emit: bam
    tuple val(meta), path("*.csi"), emit: csi, optional: true
    path  "versions.yml"          , emit: versions

    when:
    task.ext.when == null || task.ext.when

    shell:
    '''
    samtools sort -@ !{task.cpus} -o !{meta.id}.bam !{bam}
    '''
}
"#;
    let f = parse_script("modules/local/samtools_sort.nf", src);
    assert_eq!(f.unparsed, vec![]);
    let p = f.processes.first().ok_or("no process")?;
    assert_eq!(p.labels(), vec!["process_medium"]);
    assert_eq!(
        p.container_images(),
        vec![
            "https://depot.galaxyproject.org/singularity/samtools:1.17--h00cdaf9_0",
            "biocontainers/samtools:1.17--h00cdaf9_0",
        ]
    );
    let publish = p.directive("publishDir").map(|d| d.line);
    assert_eq!(publish, Some(10));
    assert_eq!(
        p.directive("errorStrategy").map(|d| d.strings.clone()),
        Some(vec!["retry".to_string(), "terminate".to_string()])
    );
    assert_eq!(p.emits(), vec!["bam", "csi", "versions"]);
    assert_eq!(
        p.script.as_ref().map(|s| (s.kind, s.line)),
        Some((ScriptKind::Shell, 27))
    );
    Ok(())
}

#[test]
fn an_implicit_script_and_exec_are_read() {
    let f = parse_script(
        "m.nf",
        "process A {\n  input:\n  val x\n  \"\"\"\n  echo $x\n  \"\"\"\n}\nprocess B {\n  exec:\n  println 'hi'\n}\n",
    );
    assert_eq!(f.unparsed, vec![]);
    let kinds: Vec<Option<(ScriptKind, u32)>> = f
        .processes
        .iter()
        .map(|p| p.script.as_ref().map(|s| (s.kind, s.line)))
        .collect();
    assert_eq!(
        kinds,
        vec![
            Some((ScriptKind::Implicit, 4)),
            Some((ScriptKind::Exec, 10))
        ]
    );
    assert_eq!(f.processes.first().map(|p| p.inputs.len()), Some(1));
}

#[test]
fn includes_with_aliases_on_several_lines_and_old_add_params() {
    let f = parse_script(
        "main.nf",
        "include {\n  A as X;\n  B\n  C as Y\n} from './modules/abc'\ninclude { D } from './d' addParams(options: [:])\n",
    );
    let names: Vec<(String, Option<String>)> = f
        .includes
        .iter()
        .flat_map(|i| i.names.iter().map(|n| (n.name.clone(), n.alias.clone())))
        .collect();
    assert_eq!(
        names,
        vec![
            ("A".into(), Some("X".into())),
            ("B".into(), None),
            ("C".into(), Some("Y".into())),
            ("D".into(), None),
        ]
    );
    assert_eq!(
        f.unparsed
            .iter()
            .map(|u| (u.line, u.what.as_str()))
            .collect::<Vec<_>>(),
        vec![(6, "include `addParams(…)` is not read")]
    );
}

#[test]
fn top_level_forms_are_kept_or_said() {
    let f = parse_script(
        "main.nf",
        "nextflow.enable.dsl = 2\nimport groovy.json.JsonSlurper\ndef summary = [:]\nworkflow.onComplete { log.info 'done' }\nlog.info \"hello\"\nWorkflowMain.initialise(workflow, params, log)\n",
    );
    let others: Vec<u32> = f.others.iter().map(|o| o.line).collect();
    assert_eq!(others, vec![1, 2, 3, 4]);
    let unparsed: Vec<u32> = f.unparsed.iter().map(|u| u.line).collect();
    assert_eq!(unparsed, vec![5, 6]);
}

#[test]
fn the_typed_syntax_params_block_take_and_publish() {
    let f = parse_script(
        "main.nf",
        "params {\n  input: Path\n  outdir: String = 'results'\n  save = false\n}\nworkflow {\n  take:\n  reads: Channel<Path>\n  main:\n  ch = A(reads)\n  publish:\n  samples = ch\n}\n",
    );
    assert_eq!(f.unparsed, vec![]);
    let params: Vec<(&str, &Value, Option<&str>)> = f
        .params
        .iter()
        .map(|p| (p.name.as_str(), &p.value, p.type_name.as_deref()))
        .collect();
    assert_eq!(
        params,
        vec![
            ("input", &Value::Null, Some("Path")),
            ("outdir", &Value::Str("results".into()), Some("String")),
            ("save", &Value::Bool(false), None),
        ]
    );
    let w = f.workflows.first();
    assert_eq!(
        w.map(|w| w.take.iter().map(|t| t.name.as_str()).collect::<Vec<_>>()),
        Some(vec!["reads"])
    );
    assert_eq!(
        w.map(|w| w
            .publish
            .iter()
            .map(|e| e.name.as_deref())
            .collect::<Vec<_>>()),
        Some(vec![Some("samples")])
    );
}

#[test]
fn an_older_nf_core_config_reads_and_says_what_it_skips() {
    let src = r#"
params {
    max_memory = '128.GB'
    max_cpus   = 16
}
try {
    includeConfig "${params.custom_config_base}/nfcore_custom.config"
} catch (Exception e) {
    System.err.println("WARNING: Could not load nf-core/config profiles")
}
process {
    cpus   = { check_max( 1    * task.attempt, 'cpus'   ) }
    withName: 'SAMTOOLS_.*|BWA_MEM' {
        container = 'quay.io/biocontainers/samtools:1.17'
    }
}
def check_max(obj, type) {
    return obj
}
"#;
    let c = parse_config("nextflow.config", src);
    // The helper is understood as what it is — a function the closures call at run time.
    assert_eq!(c.unparsed, vec![]);
    assert_eq!(
        c.defs
            .iter()
            .map(|d| (d.line, d.name.as_str(), d.value.is_none(), d.what.as_str()))
            .collect::<Vec<_>>(),
        vec![(
            17,
            "check_max",
            true,
            "function `check_max(obj, type)`, run only when a closure calls it at run time"
        )]
    );
    assert_eq!(c.includes.len(), 1);
    assert!(c.includes.first().and_then(|i| i.note.as_deref()).is_some());
    assert_eq!(
        c.get("params.max_cpus").map(|s| &s.value),
        Some(&Value::Number("16".into()))
    );
    let container = c
        .settings
        .iter()
        .find(|s| s.key == "process.withName:SAMTOOLS_.*|BWA_MEM.container");
    assert_eq!(
        container.map(|s| (s.line, s.value.as_str())),
        Some((14, Some("quay.io/biocontainers/samtools:1.17")))
    );
}

#[test]
fn directive_arguments_are_read_positional_and_named() -> Result<(), Box<dyn std::error::Error>> {
    let f = parse_script(
        "m.nf",
        "process P {\n  publishDir \"${params.outdir}/p\", mode: 'copy', enabled: true\n  ext args: '--fast'\n  when:\n  params.run_p\n  && !params.skip\n  script:\n  'x'\n}\n",
    );
    let p = f.processes.first().ok_or("no process")?;
    let publish = p.directive("publishDir").ok_or("no publishDir")?;
    assert_eq!(publish.arg("mode"), Some(&Value::Str("copy".into())));
    assert_eq!(publish.arg("enabled"), Some(&Value::Bool(true)));
    assert_eq!(
        publish.args.first().map(|a| (&a.name, &a.value)),
        Some((&None, &Value::Expr("\"${params.outdir}/p\"".into())))
    );
    assert_eq!(
        p.directive("ext").and_then(|d| d.arg("args")),
        Some(&Value::Str("--fast".into()))
    );
    assert_eq!(
        p.when.as_ref().map(|w| (w.line, w.text.as_str())),
        Some((5, "params.run_p\n  && !params.skip"))
    );
    Ok(())
}

#[test]
fn an_include_from_a_computed_path_is_said() {
    let f = parse_script("main.nf", "include { C } from \"${projectDir}/c\"\n");
    assert_eq!(f.includes, vec![]);
    assert_eq!(
        f.unparsed.first().map(|u| u.what.as_str()),
        Some("include source `\"${projectDir}/c\"` is not a literal path; not read")
    );
}
