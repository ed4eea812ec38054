//! `search_geo_sra`: GEO series (db `gds`) followed to their SRA studies through
//! `extrelations`, or SRA experiments directly (db `sra`); either way ending with the run
//! accessions one per line, the `ids.csv` nf-core/fetchngs reads. The first line is the
//! contract: `N GEO series for "query" (of TOTAL)` or `N SRA experiments for "query" (of
//! TOTAL)`, `No …` when nothing matched.

use codaris_catalogue::limits::GEO_SRA_MAX_RESULTS;
use codaris_ncbi::{Esearch, Eutils, GdsSummary, NcbiError, SearchResult, SraSummary};
use serde_json::Value;

use super::{choice, explain, filter, flat, ncbi_error, object, plural, query};
use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};
use crate::web::common;

/// SRA studies linked from GEO followed at most: each costs a request under NCBI's limit.
const STUDIES_FOLLOWED: usize = 10;
/// Experiments listed per linked study at most.
const EXPERIMENTS_PER_STUDY: u32 = 20;
/// Characters of a GEO summary shown.
const SUMMARY_CHARS: usize = 300;
/// The heading of the samplesheet-ready block, so a reader can find it.
pub const RUN_LIST_HEADING: &str = "Run accessions (nf-core/fetchngs ids.csv, one per line):";

#[derive(Debug, Clone)]
pub struct SearchGeoSra {
    client: Eutils,
}

impl SearchGeoSra {
    pub fn new(client: Eutils) -> Self {
        Self { client }
    }
}

/// A checked call.
struct Request {
    query: String,
    organism: Option<String>,
    strategy: Option<String>,
    max_results: u32,
}

#[async_trait::async_trait]
impl Tool for SearchGeoSra {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::SEARCH_GEO_SRA
    }

    async fn call(&self, _ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        object(self.name(), args)?;
        let request = Request {
            query: query(args)?,
            organism: filter(args, "organism")?,
            strategy: filter(args, "strategy")?,
            max_results: u32::try_from(common::count(
                args,
                "max_results",
                10,
                GEO_SRA_MAX_RESULTS,
            )?)
            .unwrap_or(10),
        };
        let db = choice(args, "db", &["gds", "sra"])?.unwrap_or_else(|| "gds".to_owned());
        let text = if db == "gds" {
            self.geo(&request).await?
        } else {
            self.sra(&request).await?
        };
        Ok(ToolOutput::text(self.client.redact(&text)))
    }
}

impl SearchGeoSra {
    async fn geo(&self, request: &Request) -> Result<String, ToolError> {
        let mut term = vec![format!("({})", request.query)];
        if let Some(organism) = &request.organism {
            term.push(format!("\"{organism}\"[Organism]"));
        }
        // Series only: samples and platforms would crowd them out of the page.
        term.push("gse[Entry Type]".to_owned());
        let term = term.join(" AND ");
        let search = Esearch::new("gds", term.clone()).retmax(request.max_results);
        let found = self.client.esearch(&search).await.map_err(ncbi_error)?;
        if found.ids.is_empty() {
            let mut out = format!("No GEO series for \"{}\"", flat(&request.query, 200));
            out.push_str(&format!("\nSearched GEO DataSets for: {term}"));
            explain(&mut out, &found);
            return Ok(out);
        }
        let series = self
            .client
            .gds_summaries(&found.ids)
            .await
            .map_err(ncbi_error)?;
        let mut out = format!(
            "{} for \"{}\" (of {})\nSearched GEO DataSets for: {term}",
            plural(series.len(), "GEO series", "GEO series"),
            flat(&request.query, 200),
            found.count
        );
        for (index, record) in series.iter().enumerate() {
            out.push_str(&render_series(index + 1, record));
        }
        let mut studies: Vec<&str> = Vec::new();
        for study in series.iter().flat_map(|s| s.sra_studies.iter()) {
            if !studies.contains(&study.as_str()) {
                studies.push(study);
            }
        }
        let mut runs: Vec<String> = Vec::new();
        if studies.is_empty() {
            out.push_str(
                "\n\nNo SRA study is linked from these series (no sequencing runs to fetch).",
            );
        } else {
            out.push_str("\n\nSRA experiments of the linked studies:");
            for study in studies.iter().take(STUDIES_FOLLOWED) {
                match self.study(study, request.strategy.as_deref()).await {
                    Ok((found, experiments)) => {
                        out.push_str(&format!(
                            "\n\n{study}: {} of {}{}",
                            plural(experiments.len(), "experiment", "experiments"),
                            found.count,
                            request
                                .strategy
                                .as_ref()
                                .map(|s| format!(" with strategy {s}"))
                                .unwrap_or_default()
                        ));
                        for experiment in &experiments {
                            out.push_str(&render_experiment(experiment));
                            collect_runs(&mut runs, experiment);
                        }
                    }
                    // The series are still worth having; say what is missing and why.
                    Err(error) => out.push_str(&format!(
                        "\n\n{study}: its experiments could not be listed: {error}"
                    )),
                }
            }
            if studies.len() > STUDIES_FOLLOWED {
                out.push_str(&format!(
                    "\n\nNot followed (more than {STUDIES_FOLLOWED} studies): {}; search them with db \"sra\".",
                    studies[STUDIES_FOLLOWED..].join(", ")
                ));
            }
        }
        push_run_list(&mut out, &runs);
        Ok(out)
    }

