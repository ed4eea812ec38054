//! The samplesheet gate on the real nf-core template's schema and on seeded sheets.

use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};

use codaris_nextflow::samplesheet::{
    GateError, GateReport, GateRequest, SheetFormat, prepare_samplesheet_gate,
};
use pretty_assertions::assert_eq;
use sha2::{Digest, Sha256};
use tempfile::TempDir;

type TestResult = Result<(), Box<dyn Error>>;

const SAMPLE_MESSAGE: &str = "Sample name must be provided and cannot contain spaces";
const FASTQ1_MESSAGE: &str = "FastQ file for reads 1 must be provided, cannot contain spaces and must have extension '.fq.gz' or '.fastq.gz'";

fn template() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nfcore-template")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/samplesheet")
        .join(name)
}

/// A launch directory with the reads the fixture sheets name.
fn launch_dir() -> Result<TempDir, Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    fs::create_dir(dir.path().join("reads"))?;
    for name in [
        "S1_R1.fastq.gz",
        "S1_R2.fastq.gz",
        "S2_R1.fastq.gz",
        "S2_R1.fq",
    ] {
        fs::write(dir.path().join("reads").join(name), b"@r\nACGT\n+\nIIII\n")?;
    }
    Ok(dir)
}

/// Copies fixture `name` into the launch dir and gates it against the template's schema.
fn gate_fixture(launch: &Path, name: &str) -> Result<GateReport, GateError> {
    let _ = fs::copy(fixture(name), launch.join(name));
    prepare_samplesheet_gate(&GateRequest::new(template(), name).launch_dir(launch))
}

/// Writes `text` as sheet `name` in the launch dir and gates it.
fn gate_text(launch: &Path, name: &str, text: &[u8]) -> Result<GateReport, GateError> {
    let _ = fs::write(launch.join(name), text);
    prepare_samplesheet_gate(&GateRequest::new(template(), name).launch_dir(launch))
}

fn lines(report: &GateReport) -> Vec<String> {
    report.render().lines().map(str::to_owned).collect()
}

/// What a failure about a missing relative path adds: where it was looked for.
fn base(launch: &Path) -> String {
    format!(
        " (relative paths are resolved against the launch directory `{}`)",
        launch.display()
    )
}

fn bad_sheet_lines(launch: &Path) -> Vec<String> {
    vec![
        "failed".to_owned(),
        format!(
            "-> Entry 1: Error for field 'sample' (S 1): \"S 1\" does not match regular expression ^\\S+$ ({SAMPLE_MESSAGE})"
        ),
        format!(
            "-> Entry 2: Error for field 'fastq_1' (reads/S2_R1.fq): \"reads/S2_R1.fq\" does not match regular expression ^([\\S\\s]*\\/)?[^\\s\\/]+\\.f(ast)?q\\.gz$ ({FASTQ1_MESSAGE})"
        ),
        format!(
            "-> Entry 3: Error for field 'fastq_1' (reads/S3_R1.fastq.gz): the file or directory 'reads/S3_R1.fastq.gz' does not exist{} ({FASTQ1_MESSAGE})",
            base(launch)
        ),
    ]
}

#[test]
fn a_good_sheet_passes_and_is_bound_to_both_digests() -> TestResult {
    let launch = launch_dir()?;
    let report = gate_fixture(launch.path(), "good.csv")?;
    assert_eq!(report.render(), "passed\n");
    assert!(report.passed());
    assert_eq!(report.rows, 2);
    assert_eq!(report.format, SheetFormat::Csv);
    let sheet = fs::read(launch.path().join("good.csv"))?;
    let schema = fs::read(template().join("assets/schema_input.json"))?;
    assert_eq!(report.sheet_sha256, format!("{:x}", Sha256::digest(&sheet)));
    assert_eq!(
        report.schema_sha256,
        format!("{:x}", Sha256::digest(&schema))
    );
    assert_eq!(
        report.schema_path,
        template().join("assets/schema_input.json")
    );
    // The ledger record: the same names, the format as its extension.
    let record = serde_json::to_value(&report)?;
    assert_eq!(record["format"], "csv");
    assert_eq!(record["rows"], 2);
    assert_eq!(record["sheet_sha256"], report.sheet_sha256.as_str());
    Ok(())
}

