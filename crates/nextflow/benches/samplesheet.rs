//! The samplesheet gate over a 10,000-row sheet against the nf-core template's schema, every
//! row naming two existing FASTQ files (20,000 distinct paths to look at), read from disk
//! each time as the tool does. Target: at most 100 ms.

#![expect(clippy::unwrap_used, reason = "a bench fails loudly on a bad fixture")]

use std::fmt::Write;
use std::hint::black_box;
use std::path::Path;

use codaris_nextflow::samplesheet::{GateRequest, prepare_samplesheet_gate};
use criterion::Criterion;

const ROWS: usize = 10_000;

fn main() {
    let template = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nfcore-template");
    let launch = tempfile::tempdir().unwrap();
    let reads = launch.path().join("reads");
    std::fs::create_dir(&reads).unwrap();
    let mut sheet = String::from("sample,fastq_1,fastq_2\n");
    for i in 0..ROWS {
        for end in [1, 2] {
            std::fs::write(reads.join(format!("S{i}_R{end}.fastq.gz")), b"").unwrap();
        }
        writeln!(
            sheet,
            "SAMPLE_{i},reads/S{i}_R1.fastq.gz,reads/S{i}_R2.fastq.gz"
        )
        .unwrap();
    }
    std::fs::write(launch.path().join("samplesheet.csv"), &sheet).unwrap();
    let request = GateRequest::new(&template, "samplesheet.csv").launch_dir(launch.path());
    let report = prepare_samplesheet_gate(&request).unwrap();
    assert!(report.passed(), "{}", report.render());
    assert_eq!(report.rows, ROWS);

    let mut c = Criterion::default().configure_from_args();
    c.bench_function("gate/csv_10000_rows", |b| {
        b.iter(|| black_box(prepare_samplesheet_gate(black_box(&request)).unwrap()));
    });
    // A failing sheet costs more: every row yields an error to word and sort.
    let bad = sheet.replace("SAMPLE_", "SAMPLE ");
    std::fs::write(launch.path().join("bad.csv"), &bad).unwrap();
    let bad_request = GateRequest::new(&template, "bad.csv").launch_dir(launch.path());
    let report = prepare_samplesheet_gate(&bad_request).unwrap();
    assert_eq!(report.errors.len(), ROWS);
    c.bench_function("gate/csv_10000_rows_all_failing", |b| {
        b.iter(|| black_box(prepare_samplesheet_gate(black_box(&bad_request)).unwrap()));
    });
    c.final_summary();
}