    /// The experiments of one SRA study, optionally of one strategy.
    async fn study(
        &self,
        study: &str,
        strategy: Option<&str>,
    ) -> Result<(SearchResult, Vec<SraSummary>), NcbiError> {
        let mut term = study.to_owned();
        if let Some(strategy) = strategy {
            term.push_str(&format!(" AND \"{strategy}\"[Strategy]"));
        }
        let search = Esearch::new("sra", term).retmax(EXPERIMENTS_PER_STUDY);
        let found = self.client.esearch(&search).await?;
        let experiments = self.client.sra_summaries(&found.ids).await?;
        Ok((found, experiments))
    }

    async fn sra(&self, request: &Request) -> Result<String, ToolError> {
        let mut term = vec![format!("({})", request.query)];
        if let Some(organism) = &request.organism {
            term.push(format!("\"{organism}\"[Organism]"));
        }
        if let Some(strategy) = &request.strategy {
            term.push(format!("\"{strategy}\"[Strategy]"));
        }
        let term = term.join(" AND ");
        let search = Esearch::new("sra", term.clone()).retmax(request.max_results);
        let found = self.client.esearch(&search).await.map_err(ncbi_error)?;
        if found.ids.is_empty() {
            let mut out = format!("No SRA experiments for \"{}\"", flat(&request.query, 200));
            out.push_str(&format!("\nSearched SRA for: {term}"));
            explain(&mut out, &found);
            return Ok(out);
        }
        let experiments = self
            .client
            .sra_summaries(&found.ids)
            .await
            .map_err(ncbi_error)?;
        let mut out = format!(
            "{} for \"{}\" (of {})\nSearched SRA for: {term}",
            plural(experiments.len(), "SRA experiment", "SRA experiments"),
            flat(&request.query, 200),
            found.count
        );
        let mut runs = Vec::new();
        for experiment in &experiments {
            out.push('\n');
            out.push_str(&render_experiment(experiment));
            collect_runs(&mut runs, experiment);
        }
        push_run_list(&mut out, &runs);
        Ok(out)
    }
}