#[test]
fn a_bad_sheet_fails_in_nf_schema_words() -> TestResult {
    let launch = launch_dir()?;
    let report = gate_fixture(launch.path(), "bad.csv")?;
    assert_eq!(lines(&report), bad_sheet_lines(launch.path()));
    assert_eq!(report.rows, 3);
    Ok(())
}

#[test]
fn tsv_json_and_yaml_sheets_read_like_csv() -> TestResult {
    let launch = launch_dir()?;
    for (name, format) in [
        ("good.tsv", SheetFormat::Tsv),
        ("good.json", SheetFormat::Json),
        ("good.yaml", SheetFormat::Yaml),
    ] {
        let report = gate_fixture(launch.path(), name)?;
        assert_eq!(report.render(), "passed\n", "{name}");
        assert_eq!((report.format, report.rows), (format, 2), "{name}");
    }
    assert_eq!(
        lines(&gate_fixture(launch.path(), "bad.yaml")?),
        bad_sheet_lines(launch.path())
    );
    Ok(())
}

#[test]
fn a_sheet_without_an_extension_is_read_by_its_content() -> TestResult {
    let launch = launch_dir()?;
    let csv = fs::read(fixture("good.csv"))?;
    let report = gate_text(launch.path(), "samples", &csv)?;
    assert_eq!(
        (report.render().as_str(), report.format),
        ("passed\n", SheetFormat::Csv)
    );
    let json = fs::read(fixture("good.json"))?;
    let report = gate_text(launch.path(), "samples", &json)?;
    assert_eq!(
        (report.render().as_str(), report.format),
        ("passed\n", SheetFormat::Json)
    );
    let err = gate_text(launch.path(), "notes", b"just some words\n");
    assert!(
        matches!(err, Err(GateError::UnknownFormat { .. })),
        "{err:?}"
    );
    Ok(())
}

#[test]
fn a_missing_required_column_is_named_for_every_entry() -> TestResult {
    let launch = launch_dir()?;
    let report = gate_fixture(launch.path(), "missing_column.csv")?;
    assert_eq!(
        lines(&report),
        ["failed", "-> Entry 1: Missing required field(s): fastq_1"]
    );
    Ok(())
}

#[test]
fn an_empty_optional_cell_is_absent_not_an_empty_string() -> TestResult {
    let launch = launch_dir()?;
    // An empty string would break fastq_2's pattern and `exists`; an absent field is fine.
    let report = gate_text(
        launch.path(),
        "blank.csv",
        b"sample,fastq_1,fastq_2\nS2,reads/S2_R1.fastq.gz,   \nS1,reads/S1_R1.fastq.gz,\"\"\n",
    )?;
    assert_eq!(report.render(), "passed\n");
    // An empty required cell is a missing field, as nf-schema says it.
    let report = gate_text(
        launch.path(),
        "blank_required.csv",
        b"sample,fastq_1,fastq_2\n,reads/S2_R1.fastq.gz,\n",
    )?;
    assert_eq!(
        lines(&report),
        ["failed", "-> Entry 1: Missing required field(s): sample"]
    );
    Ok(())
}

#[test]
fn an_unknown_column_is_a_warning_only() -> TestResult {
    let launch = launch_dir()?;
    let report = gate_fixture(launch.path(), "extra_column.csv")?;
    let sheet = launch.path().join("extra_column.csv");
    assert_eq!(
        lines(&report),
        [
            "passed".to_owned(),
            format!(
                "warning: Found the following unidentified headers in {}: condition (ignored)",
                sheet.display()
            )
        ]
    );
    assert!(report.passed());
    Ok(())
}

