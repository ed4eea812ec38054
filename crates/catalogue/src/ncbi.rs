//! The literature and archive tools on NCBI's E-utilities: PubMed articles, and GEO series with their SRA
//! experiments and runs.

use serde_json::{Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;
use crate::limits::{GEO_SRA_MAX_RESULTS, PUBMED_MAX_RESULTS};

pub const SEARCH_PUBMED: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::SearchPubmed,
    "Search PubMed (NCBI E-utilities) and list the matching articles: title, authors, \
     journal, year, DOI, PMID, PubMed Central id and PubMed link, with each abstract when \
     abstracts is true. The query takes PubMed syntax: field tags such as [Title/Abstract], \
     [Author] or [MeSH Terms], and AND, OR, NOT. A search with no hits says how PubMed read \
     the query.",
    search_pubmed,
);

fn search_pubmed() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "PubMed query, e.g. single-cell RNA-seq[Title/Abstract] AND airway."},
            "max_results": {"type": "integer", "minimum": 1, "maximum": PUBMED_MAX_RESULTS, "description": "Articles returned at most (default 10)."},
            "sort": {"type": "string", "enum": ["relevance", "pub_date"], "description": "Best match first (default) or newest first."},
            "mindate": {"type": "string", "description": "Earliest publication date, YYYY, YYYY/MM or YYYY/MM/DD."},
            "maxdate": {"type": "string", "description": "Latest publication date, YYYY, YYYY/MM or YYYY/MM/DD."},
            "abstracts": {"type": "boolean", "description": "Include each article's abstract (default false)."}
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

pub const SEARCH_GEO_SRA: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::SearchGeoSra,
    "Find public sequencing datasets on NCBI. db gds (default) lists GEO series: accession, \
     title, summary, organism, platform, sample count and the linked SRA study, then that \
     study's SRA experiments and runs. db sra lists SRA experiments directly: run accessions, \
     layout, strategy, platform, bases, BioProject and BioSample. Ends with the run accessions \
     one per line, ready for an nf-core/fetchngs ids file. organism and strategy narrow the \
     search (strategy filters SRA experiments, also those linked from GEO).",
    search_geo_sra,
);

fn search_geo_sra() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words or accessions to search for, e.g. airway smoking single-cell."},
            "db": {"type": "string", "enum": ["gds", "sra"], "description": "gds: GEO series (default); sra: SRA experiments."},
            "organism": {"type": "string", "description": "Scientific name, e.g. Homo sapiens."},
            "strategy": {"type": "string", "description": "SRA library strategy, e.g. RNA-Seq, WGS, ChIP-Seq, ATAC-seq."},
            "max_results": {"type": "integer", "minimum": 1, "maximum": GEO_SRA_MAX_RESULTS, "description": "GEO series or SRA experiments listed at most (default 10)."}
        },
        "required": ["query"],
        "additionalProperties": false
    })
}