fn render_series(number: usize, series: &GdsSummary) -> String {
    let mut out = format!(
        "\n\n{number}. {} — {}",
        series.accession,
        flat(&series.title, 300)
    );
    let mut facts = Vec::new();
    if !series.taxon.is_empty() {
        facts.push(format!("Organism: {}", series.taxon));
    }
    if !series.platforms.is_empty() {
        facts.push(format!("Platform: {}", series.platforms.join(", ")));
    }
    if let Some(n) = series.n_samples {
        facts.push(format!("Samples: {n}"));
    }
    if !series.pdat.is_empty() {
        facts.push(format!("Released: {}", series.pdat));
    }
    if !facts.is_empty() {
        out.push_str(&format!("\n   {}", facts.join(" | ")));
    }
    if !series.summary.is_empty() {
        out.push_str(&format!(
            "\n   Summary: {}",
            flat(&series.summary, SUMMARY_CHARS)
        ));
    }
    if series.sra_studies.is_empty() {
        out.push_str("\n   SRA study: none linked");
    } else {
        out.push_str(&format!(
            "\n   SRA study: {}",
            series.sra_studies.join(", ")
        ));
    }
    if !series.pubmed_ids.is_empty() {
        out.push_str(&format!("\n   PubMed: {}", series.pubmed_ids.join(", ")));
    }
    out.push_str(&format!("\n   {}", series.url()));
    out
}

fn render_experiment(experiment: &SraSummary) -> String {
    let mut out = format!(
        "\n  {} — {}",
        experiment.experiment,
        flat(&experiment.title, 200)
    );
    let platform = [
        experiment.platform.as_str(),
        experiment.instrument_model.as_str(),
    ]
    .iter()
    .filter(|part| !part.is_empty())
    .copied()
    .collect::<Vec<_>>()
    .join(" ");
    let facts: Vec<String> = [
        experiment.organism.clone(),
        experiment.library_strategy.clone(),
        experiment.library_layout.clone(),
        experiment.library_source.clone(),
        platform,
        experiment.total_bases.map(bases).unwrap_or_default(),
    ]
    .into_iter()
    .filter(|fact| !fact.is_empty())
    .collect();
    if !facts.is_empty() {
        out.push_str(&format!("\n     {}", facts.join(" | ")));
    }
    let ids: Vec<String> = [
        ("Study", &experiment.study),
        ("BioProject", &experiment.bioproject),
        ("BioSample", &experiment.biosample),
        ("Sample", &experiment.sample),
    ]
    .iter()
    .filter(|(_, value)| !value.is_empty())
    .map(|(name, value)| format!("{name} {value}"))
    .collect();
    if !ids.is_empty() {
        out.push_str(&format!("\n     {}", ids.join(" | ")));
    }
    let runs: Vec<String> = experiment
        .runs
        .iter()
        .map(|run| match run.bases {
            Some(n) => format!("{} ({})", run.accession, bases(n)),
            None => run.accession.clone(),
        })
        .collect();
    if runs.is_empty() {
        out.push_str("\n     Runs: none public");
    } else {
        out.push_str(&format!("\n     Runs: {}", runs.join(", ")));
    }
    out
}

fn collect_runs(runs: &mut Vec<String>, experiment: &SraSummary) {
    for run in &experiment.runs {
        if !runs.contains(&run.accession) {
            runs.push(run.accession.clone());
        }
    }
}

fn push_run_list(out: &mut String, runs: &[String]) {
    if runs.is_empty() {
        out.push_str("\n\nNo run accessions to list.");
        return;
    }
    out.push_str(&format!("\n\n{RUN_LIST_HEADING}\n{}", runs.join("\n")));
}

/// Bases as a person reads them: `60.4 Gb`, `812.0 Mb`.
fn bases(n: u64) -> String {
    let units = [(1e12, "Tb"), (1e9, "Gb"), (1e6, "Mb"), (1e3, "kb")];
    // u64 to f64 rounds only far beyond any run's size, and the answer is rounded anyway.
    let value = n as f64;
    units.iter().find(|(scale, _)| value >= *scale).map_or_else(
        || format!("{n} bases"),
        |(scale, unit)| format!("{:.1} {unit}", value / scale),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases_read_in_the_largest_unit() {
        assert_eq!(bases(60_400_233_600), "60.4 Gb");
        assert_eq!(bases(2_325_215_775), "2.3 Gb");
        assert_eq!(bases(812_000_000), "812.0 Mb");
        assert_eq!(bases(999), "999 bases");
        assert_eq!(bases(u64::MAX), "18446744.1 Tb");
    }
}
