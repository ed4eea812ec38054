use std::path::Path;

use pretty_assertions::assert_eq;

use super::*;

const TEMPLATE_TEST: &str = include_str!("../../tests/fixtures/nfcore-template/conf/test.config");
const TEMPLATE_MAIN: &str = include_str!("../../tests/fixtures/nfcore-template/nextflow.config");
const LOCAL: &str = "/work/demo/tests/data";

// nf-core/rnaseq 3.12.0 conf/test.config: full URLs on the `rnaseq` branch.
const RNASEQ_TEST: &str = r#"/*
========================================================================================
    Nextflow config file for running minimal tests
========================================================================================
    Defines input files and everything required to run a fast and simple pipeline test.

    Use as follows:
        nextflow run nf-core/rnaseq -profile test,<docker/singularity> --outdir <OUTDIR>

----------------------------------------------------------------------------------------
*/

params {
    config_profile_name        = 'Test profile'
    config_profile_description = 'Minimal test dataset to check pipeline function'

    // Limit resources so that this can run on GitHub Actions
    max_cpus   = 2
    max_memory = '6.GB'
    max_time   = '6.h'

    // Input data
    input = 'https://raw.githubusercontent.com/nf-core/test-datasets/rnaseq/samplesheet/v3.10/samplesheet_test.csv'

    // Genome references
    fasta               = 'https://raw.githubusercontent.com/nf-core/test-datasets/rnaseq/reference/genome.fasta'
    gtf                 = 'https://raw.githubusercontent.com/nf-core/test-datasets/rnaseq/reference/genes.gtf.gz'
    gff                 = 'https://raw.githubusercontent.com/nf-core/test-datasets/rnaseq/reference/genes.gff.gz'
    transcript_fasta    = 'https://raw.githubusercontent.com/nf-core/test-datasets/rnaseq/reference/transcriptome.fasta'
    additional_fasta    = 'https://raw.githubusercontent.com/nf-core/test-datasets/rnaseq/reference/gfp.fa.gz'

    bbsplit_fasta_list  = 'https://raw.githubusercontent.com/nf-core/test-datasets/rnaseq/reference/bbsplit_fasta_list.txt'
    hisat2_index        = 'https://raw.githubusercontent.com/nf-core/test-datasets/rnaseq/reference/hisat2.tar.gz'
    salmon_index        = 'https://raw.githubusercontent.com/nf-core/test-datasets/rnaseq/reference/salmon.tar.gz'
    rsem_index          = 'https://raw.githubusercontent.com/nf-core/test-datasets/rnaseq/reference/rsem.tar.gz'

    // Other parameters
    skip_bbsplit        = false
    pseudo_aligner      = 'salmon'
    umitools_bc_pattern = 'NNNN'
}

// When using RSEM, remove warning from STAR whilst building tmp indices
process {
    withName: 'RSEM_PREPAREREFERENCE_GENOME' {
        ext.args2 = "--genomeSAindexNbases 7"
    }
}
"#;

// nf-core/mag 3.x conf/test.config: the base path set in the test configuration itself.
const MAG_TEST: &str = r#"params {
    config_profile_name        = 'Test profile'
    config_profile_description = 'Minimal test dataset to check pipeline function'

    // Input data
    pipelines_testdata_base_path = 'https://raw.githubusercontent.com/nf-core/test-datasets/'
    input                        = params.pipelines_testdata_base_path + 'mag/samplesheets/samplesheet.multirun.v4.csv'
    centrifuge_db                = params.pipelines_testdata_base_path + 'mag/test_data/minigut_cf.tar.gz'
    kraken2_db                   = params.pipelines_testdata_base_path + 'mag/test_data/minigut_kraken.tgz'
    skip_krona                   = false
    min_length_unbinned_contigs  = 1
    max_unbinned_contigs         = 2
    busco_db                     = "https://busco-data.ezlab.org/v5/data/lineages/bacteria_odb10.2024-01-08.tar.gz"
    busco_clean                  = true
}
"#;

// nf-core/sarek 3.4 conf/test.config (abridged): a directory base and a GString on it, and
// a local samplesheet.
const SAREK_TEST: &str = r#"params {
    config_profile_name        = 'Test profile'
    config_profile_description = 'Minimal test dataset to check pipeline function'

    // Input data
    input = "${projectDir}/tests/csv/3.0/fastq_single.csv"

    // small genome on igenomes
    igenomes_base = 'https://raw.githubusercontent.com/nf-core/test-datasets/modules/data'
    genome        = 'testdata.nf-core.sarek'

    // Small reference genome
    snpeff_cache  = null
    vep_cache     = null
    known_indels  = "${params.modules_testdata_base_path}genomics/homo_sapiens/genome/vcf/mills_and_1000G.indels.vcf.gz"
    modules_testdata_base_path = 'https://raw.githubusercontent.com/nf-core/test-datasets/modules/data/'
}
"#;

