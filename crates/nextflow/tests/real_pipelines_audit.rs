//! dump (temporary)
use std::path::Path;
use codaris_nextflow::audit::audit;
use codaris_nextflow::rules::{RuleSet, SourceTree};

#[test]
fn dump() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/nextflow/real-pipelines");
    let rules = RuleSet::builtin().unwrap();
    for p in ["sarek-3.10.0", "rnaseq-3.24.0", "fetchngs-1.12.0", "demo-1.0.2", "rnaseq-nf"] {
        let t = SourceTree::load(&base.join(p)).unwrap();
        let a = audit(&t, &rules, None).unwrap();
        std::fs::write(format!("/tmp/auditdump/{p}.txt"), format!("{}\n{}", a.summary(), a.render())).unwrap();
    }
}