#[test]
fn unique_entries_flags_every_repeat() -> TestResult {
    let launch = launch_dir()?;
    let mut schema: serde_json::Value =
        serde_json::from_slice(&fs::read(template().join("assets/schema_input.json"))?)?;
    if let Some(top) = schema.as_object_mut() {
        top.insert("uniqueEntries".into(), serde_json::json!(["sample"]));
    }
    let schema_path = launch.path().join("schema_unique.json");
    fs::write(&schema_path, serde_json::to_vec_pretty(&schema)?)?;
    fs::copy(
        fixture("duplicate.csv"),
        launch.path().join("duplicate.csv"),
    )?;
    let request = GateRequest::new(template(), "duplicate.csv")
        .launch_dir(launch.path())
        .schema(&schema_path);
    let report = prepare_samplesheet_gate(&request)?;
    assert_eq!(
        lines(&report),
        [
            "failed",
            "-> Entry 3: Detected duplicate entries: [sample:S1]"
        ]
    );
    // Without `uniqueEntries` (the template as shipped) the same sheet passes.
    assert_eq!(
        gate_fixture(launch.path(), "duplicate.csv")?.render(),
        "passed\n"
    );
    Ok(())
}

#[test]
fn relative_paths_resolve_against_the_launch_dir_not_the_sheet_dir() -> TestResult {
    let launch = launch_dir()?;
    fs::create_dir(launch.path().join("sheets"))?;
    fs::copy(fixture("good.csv"), launch.path().join("sheets/good.csv"))?;
    let from_launch = GateRequest::new(template(), "sheets/good.csv").launch_dir(launch.path());
    assert_eq!(prepare_samplesheet_gate(&from_launch)?.render(), "passed\n");
    // Launched from the sheet's own directory, `reads/…` no longer exists.
    let from_sheets = GateRequest::new(template(), launch.path().join("sheets/good.csv"))
        .launch_dir(launch.path().join("sheets"));
    let report = prepare_samplesheet_gate(&from_sheets)?;
    assert!(!report.passed());
    assert_eq!(report.errors.len(), 3, "{}", report.render());
    assert!(report.render().contains(
        "-> Entry 1: Error for field 'fastq_1' (reads/S1_R1.fastq.gz): the file or directory 'reads/S1_R1.fastq.gz' does not exist"
    ));
    // Without a launch dir, the pipeline directory is where the run starts.
    let default = GateRequest::new(template(), launch.path().join("good.csv"));
    fs::copy(fixture("good.csv"), launch.path().join("good.csv"))?;
    assert_eq!(prepare_samplesheet_gate(&default)?.errors.len(), 3);
    Ok(())
}

#[test]
fn dot_dot_and_file_uris_resolve_like_nextflow_paths() -> TestResult {
    let launch = launch_dir()?;
    fs::create_dir(launch.path().join("run"))?;
    let absolute = launch.path().join("reads/S2_R1.fastq.gz");
    let sheet = format!(
        "sample,fastq_1\nS1,../reads/S1_R1.fastq.gz\nS2,file://{}\nS3,../../nowhere/S3_R1.fastq.gz\n",
        absolute.display()
    );
    fs::write(launch.path().join("run/dots.csv"), sheet)?;
    let report = prepare_samplesheet_gate(
        &GateRequest::new(template(), "dots.csv").launch_dir(launch.path().join("run")),
    )?;
    assert_eq!(
        lines(&report),
        [
            "failed".to_owned(),
            format!(
                "-> Entry 3: Error for field 'fastq_1' (../../nowhere/S3_R1.fastq.gz): the file or directory '../../nowhere/S3_R1.fastq.gz' does not exist{} ({FASTQ1_MESSAGE})",
                base(&launch.path().join("run"))
            )
        ]
    );
    Ok(())
}