fn request<'a>(
    test: &'a str,
    main: Option<&'a str>,
    dataset: Option<&'a str>,
) -> ConfigRequest<'a> {
    ConfigRequest {
        test_config: test,
        nextflow_config: main,
        base: NFCORE_BASE,
        local_root: Path::new(LOCAL),
        dataset,
    }
}

fn rels(plan: &ConfigPlan) -> Vec<&str> {
    plan.files.iter().map(|f| f.rel.as_str()).collect()
}

#[test]
fn the_template_gets_its_base_path_overridden_in_the_test_config() {
    let plan = plan_config(&request(TEMPLATE_TEST, Some(TEMPLATE_MAIN), None)).unwrap();
    assert_eq!(
        rels(&plan),
        ["viralrecon/samplesheet/samplesheet_test_illumina_amplicon.csv"]
    );
    assert_eq!(
        plan.files[0].url,
        "https://raw.githubusercontent.com/nf-core/test-datasets/viralrecon/samplesheet/samplesheet_test_illumina_amplicon.csv"
    );
    assert_eq!(plan.files[0].named_by, "params.input (conf/test.config:28)");
    let inserted = "    pipelines_testdata_base_path = '/work/demo/tests/data/'\n";
    let at = TEMPLATE_TEST.find("    input  = params").unwrap();
    let expected = format!("{}{inserted}{}", &TEMPLATE_TEST[..at], &TEMPLATE_TEST[at..]);
    assert_eq!(plan.rewritten.as_deref(), Some(expected.as_str()));
    assert_eq!(
        plan.changed,
        vec![ChangedLine {
            line: 28,
            text: "    pipelines_testdata_base_path = '/work/demo/tests/data/'".to_owned(),
            inserted: true,
        }]
    );
    assert!(plan.not_fetched.is_empty(), "{:?}", plan.not_fetched);
}

#[test]
fn the_rewritten_template_is_already_local_on_a_second_reading() {
    let first = plan_config(&request(TEMPLATE_TEST, Some(TEMPLATE_MAIN), None)).unwrap();
    let rewritten = first.rewritten.unwrap();
    let second = plan_config(&request(&rewritten, Some(TEMPLATE_MAIN), None)).unwrap();
    assert!(second.files.is_empty());
    assert_eq!(second.rewritten, None);
    assert_eq!(
        second.already_local,
        vec![AlreadyLocal {
            named_by: "params.input (conf/test.config:29)".to_owned(),
            path: Path::new(LOCAL)
                .join("viralrecon/samplesheet/samplesheet_test_illumina_amplicon.csv"),
        }]
    );
}

#[test]
fn rnaseq_full_urls_become_local_paths_and_nothing_else_changes() {
    let plan = plan_config(&request(RNASEQ_TEST, None, None)).unwrap();
    assert_eq!(plan.files.len(), 10);
    assert_eq!(
        rels(&plan)[0],
        "rnaseq/samplesheet/v3.10/samplesheet_test.csv"
    );
    let expected = RNASEQ_TEST.replace(
        "https://raw.githubusercontent.com/nf-core/test-datasets/",
        "/work/demo/tests/data/",
    );
    assert_eq!(plan.rewritten.as_deref(), Some(expected.as_str()));
    assert_eq!(plan.changed.len(), 10);
    assert_eq!(
        plan.changed[0].text,
        "    input = '/work/demo/tests/data/rnaseq/samplesheet/v3.10/samplesheet_test.csv'"
    );
}

#[test]
fn a_mirror_takes_nf_cores_urls_and_the_local_layout_stays_the_repositorys() {
    let mirror = "http://127.0.0.1:8080/";
    let plan = plan_config(&ConfigRequest {
        base: mirror,
        ..request(RNASEQ_TEST, None, None)
    })
    .unwrap();
    assert_eq!(
        plan.files[1].url,
        "http://127.0.0.1:8080/rnaseq/reference/genome.fasta"
    );
    assert_eq!(plan.files[1].rel, "rnaseq/reference/genome.fasta");
}

