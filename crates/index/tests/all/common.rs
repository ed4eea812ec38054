//! Shared fixtures: the evaluation catalogue and small hand-made indexes.

use codaris_index::{Entry, Index, Kind, QueryLine, parse_catalog, parse_queries};

pub const CATALOG: &str = include_str!("../../eval/catalog.jsonl");
pub const QUERIES: &str = include_str!("../../eval/queries.jsonl");
pub const HOLDOUT: &str = include_str!("../../eval/holdout.jsonl");
/// The unseen set (eval/unseen/README.md): catalogues the ranking was never tuned on.
pub const UNSEEN_CATALOG: &str = include_str!("../../eval/unseen/catalog.jsonl");
pub const UNSEEN_DEV: &str = include_str!("../../eval/unseen/dev.jsonl");
pub const UNSEEN_HELD_OUT: &str = include_str!("../../eval/unseen/queries.jsonl");

pub fn catalog() -> Vec<Entry> {
    parse_catalog(CATALOG).expect("the evaluation catalogue parses")
}

pub fn queries(text: &str) -> Vec<QueryLine> {
    parse_queries(text).expect("the evaluation queries parse")
}

pub fn catalog_index() -> Index {
    Index::build(catalog())
}

/// A small index with one entry of each interesting shape.
pub fn small() -> Vec<Entry> {
    let mut lint = Entry::new(
        "seqera__lint_nextflow",
        Kind::Mcp,
        "Lint a Nextflow pipeline with the Seqera language server and report problems.",
    );
    lint.server = Some("seqera".into());
    let mut autofix = Entry::new(
        "run_compliance_autofix",
        Kind::Core,
        "Audit a pipeline against the compliance rules and fix the violations.",
    );
    autofix.slash = vec!["/remediate".into(), "/autofix".into()];
    let mut skill = Entry::new(
        "nextflow-dsl2",
        Kind::Skill,
        "Writing Nextflow DSL2: processes, channels and operators.",
    );
    skill.path = Some("skills/nextflow-dsl2/SKILL.md".into());
    let mut reference = Entry::new(
        "nf-core-guidelines",
        Kind::Reference,
        "The nf-core pipeline guidelines every pipeline must follow.",
    );
    reference.path = Some("skills/references/nf-core-guidelines.md".into());
    let mut off = Entry::new(
        "seqera__build_container_image",
        Kind::Mcp,
        "Build a container image for a pipeline tool on Seqera Wave.",
    );
    off.server = Some("seqera".into());
    off.enabled = false;
    vec![
        Entry::new(
            "lint_pipeline",
            Kind::Core,
            "Run `nf-core pipelines lint` and return the findings.",
        ),
        lint,
        autofix,
        skill,
        reference,
        off,
        Entry::new(
            "read_file",
            Kind::Core,
            "Read a text file or list a directory.",
        ),
        Entry::new(
            "review_pipeline",
            Kind::Core,
            "Review a Nextflow pipeline and report findings.",
        ),
    ]
}