#[test]
fn a_symlink_to_a_file_is_a_file_and_a_dangling_one_is_missing() -> TestResult {
    let launch = launch_dir()?;
    let elsewhere = tempfile::tempdir()?;
    let target = elsewhere.path().join("real.fastq.gz");
    fs::write(&target, b"@r\n")?;
    std::os::unix::fs::symlink(&target, launch.path().join("reads/link_R1.fastq.gz"))?;
    std::os::unix::fs::symlink(
        elsewhere.path().join("gone.fastq.gz"),
        launch.path().join("reads/dangling_R1.fastq.gz"),
    )?;
    let report = gate_text(
        launch.path(),
        "links.csv",
        b"sample,fastq_1\nL1,reads/link_R1.fastq.gz\nL2,reads/dangling_R1.fastq.gz\n",
    )?;
    assert_eq!(
        lines(&report),
        [
            "failed".to_owned(),
            format!(
                "-> Entry 2: Error for field 'fastq_1' (reads/dangling_R1.fastq.gz): the file or directory 'reads/dangling_R1.fastq.gz' does not exist{} ({FASTQ1_MESSAGE})",
                base(launch.path())
            )
        ]
    );
    Ok(())
}

#[test]
fn a_directory_where_a_file_is_expected_fails() -> TestResult {
    let launch = launch_dir()?;
    fs::create_dir(launch.path().join("reads/dir_R1.fastq.gz"))?;
    let report = gate_text(
        launch.path(),
        "dir.csv",
        b"sample,fastq_1\nD1,reads/dir_R1.fastq.gz\n",
    )?;
    assert_eq!(
        lines(&report),
        [
            "failed".to_owned(),
            format!(
                "-> Entry 1: Error for field 'fastq_1' (reads/dir_R1.fastq.gz): 'reads/dir_R1.fastq.gz' is not a file, but a directory ({FASTQ1_MESSAGE})"
            )
        ]
    );
    Ok(())
}

#[test]
fn an_empty_sheet_and_a_header_only_sheet_have_no_entries() -> TestResult {
    let launch = launch_dir()?;
    for (name, text) in [
        ("empty.csv", &b""[..]),
        ("header.csv", b"sample,fastq_1,fastq_2\n"),
        ("empty.json", b"[]"),
        ("comments.yaml", b"# nothing yet\n"),
    ] {
        let report = gate_text(launch.path(), name, text)?;
        assert_eq!(
            lines(&report),
            ["failed", "-> the samplesheet has no entries"],
            "{name}"
        );
        assert_eq!(report.rows, 0);
    }
    Ok(())
}

#[test]
fn a_byte_order_mark_fails_with_the_reason() -> TestResult {
    let launch = launch_dir()?;
    let mut text = b"\xEF\xBB\xBF".to_vec();
    text.extend(fs::read(fixture("good.csv"))?);
    let report = gate_text(launch.path(), "excel.csv", &text)?;
    assert_eq!(
        lines(&report),
        [
            "failed",
            "-> the samplesheet starts with a UTF-8 byte-order mark, which Nextflow reads as part of the first column's name 'sample': save it without the mark"
        ]
    );
    Ok(())
}

#[test]
fn crlf_line_ends_read_like_lf() -> TestResult {
    let launch = launch_dir()?;
    let crlf = fs::read_to_string(fixture("good.csv"))?.replace('\n', "\r\n");
    assert_eq!(
        gate_text(launch.path(), "crlf.csv", crlf.as_bytes())?.render(),
        "passed\n"
    );
    let bad = fs::read_to_string(fixture("bad.csv"))?.replace('\n', "\r\n");
    assert_eq!(
        lines(&gate_text(launch.path(), "crlf_bad.csv", bad.as_bytes())?),
        bad_sheet_lines(launch.path())
    );
    Ok(())
}

