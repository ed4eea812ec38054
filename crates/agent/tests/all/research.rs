//! The research classifier: positives by each rule, negatives that share words with research.

use codaris_agent::{ResearchRule, classify_research};
use pretty_assertions::assert_eq;

fn rule(message: &str) -> Option<ResearchRule> {
    classify_research(message).map(|m| m.rule)
}

#[test]
fn research_messages_are_research() {
    let cases = [
        (
            "What is known about TP53 mutations in AML?",
            ResearchRule::Phrase,
        ),
        ("what's known about m6A in neurons", ResearchRule::Phrase),
        (
            "what do we know about clonal hematopoiesis",
            ResearchRule::Phrase,
        ),
        (
            "summarise the literature on batch correction",
            ResearchRule::Phrase,
        ),
        (
            "state of the art for scRNA-seq doublet detection",
            ResearchRule::Phrase,
        ),
        (
            "can you look up the reference for salmon",
            ResearchRule::Phrase,
        ),
        (
            "are there public datasets of mouse liver scRNA-seq?",
            ResearchRule::Phrase,
        ),
        ("Is GSE123456 paired-end?", ResearchRule::Accession),
        ("pull SRR1234567 and PRJNA765432", ResearchRule::Accession),
        ("metadata of E-MTAB-1234", ResearchRule::Accession),
        ("search PubMed for DESeq2 benchmarks", ResearchRule::Source),
        ("any bioRxiv preprint on this?", ResearchRule::Source),
        ("which GEO series have ATAC for liver", ResearchRule::Source),
        (
            "Find papers on single-cell ATAC normalisation",
            ResearchRule::Lookup,
        ),
        (
            "search for studies comparing STAR and HISAT2",
            ResearchRule::Lookup,
        ),
        (
            "any datasets with paired tumour-normal WGS?",
            ResearchRule::Lookup,
        ),
        (
            "recommend publications about UMI deduplication",
            ResearchRule::Lookup,
        ),
    ];
    for (message, expected) in cases {
        assert_eq!(rule(message), Some(expected), "{message}");
    }
}

#[test]
fn everyday_pipeline_work_is_not_research() {
    for message in [
        "review my pipeline",
        "fix the samplesheet in data/datasets.csv",
        "run the pipeline on the test dataset",
        "search for the bug in main.nf",
        "lint nextflow",
        "find the file papers.txt",
        "the geo directory is empty",
        "look at main.nf",
        "fetch test data for rnaseq",
        "find the dataset folder in this repo",
        "write a process that counts reads",
        "why did my run fail?",
        "open https://pubmed.ncbi.nlm.nih.gov/123456/",
        "",
    ] {
        assert_eq!(classify_research(message), None, "{message}");
    }
}

#[test]
fn the_match_names_its_evidence() {
    let m = classify_research("Find papers on STAR").unwrap();
    assert_eq!(m.evidence, "find … papers");
    let m = classify_research("Is GSE123456, paired?").unwrap();
    assert_eq!(m.evidence, "GSE123456");
}
