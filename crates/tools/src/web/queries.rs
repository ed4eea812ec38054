//! What `web_research` asks and how much: the depth's budget, the search queries made from the
//! question (the question, its keywords, site hints, a quoted phrase, variants), and whether the
//! question is biomedical, in which case the literature is searched too.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::Value;

use super::passages::{is_stopword, stem};
use crate::tool::ToolError;

/// How far a research call goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Depth {
    Quick,
    Standard,
    Deep,
}

impl Depth {
    /// `depth` from the arguments: `standard` when absent.
    pub(crate) fn from_args(args: &Value) -> Result<Self, ToolError> {
        let bad = || ToolError::model("`depth` must be `quick`, `standard` or `deep`");
        match args.get("depth") {
            None | Some(Value::Null) => Ok(Self::Standard),
            Some(Value::String(text)) => match text.trim().to_ascii_lowercase().as_str() {
                "quick" => Ok(Self::Quick),
                "standard" => Ok(Self::Standard),
                "deep" => Ok(Self::Deep),
                _ => Err(bad()),
            },
            Some(_) => Err(bad()),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Quick => "quick",
            Self::Standard => "standard",
            Self::Deep => "deep",
        }
    }

    /// Search queries made at most.
    pub(crate) fn queries(self) -> usize {
        match self {
            Self::Quick => 2,
            Self::Standard => 3,
            Self::Deep => 5,
        }
    }

    /// Pages read (besides the articles).
    pub(crate) fn pages(self) -> usize {
        match self {
            Self::Quick => 2,
            Self::Standard => 4,
            Self::Deep => 8,
        }
    }

    /// Literature articles asked for, when the question is biomedical.
    pub(crate) fn articles(self) -> usize {
        match self {
            Self::Quick => 2,
            Self::Standard => 3,
            Self::Deep => 5,
        }
    }

    /// Claims in the brief, at most, and from one source.
    pub(crate) fn claims(self) -> (usize, usize) {
        match self {
            Self::Quick => (4, 2),
            Self::Standard => (6, 2),
            Self::Deep => (10, 3),
        }
    }

    /// The whole call's time: searching, the literature and every page.
    pub(crate) fn budget(self) -> Duration {
        Duration::from_secs(match self {
            Self::Quick => 30,
            Self::Standard => 45,
            Self::Deep => 75,
        })
    }
}

/// Documentation sites a question mentions by their project's name: a `site:` query there finds
/// the reference page a general query buries.
const SITES: &[(&str, &str)] = &[
    ("nf-core", "nf-co.re"),
    ("nextflow", "nextflow.io"),
    ("seqera", "docs.seqera.io"),
    ("bioconductor", "bioconductor.org"),
    ("snakemake", "snakemake.readthedocs.io"),
    ("galaxy", "galaxyproject.org"),
    ("bioconda", "bioconda.github.io"),
];

/// Words that make a question a how-to or reference question.
const DOC_WORDS: &[&str] = &[
    "how",
    "configure",
    "config",
    "configuration",
    "option",
    "options",
    "parameter",
    "parameters",
    "param",
    "params",
    "install",
    "setup",
    "set",
    "flag",
    "error",
    "directive",
    "command",
    "usage",
    "syntax",
    "docs",
    "documentation",
    "api",
    "example",
];

/// A query is cut to this many characters: engines ignore or refuse longer ones.
const MAX_QUERY_CHARS: usize = 200;

/// The words of the question as written, surrounding punctuation taken off (inner hyphens and
/// dots stay: `nf-core`, `v23.10`).
fn words(question: &str) -> Vec<&str> {
    question
        .split_whitespace()
        .map(|word| word.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|word| !word.is_empty())
        .collect()
}

/// The question without its stopwords: what a search box is best given.
pub(crate) fn keywords(question: &str) -> String {
    let words = words(question);
    let kept: Vec<&str> = words
        .iter()
        .copied()
        .filter(|word| !is_stopword(&word.to_lowercase()))
        .collect();
    cap(&if kept.is_empty() { words } else { kept }.join(" "))
}