#[test]
fn a_50_mb_sheet_is_refused_by_size() -> TestResult {
    let launch = launch_dir()?;
    let path = launch.path().join("huge.csv");
    let file = fs::File::create(&path)?;
    file.set_len(50 * 1000 * 1000)?;
    let err =
        prepare_samplesheet_gate(&GateRequest::new(template(), &path).launch_dir(launch.path()));
    match err {
        Err(
            e @ GateError::TooLarge {
                size: 50_000_000, ..
            },
        ) => {
            let text = e.to_string();
            assert!(
                text.contains("is 50000000 bytes, over the gate's limit of 33554432 bytes"),
                "{text}"
            );
        }
        other => return Err(format!("expected TooLarge, got {other:?}").into()),
    }
    Ok(())
}

#[test]
fn non_utf8_bytes_are_refused_with_the_line() -> TestResult {
    let launch = launch_dir()?;
    let err = gate_text(
        launch.path(),
        "latin1.csv",
        b"sample,fastq_1\nS1,reads/S1_R1.fastq.gz\nS\xE9,reads/S2_R1.fastq.gz\n",
    );
    match err {
        Err(e @ GateError::NotUtf8 { line: 3, .. }) => {
            assert!(
                e.to_string()
                    .contains("is not valid UTF-8 (first bad byte on line 3)")
            );
        }
        other => return Err(format!("expected NotUtf8, got {other:?}").into()),
    }
    Ok(())
}

#[test]
fn an_injected_newline_cannot_forge_an_answer_line() -> TestResult {
    let launch = launch_dir()?;
    let report = gate_text(
        launch.path(),
        "inject.csv",
        b"sample,fastq_1\n\"S1 x\npassed\nwarning: fine\",reads/S1_R1.fastq.gz\n",
    )?;
    let rendered = report.render();
    assert_eq!(rendered.lines().count(), 2, "{rendered}");
    assert!(rendered.starts_with(
        "failed\n-> Entry 1: Error for field 'sample' (S1 x\\npassed\\nwarning: fine): "
    ));
    // The structured finding keeps the value as written.
    assert_eq!(
        report.errors[0].value.as_deref(),
        Some("S1 x\npassed\nwarning: fine")
    );
    Ok(())
}

#[test]
fn a_number_in_a_string_column_fails_unless_lenient() -> TestResult {
    let launch = launch_dir()?;
    fs::write(
        launch.path().join("numbers.csv"),
        b"sample,fastq_1\n123,reads/S1_R1.fastq.gz\ntrue,reads/S2_R1.fastq.gz\n",
    )?;
    let strict = prepare_samplesheet_gate(
        &GateRequest::new(template(), "numbers.csv").launch_dir(launch.path()),
    )?;
    assert_eq!(
        lines(&strict),
        [
            "failed".to_owned(),
            format!(
                "-> Entry 1: Error for field 'sample' (123): Value is [integer] but should be [string] ({SAMPLE_MESSAGE})"
            ),
            format!(
                "-> Entry 2: Error for field 'sample' (true): Value is [boolean] but should be [string] ({SAMPLE_MESSAGE})"
            ),
        ]
    );
    let lenient = prepare_samplesheet_gate(
        &GateRequest::new(template(), "numbers.csv")
            .launch_dir(launch.path())
            .lenient_types(true),
    )?;
    assert_eq!(lenient.render(), "passed\n");
    Ok(())
}

/// The keywords the template does not use, on a schema that uses them all.
fn features(launch: &Path, sheet: &str) -> Result<GateReport, GateError> {
    let _ = fs::write(launch.join("features.csv"), sheet);
    prepare_samplesheet_gate(
        &GateRequest::new(template(), "features.csv")
            .launch_dir(launch)
            .schema(fixture("schema_features.json")),
    )
}

