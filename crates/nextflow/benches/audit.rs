//! The compliance audit over the real nf-core template (target: at most 50 ms) and over
//! nf-core/sarek 3.10.0, the largest real pipeline in the fixtures (target: at most 500 ms),
//! reading the files included (what `run_compliance_autofix` with `report_only` does per call).

use std::path::Path;

use codaris_nextflow::audit::audit;
use codaris_nextflow::rules::{RuleSet, SourceTree};
use criterion::{Criterion, criterion_group, criterion_main};

fn bench_audit(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nfcore-template");
    let rules = match RuleSet::builtin() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("built-in rules: {e}");
            return;
        }
    };
    c.bench_function("audit_nfcore_template_load_and_check", |b| {
        b.iter(|| {
            let p = SourceTree::load(&root).ok();
            p.map(|p| audit(&p, &rules, None).map(|a| a.findings.len()).ok())
        })
    });
    if let Ok(p) = SourceTree::load(&root) {
        c.bench_function("audit_nfcore_template_check_only", |b| {
            b.iter(|| audit(&p, &rules, None).map(|a| a.findings.len()).ok())
        });
    }
    let sarek = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/nextflow/real-pipelines/sarek-3.10.0");
    let mut group = c.benchmark_group("sarek");
    // 713 files, 5.4 MB: fewer, longer samples than criterion's default hundred.
    group.sample_size(20);
    group.bench_function("audit_sarek_load_and_check", |b| {
        b.iter(|| {
            let p = SourceTree::load(&sarek).ok();
            p.map(|p| audit(&p, &rules, None).map(|a| a.findings.len()).ok())
        })
    });
    if let Ok(p) = SourceTree::load(&sarek) {
        group.bench_function("audit_sarek_check_only", |b| {
            b.iter(|| audit(&p, &rules, None).map(|a| a.findings.len()).ok())
        });
    }
    group.finish();
}

criterion_group!(benches, bench_audit);
criterion_main!(benches);