/// The search queries for `question`, distinct, at most the depth's number: the question itself,
/// its keywords, a `site:` query for each documentation site it names, its key phrase quoted,
/// then variants leaning to reference pages (or studies, for a biomedical question).
pub(crate) fn plan(question: &str, depth: Depth) -> Vec<String> {
    let question = cap(&question.split_whitespace().collect::<Vec<_>>().join(" "));
    let keywords = keywords(&question);
    let lower = question.to_lowercase();
    let mut candidates = vec![question.clone(), keywords.clone()];
    for (mention, site) in SITES {
        if lower.contains(mention) {
            candidates.push(format!("{keywords} site:{site}"));
        }
    }
    if let Some(phrase) = key_phrase(&question) {
        let rest: Vec<&str> = keywords
            .split(' ')
            .filter(|word| !phrase.split(' ').any(|p| p == *word))
            .collect();
        candidates.push(cap(format!("\"{phrase}\" {}", rest.join(" ")).trim_end()));
    }
    let lean = if is_biomedical(&question) {
        ["study", "review"]
    } else if words(&question)
        .iter()
        .any(|w| DOC_WORDS.contains(&w.to_lowercase().as_str()))
    {
        ["documentation", "example"]
    } else {
        ["overview", "guide"]
    };
    for word in lean {
        candidates.push(format!("{keywords} {word}"));
    }
    let mut seen = HashSet::new();
    candidates
        .into_iter()
        .filter(|query| !query.is_empty() && seen.insert(query.to_lowercase()))
        .take(depth.queries())
        .collect()
}

/// The longest run of consecutive content words (two at least), its last three when longer:
/// in an English noun phrase the head comes last.
fn key_phrase(question: &str) -> Option<String> {
    let mut best: Vec<&str> = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    for word in question.split_whitespace() {
        let bare = word.trim_matches(|c: char| !c.is_alphanumeric());
        let ends_clause = word.ends_with([',', ';', ':', '.', '?', '!']);
        if bare.is_empty() || is_stopword(&bare.to_lowercase()) {
            run.clear();
            continue;
        }
        run.push(bare);
        if run.len() > best.len() {
            best = run.clone();
        }
        if ends_clause {
            run.clear();
        }
    }
    if best.len() < 2 {
        return None;
    }
    let from = best.len().saturating_sub(3);
    Some(best[from..].join(" "))
}

fn cap(text: &str) -> String {
    match text.char_indices().nth(MAX_QUERY_CHARS) {
        Some((end, _)) => text[..end].trim_end().to_owned(),
        None => text.to_owned(),
    }
}

/// Words that are about biology or medicine whatever the context.
const STRONG: &[&str] = &[
    "gene",
    "genes",
    "genetic",
    "genetics",
    "protein",
    "proteins",
    "rna",
    "dna",
    "mrna",
    "mirna",
    "lncrna",
    "rnaseq",
    "scrnaseq",
    "chipseq",
    "atacseq",
    "cancer",
    "cancers",
    "tumor",
    "tumors",
    "tumour",
    "tumours",
    "patient",
    "patients",
    "disease",
    "diseases",
    "clinical",
    "sequencing",
    "crispr",
    "enzyme",
    "enzymes",
    "receptor",
    "receptors",
    "pathogen",
    "pathogens",
    "microbiome",
    "vaccine",
    "vaccines",
    "syndrome",
    "biomarker",
    "biomarkers",
    "chromatin",
    "methylation",
    "allele",
    "alleles",
    "snp",
    "snps",
    "exome",
    "phenotype",
    "genotype",
    "genotypes",
    "bacteria",
    "bacterial",
    "infection",
    "infections",
    "therapy",
    "tissue",
    "tissues",
    "metastasis",
    "leukemia",
    "lymphoma",
    "carcinoma",
    "diabetes",
    "alzheimer",
    "covid",
    "sars",
    "hiv",
    "antibiotic",
    "antibiotics",
    "transcription",
    "organism",
    "organisms",
    "neuron",
    "neurons",
    "mitochondria",
    "mitochondrial",
    "epitope",
];

/// Stems that are biomedical in any form (`genome`, `genomics`, `transcriptomic`, …).
const STRONG_PREFIXES: &[&str] = &[
    "genom",
    "transcriptom",
    "proteom",
    "metabolom",
    "immun",
    "oncolog",
    "epigen",
    "chromosom",
    "antibod",
    "diagnos",
    "pharmac",
    "patholog",
];

/// Words that are biomedical only in company: `cells` of a spreadsheet, a `mutation` in
/// GraphQL, a computer `virus`, a `mouse`.
const WEAK: &[&str] = &[
    "cell",
    "cells",
    "mutation",
    "mutations",
    "variant",
    "variants",
    "expression",
    "express",
    "expressed",
    "virus",
    "viruses",
    "mouse",
    "mice",
    "drug",
    "drugs",
    "trial",
    "trials",
    "cohort",
    "human",
    "humans",
    "species",
    "sample",
    "samples",
    "reads",
    "assembly",
    "alignment",
    "treatment",
    "blood",
    "brain",
    "liver",
    "plasma",
    "strain",
    "strains",
];

