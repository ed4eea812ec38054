//! The literature `web_research` consults for a biomedical question. The tool knows only this
//! trait; the daemon hands it a client (PubMed through NCBI E-utilities) or none.

/// A literature search: PubMed, or a stand-in in tests.
#[async_trait::async_trait]
pub trait Literature: Send + Sync + std::fmt::Debug {
    /// Up to `max` articles for `query`, best first.
    async fn search(&self, query: &str, max: usize) -> Result<Vec<Article>, String>;
}

/// One article as the brief cites it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Article {
    pub title: String,
    /// Where a reader finds it, e.g. `https://pubmed.ncbi.nlm.nih.gov/<PMID>/`.
    pub url: String,
    pub journal: Option<String>,
    pub year: Option<String>,
    /// The abstract, or its best part: the text the brief quotes from.
    pub passage: String,
}