#[test]
fn path_formats_globs_exists_false_and_dependent_required() -> TestResult {
    let launch = launch_dir()?;
    fs::create_dir(launch.path().join("out"))?;
    fs::write(launch.path().join("genome.fa"), b">c\nA\n")?;
    let good = "id,reads,outdir,scratch,batch,group,ref\n\
                a,reads/S1_*.fastq.gz,out,tmp_a,1,control,genome.fa\n\
                b,\"reads/S2_R1.{fq,fastq.gz}\",out,,,,s3://bucket/genome.fa\n";
    let report = features(launch.path(), good)?;
    assert_eq!(
        lines(&report),
        [
            "passed",
            "warning: 1 remote path(s) (s3://, gs://, az://, http(s)://) not checked: the gate has no network"
        ]
    );
    let bad = "id,reads,outdir,scratch,batch,group,ref\n\
               a,reads/none_*.fastq.gz,genome.fa,out,1,,reads\n\
               a,reads/*.fq,missing_dir,,x,other,\n\
               c,reads/*.fq,out,reads/*,,,\n";
    let report = features(launch.path(), bad)?;
    let base = base(launch.path());
    assert_eq!(
        lines(&report),
        [
            "failed",
            &format!(
                "-> Entry 1: Error for field 'reads' (reads/none_*.fastq.gz): No files were found using the glob pattern 'reads/none_*.fastq.gz'{base} (reads must match at least one file)"
            ),
            &format!(
                "-> Entry 1: Error for field 'reads' (reads/none_*.fastq.gz): the file or directory 'reads/none_*.fastq.gz' does not exist{base} (reads must match at least one file)"
            ),
            "-> Entry 1: Error for field 'outdir' (genome.fa): 'genome.fa' is not a directory, but a file",
            "-> Entry 1: Error for field 'scratch' (out): the file or directory 'out' should not exist",
            "-> Entry 1: Error for field 'ref' (reads): 'reads' is not a file, but a directory",
            "-> Entry 1: Object does not have some of the required properties [group]",
            &format!(
                "-> Entry 2: Error for field 'outdir' (missing_dir): the file or directory 'missing_dir' does not exist{base}"
            ),
            "-> Entry 2: Error for field 'batch' (x): Value is [string] but should be [integer]",
            "-> Entry 2: Error for field 'group' (other): Expected any of [control, treated]",
            "-> Entry 2: Detected duplicate entries: [id:a]",
            "-> Entry 3: Error for field 'scratch' (reads/*): 'reads/*' is not a path, but a file path pattern",
            "-> Entry 3: Error for field 'scratch' (reads/*): the file or directory 'reads/*' should not exist",
        ]
    );
    Ok(())
}

#[test]
fn any_of_lists_each_branch_then_itself_and_required_comes_last() -> TestResult {
    let launch = launch_dir()?;
    fs::write(
        launch.path().join("anyof.csv"),
        "sample,fastq_1,fastq_2,strandedness\n,a.fastq.gz,a.fasta,weird\nb 2,b.fastq.gz,,forward\n",
    )?;
    let report = prepare_samplesheet_gate(
        &GateRequest::new(template(), "anyof.csv")
            .launch_dir(launch.path())
            .schema(fixture("schema_anyof.json")),
    )?;
    assert_eq!(
        lines(&report),
        [
            "failed",
            "-> Entry 1: Error for field 'fastq_2' (a.fasta): \"a.fasta\" does not match regular expression ^\\S+\\.f(ast)?q\\.gz$",
            "-> Entry 1: Error for field 'fastq_2' (a.fasta): \"a.fasta\" is longer than 0 characters",
            "-> Entry 1: Error for field 'fastq_2' (a.fasta): Value does not match against any of the schemas (fastq_2 is a .fq.gz/.fastq.gz file or empty)",
            "-> Entry 1: Error for field 'strandedness' (weird): Expected any of [forward, reverse, unstranded] (strandedness is forward, reverse or unstranded)",
            "-> Entry 1: Missing required field(s): sample",
            "-> Entry 2: Error for field 'sample' (b 2): \"b 2\" does not match regular expression ^\\S+$ (no spaces in sample names)",
        ]
    );
    Ok(())
}