/// Whether `question` is about biology or medicine: one unambiguous word, or two that are only
/// suggestive on their own.
pub(crate) fn is_biomedical(question: &str) -> bool {
    let lower = question.to_lowercase();
    // "RNA-seq" and "single-cell" as one word each, as well as their parts.
    let joined = lower.replace('-', "");
    let mut words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words.extend(
        joined
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty()),
    );
    let strong = words.iter().any(|word| {
        STRONG.contains(word)
            || STRONG_PREFIXES
                .iter()
                .any(|prefix| word.starts_with(prefix))
    });
    let weak: HashSet<String> = words
        .iter()
        .copied()
        .filter(|word| WEAK.contains(word))
        .map(stem)
        .collect();
    strong || weak.len() >= 2
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    const QUESTION: &str = "How does Nextflow resume cached tasks after a failure?";

    #[test]
    fn the_queries_grow_with_the_depth() {
        assert_eq!(
            plan(QUESTION, Depth::Quick),
            vec![QUESTION, "Nextflow resume cached tasks failure"]
        );
        assert_eq!(
            plan(QUESTION, Depth::Standard)[2],
            "Nextflow resume cached tasks failure site:nextflow.io"
        );
        assert_eq!(
            plan(QUESTION, Depth::Deep),
            vec![
                QUESTION,
                "Nextflow resume cached tasks failure",
                "Nextflow resume cached tasks failure site:nextflow.io",
                "\"resume cached tasks\" Nextflow failure",
                "Nextflow resume cached tasks failure documentation",
            ]
        );
    }

    #[test]
    fn queries_are_distinct_and_capped() {
        // One keyword: the keyword form is the question again, and there is no phrase.
        assert_eq!(
            plan("snakemake", Depth::Deep),
            vec![
                "snakemake",
                "snakemake site:snakemake.readthedocs.io",
                "snakemake overview",
                "snakemake guide"
            ]
        );
        let long = "word ".repeat(500);
        assert!(
            plan(&long, Depth::Deep)
                .iter()
                .all(|q| q.chars().count() <= MAX_QUERY_CHARS + 20)
        );
        assert_eq!(
            plan("nf-core   rnaseq\nsalmon index, star", Depth::Quick)[0],
            "nf-core rnaseq salmon index, star"
        );
        // A comma ends a phrase; a lone word is no phrase.
        assert_eq!(
            key_phrase("Which aligner, STAR or HISAT2, is faster?"),
            None
        );
        assert_eq!(
            key_phrase("nf-core rnaseq salmon index, quickly").as_deref(),
            Some("rnaseq salmon index")
        );
    }

    #[test]
    fn biomedical_questions_are_told_from_the_rest() {
        for question in [
            "What mutations in BRCA1 raise breast cancer risk?",
            "single-cell RNA-seq clustering methods",
            "Which cells express CD19?",
            "How common is the disease in patients over 60?",
            "genomic variant calling with GATK",
            "scRNA-seq doublet detection",
            "mouse liver samples",
        ] {
            assert!(is_biomedical(question), "{question}");
        }
        for question in [
            "How do I merge cells in Excel?",
            "GraphQL mutation example",
            "How does Nextflow resume cached tasks after a failure?",
            "remove a computer virus",
            "wireless mouse not working",
            "",
        ] {
            assert!(!is_biomedical(question), "{question}");
        }
    }

    #[test]
    fn a_biomedical_question_leans_to_studies() {
        let plan = plan("BRCA1 mutations breast cancer risk", Depth::Deep);
        assert_eq!(
            plan.last().map(String::as_str),
            Some("BRCA1 mutations breast cancer risk review")
        );
    }

    #[test]
    fn depth_is_read_strictly() {
        assert_eq!(Depth::from_args(&json!({})).ok(), Some(Depth::Standard));
        assert_eq!(
            Depth::from_args(&json!({"depth": " Deep "})).ok(),
            Some(Depth::Deep)
        );
        for bad in [json!("fast"), json!(3), json!(["quick"]), json!("")] {
            assert!(Depth::from_args(&json!({ "depth": bad })).is_err(), "{bad}");
        }
    }
}