#[test]
fn a_base_set_in_the_test_config_gets_the_local_value_and_off_base_urls_are_listed() {
    let plan = plan_config(&request(MAG_TEST, Some(TEMPLATE_MAIN), None)).unwrap();
    assert_eq!(
        rels(&plan),
        [
            "mag/samplesheets/samplesheet.multirun.v4.csv",
            "mag/test_data/minigut_cf.tar.gz",
            "mag/test_data/minigut_kraken.tgz",
        ]
    );
    let expected = MAG_TEST.replacen(
        "'https://raw.githubusercontent.com/nf-core/test-datasets/'",
        "'/work/demo/tests/data/'",
        1,
    );
    assert_eq!(plan.rewritten.as_deref(), Some(expected.as_str()));
    assert_eq!(plan.changed.len(), 1);
    assert_eq!(plan.not_fetched.len(), 1);
    assert_eq!(
        plan.not_fetched[0].named_by,
        "params.busco_db (conf/test.config:13)"
    );
    assert!(
        plan.not_fetched[0]
            .reason
            .contains("not under the test-datasets base")
    );
}

#[test]
fn a_gstring_on_a_base_with_its_branch_and_a_directory_base() {
    let plan = plan_config(&request(SAREK_TEST, None, None)).unwrap();
    assert_eq!(
        rels(&plan),
        ["modules/data/genomics/homo_sapiens/genome/vcf/mills_and_1000G.indels.vcf.gz"]
    );
    let expected = SAREK_TEST.replacen(
        "'https://raw.githubusercontent.com/nf-core/test-datasets/modules/data/'",
        "'/work/demo/tests/data/modules/data/'",
        1,
    );
    assert_eq!(plan.rewritten.as_deref(), Some(expected.as_str()));
    let igenomes = &plan.not_fetched[0];
    assert_eq!(
        igenomes.named_by,
        "params.igenomes_base (conf/test.config:9)"
    );
    assert!(igenomes.reason.contains("directory"), "{}", igenomes.reason);
}

#[test]
fn a_dataset_filter_keeps_its_branch_and_names_the_others_when_absent() {
    let both = format!(
        "{RNASEQ_TEST}\nparams {{\n    fastq = 'https://raw.githubusercontent.com/nf-core/test-datasets/modules/data/genomics/sarscov2/illumina/fastq/test_1.fastq.gz'\n}}\n"
    );
    let plan = plan_config(&request(&both, None, Some("modules"))).unwrap();
    assert_eq!(
        rels(&plan),
        ["modules/data/genomics/sarscov2/illumina/fastq/test_1.fastq.gz"]
    );
    assert_eq!(plan.not_fetched.len(), 10);
    assert_eq!(plan.changed.len(), 1);
    let err = plan_config(&request(&both, None, Some("viralrecon"))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`conf/test.config` names no file of the dataset `viralrecon`; it names `rnaseq`, `modules`"
    );
}

#[test]
fn a_filter_that_leaves_out_files_behind_a_base_leaves_the_base_alone() {
    let config = "params {\n    pipelines_testdata_base_path = 'https://raw.githubusercontent.com/nf-core/test-datasets/'\n    input = params.pipelines_testdata_base_path + 'viralrecon/samplesheet/s.csv'\n    fasta = params.pipelines_testdata_base_path + 'modules/data/genome.fasta'\n}\n";
    let plan = plan_config(&request(config, None, Some("viralrecon"))).unwrap();
    assert_eq!(rels(&plan), ["viralrecon/samplesheet/s.csv"]);
    assert_eq!(plan.rewritten, None);
    assert!(
        plan.not_fetched
            .iter()
            .any(|n| n.named_by == "params.pipelines_testdata_base_path")
    );
}

#[test]
fn a_config_naming_no_test_data_is_an_error() {
    let err = plan_config(&request(
        "params {\n    genome = 'R64-1-1'\n}\n",
        None,
        None,
    ))
    .unwrap_err();
    assert_eq!(
        err,
        TestDataError::NothingNamed {
            config: TEST_CONFIG.to_owned()
        }
    );
}

#[test]
fn a_base_path_nobody_defines_is_reported() {
    let plan = plan_config(&request(TEMPLATE_TEST, None, None)).unwrap();
    assert!(plan.files.is_empty());
    assert!(plan.not_fetched[0].reason.contains("neither"));
}

#[test]
fn dotted_params_get_a_dotted_override_and_a_quote_in_the_path_is_escaped() {
    let config = "params.input = params.pipelines_testdata_base_path + 'demo/s.csv'\r\n";
    let plan = plan_config(&ConfigRequest {
        local_root: Path::new("/home/o'neil/p/tests/data"),
        ..request(config, Some(TEMPLATE_MAIN), None)
    })
    .unwrap();
    assert_eq!(
        plan.rewritten.as_deref(),
        Some(
            "params.pipelines_testdata_base_path = '/home/o\\'neil/p/tests/data/'\r\nparams.input = params.pipelines_testdata_base_path + 'demo/s.csv'\r\n"
        )
    );
}
