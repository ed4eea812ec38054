//! `search_pubmed`: esearch for the PMIDs, esummary for their records, and efetch for the
//! abstracts when asked. The first line is the contract:
//! `N PubMed articles for "query" (of TOTAL)`, or `No PubMed articles for "query"`.

use std::collections::HashMap;

use codaris_catalogue::limits::PUBMED_MAX_RESULTS;
use codaris_ncbi::{Esearch, Eutils, PubmedSummary, SearchResult};
use serde_json::Value;

use super::{choice, date, explain, flat, ncbi_error, object, plural, query};
use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};
use crate::web::common;

/// Authors named before "et al.".
const AUTHORS_SHOWN: usize = 3;

#[derive(Debug, Clone)]
pub struct SearchPubmed {
    client: Eutils,
}

impl SearchPubmed {
    pub fn new(client: Eutils) -> Self {
        Self { client }
    }
}

#[async_trait::async_trait]
impl Tool for SearchPubmed {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::SEARCH_PUBMED
    }

    async fn call(&self, _ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        object(self.name(), args)?;
        let query = query(args)?;
        let max_results = common::count(args, "max_results", 10, PUBMED_MAX_RESULTS)?;
        let sort = choice(args, "sort", &["relevance", "pub_date"])?;
        let mindate = date(args, "mindate")?;
        let maxdate = date(args, "maxdate")?;
        if let (Some(min), Some(max)) = (&mindate, &maxdate)
            && min.as_str() > max.as_str()
            && !min.starts_with(max.as_str())
        {
            return Err(ToolError::model(format!(
                "`mindate` {min} is after `maxdate` {max}"
            )));
        }
        let abstracts = common::opt_bool(args, "abstracts")?.unwrap_or(false);

        let mut search = Esearch::new("pubmed", query.clone())
            .retmax(u32::try_from(max_results).unwrap_or(10))
            .dates(mindate, maxdate);
        if let Some(sort) = sort {
            search = search.sort(sort);
        }
        let found = self.client.esearch(&search).await.map_err(ncbi_error)?;
        if found.ids.is_empty() {
            return Ok(ToolOutput::text(
                self.client.redact(&no_hits(&query, &found)),
            ));
        }
        let records = self
            .client
            .pubmed_summaries(&found.ids)
            .await
            .map_err(ncbi_error)?;
        let abstracts = if abstracts {
            Some(
                self.client
                    .pubmed_abstracts(&found.ids)
                    .await
                    .map_err(ncbi_error)?,
            )
        } else {
            None
        };
        let text = render(&query, &found, &records, abstracts.as_ref());
        Ok(ToolOutput::text(self.client.redact(&text)))
    }
}

/// The answer to a search that found nothing, with how PubMed read it.
fn no_hits(query: &str, found: &SearchResult) -> String {
    let mut out = if found.count > 0 {
        // Hits exist but the page asked for lies beyond them.
        format!(
            "No PubMed articles for \"{}\" on this page (of {})",
            flat(query, 200),
            found.count
        )
    } else {
        format!("No PubMed articles for \"{}\"", flat(query, 200))
    };
    explain(&mut out, found);
    out
}

fn render(
    query: &str,
    found: &SearchResult,
    records: &[PubmedSummary],
    abstracts: Option<&HashMap<String, String>>,
) -> String {
    let mut out = format!(
        "{} for \"{}\" (of {})",
        plural(records.len(), "PubMed article", "PubMed articles"),
        flat(query, 200),
        found.count
    );
    for (index, record) in records.iter().enumerate() {
        out.push_str(&format!("\n\n{}. {}", index + 1, flat(&record.title, 500)));
        if !record.authors.is_empty() {
            out.push_str(&format!("\n   Authors: {}", authors(&record.authors)));
        }
        let journal = match (&record.journal, &record.year) {
            (journal, Some(year)) if !journal.is_empty() => format!("{journal} ({year})"),
            (journal, None) if !journal.is_empty() => journal.clone(),
            (_, Some(year)) => year.clone(),
            _ => String::new(),
        };
        if !journal.is_empty() {
            out.push_str(&format!("\n   Journal: {}", flat(&journal, 200)));
        }
        let mut ids = vec![format!("PMID: {}", record.pmid)];
        if let Some(doi) = &record.doi {
            ids.push(format!("DOI: {doi}"));
        }
        if let Some(pmc) = &record.pmc {
            ids.push(format!("PMC: {pmc}"));
        }
        out.push_str(&format!("\n   {}", ids.join(" | ")));
        out.push_str(&format!("\n   {}", record.url()));
        if let Some(abstracts) = abstracts {
            match abstracts.get(&record.pmid) {
                Some(text) => {
                    out.push_str("\n   Abstract:");
                    for line in text.lines() {
                        out.push_str(&format!("\n     {line}"));
                    }
                }
                None => out.push_str("\n   Abstract: none in PubMed"),
            }
        }
    }
    out
}

/// The first few authors, then "et al.".
fn authors(names: &[String]) -> String {
    if names.len() > AUTHORS_SHOWN {
        format!("{} et al.", names[..AUTHORS_SHOWN].join(", "))
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_author_lists_end_in_et_al() {
        let names: Vec<String> = ["A", "B", "C", "D"].iter().map(|s| s.to_string()).collect();
        assert_eq!(authors(&names), "A, B, C et al.");
        assert_eq!(authors(&names[..2]), "A, B");
    }

    #[test]
    fn nothing_found_says_how_ncbi_read_it() {
        let found = SearchResult {
            count: 0,
            query_translation: Some("xqzzy[All Fields]".into()),
            phrases_not_found: vec!["xqzzy".into()],
            ..SearchResult::default()
        };
        assert_eq!(
            no_hits("xqzzy\nplonk", &found),
            "No PubMed articles for \"xqzzy plonk\"\nNCBI read the query as: xqzzy[All Fields]\nNot found anywhere: xqzzy"
        );
    }
}
