//! The compliance audit over the real nf-core template (target: at most 50 ms), reading the
//! files included (what `run_compliance_autofix` with `report_only` does per call).

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
}

criterion_group!(benches, bench_audit);
criterion_main!(benches);
