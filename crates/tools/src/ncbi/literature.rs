//! PubMed as `web_research`'s literature: a biomedical question's best articles, each with its
//! abstract (or title) as the passage a claim can quote.

use codaris_ncbi::{Esearch, Eutils};

use crate::web::{Article, Literature};

/// `web_research`'s [`Literature`] on the daemon's one NCBI client (so its searches share the
/// rate limit with `search_pubmed`'s).
#[derive(Debug, Clone)]
pub struct PubmedLiterature {
    client: Eutils,
}

impl PubmedLiterature {
    pub fn new(client: Eutils) -> Self {
        Self { client }
    }
}

#[async_trait::async_trait]
impl Literature for PubmedLiterature {
    async fn search(&self, query: &str, max: usize) -> Result<Vec<Article>, String> {
        let retmax = u32::try_from(max.clamp(1, 20)).unwrap_or(5);
        let found = self
            .client
            .esearch(
                &Esearch::new("pubmed", query)
                    .retmax(retmax)
                    .sort("relevance"),
            )
            .await
            .map_err(|err| err.to_string())?;
        if found.ids.is_empty() {
            return Ok(Vec::new());
        }
        let summaries = self
            .client
            .pubmed_summaries(&found.ids)
            .await
            .map_err(|err| err.to_string())?;
        // An article without its abstract is still a source (its title); a failed abstract
        // fetch does not lose the articles already found.
        let abstracts = self
            .client
            .pubmed_abstracts(&found.ids)
            .await
            .unwrap_or_default();
        Ok(summaries
            .into_iter()
            .map(|summary| Article {
                url: format!("https://pubmed.ncbi.nlm.nih.gov/{}/", summary.pmid),
                passage: abstracts
                    .get(&summary.pmid)
                    .filter(|text| !text.trim().is_empty())
                    .cloned()
                    .unwrap_or_else(|| summary.title.clone()),
                journal: (!summary.journal.is_empty()).then(|| summary.journal.clone()),
                year: summary.year.clone(),
                title: summary.title,
            })
            .collect())
    }
}
