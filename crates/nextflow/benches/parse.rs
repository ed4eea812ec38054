//! `Pipeline::load` on the largest real pipeline, nf-core/sarek 3.10.0 (199 `.nf` files, 51
//! configs), and on rnaseq 3.24.0: what `review_pipeline` and `debug_last_run` pay per call to
//! read a pipeline whole.

use std::path::Path;

use codaris_nextflow::parse::Pipeline;
use criterion::{Criterion, criterion_group, criterion_main};

fn bench_load(c: &mut Criterion) {
    let real =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/nextflow/real-pipelines");
    for name in ["sarek-3.10.0", "rnaseq-3.24.0"] {
        let dir = real.join(name);
        c.bench_function(&format!("pipeline_load_{name}"), |b| {
            b.iter(|| Pipeline::load(&dir).map(|p| p.files.len()).ok())
        });
    }
}

criterion_group!(benches, bench_load);
criterion_main!(benches);