#[test]
fn a_delimited_sheet_for_a_schema_with_list_fields_is_refused() -> TestResult {
    let launch = launch_dir()?;
    let schema = launch.path().join("arrays.json");
    fs::write(
        &schema,
        br#"{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "array",
            "items": {"type": "object", "properties": {"sample": {"type": "string"},
            "lanes": {"type": "array", "items": {"type": "integer"}}}}}"#,
    )?;
    fs::write(launch.path().join("lanes.csv"), b"sample,lanes\nS1,1\n")?;
    fs::write(
        launch.path().join("lanes.json"),
        br#"[{"sample": "S1", "lanes": [1, "two"]}]"#,
    )?;
    let request = |sheet: &str| {
        GateRequest::new(template(), sheet)
            .launch_dir(launch.path())
            .schema(&schema)
    };
    let err = prepare_samplesheet_gate(&request("lanes.csv"));
    match err {
        Err(e @ GateError::NestedFieldInDelimited { .. }) => assert_eq!(
            e.to_string(),
            "Using \"type\": \"array\" or \"type\": \"object\" in schema with a \".csv\" samplesheet is not supported (field `lanes`); use a JSON or YAML samplesheet"
        ),
        other => return Err(format!("expected NestedFieldInDelimited, got {other:?}").into()),
    }
    let report = prepare_samplesheet_gate(&request("lanes.json"))?;
    assert_eq!(
        lines(&report),
        [
            "failed",
            "-> Entry 1: Error for field 'lanes/1' (two): Value is [string] but should be [integer]"
        ]
    );
    Ok(())
}

#[test]
fn a_schema_nf_schema_would_not_load_is_an_error() -> TestResult {
    let launch = launch_dir()?;
    fs::copy(fixture("good.csv"), launch.path().join("good.csv"))?;
    let cases: [(&str, &[u8]); 3] = [
        (
            "draft7.json",
            br#"{"$schema": "http://json-schema.org/draft-07/schema", "items": {}}"#,
        ),
        (
            "params.json",
            br#"{"$schema": "https://json-schema.org/draft/2020-12/schema", "properties": {}}"#,
        ),
        ("broken.json", b"{"),
    ];
    for (name, text) in cases {
        let schema = launch.path().join(name);
        fs::write(&schema, text)?;
        let result = prepare_samplesheet_gate(
            &GateRequest::new(template(), "good.csv")
                .launch_dir(launch.path())
                .schema(&schema),
        );
        let ok = matches!(
            (&result, name),
            (Err(GateError::SchemaDraft { .. }), "draft7.json")
                | (Err(GateError::SchemaShape { .. }), "params.json")
                | (Err(GateError::SchemaJson { .. }), "broken.json")
        );
        assert!(ok, "{name}: {result:?}");
    }
    Ok(())
}

#[test]
fn a_missing_sheet_or_a_directory_is_an_error() -> TestResult {
    let launch = launch_dir()?;
    let missing = prepare_samplesheet_gate(
        &GateRequest::new(template(), "nope.csv").launch_dir(launch.path()),
    );
    assert!(matches!(missing, Err(GateError::Io { .. })), "{missing:?}");
    let dir =
        prepare_samplesheet_gate(&GateRequest::new(template(), "reads").launch_dir(launch.path()));
    assert!(matches!(dir, Err(GateError::NotAFile { .. })), "{dir:?}");
    Ok(())
}

/// Nine levels of nine aliases: a billion strings if a reader expanded them all.
const BILLION_LAUGHS: &[u8] =
    b"a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
";

#[test]
fn malformed_json_and_yaml_are_one_line_errors() -> TestResult {
    let launch = launch_dir()?;
    let deep = "[".repeat(100_000).into_bytes();
    for (name, text) in [
        ("broken.json", &b"[{\"sample\": }]"[..]),
        ("broken.yaml", b"- sample: [unclosed\n"),
        ("map.json", b"{\"sample\": \"S1\"}"),
        ("deep.json", &deep),
        ("laughs.yaml", BILLION_LAUGHS),
    ] {
        let err = match gate_text(launch.path(), name, text) {
            Err(e) => e.to_string(),
            Ok(report) => {
                return Err(format!("{name} passed the reader: {}", report.render()).into());
            }
        };
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
    }
    Ok(())
}
