//! `efetch`, which has no JSON: PubMed abstracts from the `<PubmedArticleSet>` XML, and SRA
//! run tables from the `runinfo` CSV (read by header name, since NCBI has added columns over
//! the years).

use std::collections::HashMap;

use crate::client::{Eutils, Method, POST_ABOVE_IDS, one_line};
use crate::error::NcbiError;
use crate::xml::{Element, parse_document};

/// One row of SRA's runinfo table, the columns a samplesheet needs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunInfo {
    /// `SRR…`.
    pub run: String,
    pub experiment: String,
    pub study: String,
    pub bioproject: String,
    pub biosample: String,
    pub sample: String,
    pub library_strategy: String,
    pub library_layout: String,
    pub library_source: String,
    pub platform: String,
    pub model: String,
    pub spots: Option<u64>,
    pub bases: Option<u64>,
    pub scientific_name: String,
    pub download_path: String,
}

impl Eutils {
    /// The abstracts of `pmids`, by PMID; an article without an abstract is absent.
    pub async fn pubmed_abstracts(
        &self,
        pmids: &[String],
    ) -> Result<HashMap<String, String>, NcbiError> {
        if pmids.is_empty() {
            return Ok(HashMap::new());
        }
        let params = vec![
            ("db", "pubmed".to_owned()),
            ("id", pmids.join(",")),
            ("retmode", "xml".to_owned()),
        ];
        let body = self.call("efetch", params, method_for(pmids)).await?;
        parse_pubmed_abstracts(&body).map_err(|error| self.scrub(error))
    }

    /// SRA's runinfo rows for `ids` (SRA uids or accessions).
    pub async fn sra_runinfo(&self, ids: &[String]) -> Result<Vec<RunInfo>, NcbiError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let params = vec![
            ("db", "sra".to_owned()),
            ("id", ids.join(",")),
            ("rettype", "runinfo".to_owned()),
            ("retmode", "text".to_owned()),
        ];
        let body = self.call("efetch", params, method_for(ids)).await?;
        parse_runinfo(&body).map_err(|error| self.scrub(error))
    }
}

fn method_for(ids: &[String]) -> Method {
    if ids.len() > POST_ABOVE_IDS {
        Method::Post
    } else {
        Method::Get
    }
}

/// PMID → abstract from a `<PubmedArticleSet>`: labelled sections (`BACKGROUND: …`) each on
/// their own line, inline markup dissolved.
pub fn parse_pubmed_abstracts(body: &str) -> Result<HashMap<String, String>, NcbiError> {
    let set = parse_document(body).map_err(|detail| NcbiError::Malformed {
        utility: "efetch",
        expected: "PubMed XML",
        detail,
    })?;
    if set.name != "PubmedArticleSet" {
        return Err(NcbiError::Malformed {
            utility: "efetch",
            expected: "PubMed XML",
            detail: format!("the root is <{}>, not <PubmedArticleSet>", set.name),
        });
    }
    let mut abstracts = HashMap::new();
    for article in set.elements().filter(|e| e.name == "PubmedArticle") {
        let Some(citation) = article.child("MedlineCitation") else {
            continue;
        };
        let Some(pmid) = citation.child("PMID").map(Element::text) else {
            continue;
        };
        let Some(abstract_element) = citation.find(&["Article", "Abstract"]) else {
            continue;
        };
        let sections: Vec<String> = abstract_element
            .elements()
            .filter(|e| e.name == "AbstractText")
            .map(|section| {
                let body = section.text();
                match section.attr("Label").map(str::trim) {
                    Some(label) if !label.is_empty() => format!("{label}: {body}"),
                    _ => body,
                }
            })
            .filter(|section| !section.is_empty())
            .collect();
        if !sections.is_empty() {
            abstracts.insert(pmid, sections.join("\n"));
        }
    }
    Ok(abstracts)
}

/// The rows of a runinfo CSV, columns found by their header names.
pub fn parse_runinfo(body: &str) -> Result<Vec<RunInfo>, NcbiError> {
    let malformed = |detail: String| NcbiError::Malformed {
        utility: "efetch",
        expected: "SRA runinfo CSV",
        detail,
    };
    if body.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(body.as_bytes());
    let headers = reader
        .headers()
        .map_err(|error| malformed(error.to_string()))?
        .clone();
    let column = |name: &str| headers.iter().position(|h| h.trim() == name);
    let Some(run_column) = column("Run") else {
        return Err(malformed(format!(
            "no `Run` column in the header `{}`",
            one_line(&headers.iter().collect::<Vec<_>>().join(","), 80)
        )));
    };
    let columns: HashMap<&str, Option<usize>> = [
        "Experiment",
        "SRAStudy",
        "BioProject",
        "BioSample",
        "Sample",
        "LibraryStrategy",
        "LibraryLayout",
        "LibrarySource",
        "Platform",
        "Model",
        "spots",
        "bases",
        "ScientificName",
        "download_path",
    ]
    .into_iter()
    .map(|name| (name, column(name)))
    .collect();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|error| malformed(error.to_string()))?;
        let field = |name: &str| {
            columns
                .get(name)
                .copied()
                .flatten()
                .and_then(|at| record.get(at))
                .unwrap_or_default()
                .trim()
                .to_owned()
        };
        let run = record.get(run_column).unwrap_or_default().trim().to_owned();
        // NCBI repeats the header between batches of a long table; skip those and blanks.
        if run.is_empty() || run == "Run" {
            continue;
        }
        rows.push(RunInfo {
            run,
            experiment: field("Experiment"),
            study: field("SRAStudy"),
            bioproject: field("BioProject"),
            biosample: field("BioSample"),
            sample: field("Sample"),
            library_strategy: field("LibraryStrategy"),
            library_layout: field("LibraryLayout"),
            library_source: field("LibrarySource"),
            platform: field("Platform"),
            model: field("Model"),
            spots: field("spots").parse().ok(),
            bases: field("bases").parse().ok(),
            scientific_name: field("ScientificName"),
            download_path: field("download_path"),
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    const ARTICLES: &str = r#"<?xml version="1.0" ?>
<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2024//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_240101.dtd">
<PubmedArticleSet>
<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">32908249</PMID><Article PubModel="Print-Electronic"><ArticleTitle>Single-cell atlas.</ArticleTitle><Abstract><AbstractText Label="BACKGROUND" NlmCategory="BACKGROUND">Lungs <i>matter</i> &amp; cells.</AbstractText><AbstractText Label="RESULTS" NlmCategory="RESULTS">We found H<sub>2</sub>O.</AbstractText></Abstract></Article></MedlineCitation><PubmedData><ArticleIdList><ArticleId IdType="pubmed">32908249</ArticleId></ArticleIdList></PubmedData></PubmedArticle>
<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">33262487</PMID><Article><ArticleTitle>nf-core.</ArticleTitle><Abstract><AbstractText>One paragraph only.</AbstractText></Abstract></Article></MedlineCitation></PubmedArticle>
<PubmedArticle><MedlineCitation><PMID Version="1">1</PMID><Article><ArticleTitle>No abstract.</ArticleTitle></Article></MedlineCitation></PubmedArticle>
</PubmedArticleSet>"#;

    #[test]
    fn abstracts_join_their_labelled_sections() {
        let abstracts = parse_pubmed_abstracts(ARTICLES).unwrap();
        assert_eq!(
            abstracts.get("32908249").map(String::as_str),
            Some("BACKGROUND: Lungs matter & cells.\nRESULTS: We found H2O.")
        );
        assert_eq!(
            abstracts.get("33262487").map(String::as_str),
            Some("One paragraph only.")
        );
        assert!(!abstracts.contains_key("1"));
    }

    #[test]
    fn a_page_that_is_not_pubmed_xml_is_refused() {
        let text = parse_pubmed_abstracts("<html><body>oops</body></html>")
            .unwrap_err()
            .to_string();
        assert_eq!(
            text,
            "NCBI efetch answered with a body that is not PubMed XML: the root is <html>, not <PubmedArticleSet>"
        );
        assert!(parse_pubmed_abstracts("not xml <").is_err());
    }

    #[test]
    fn runinfo_is_read_by_header_name() {
        let csv = "Run,ReleaseDate,LoadDate,spots,bases,spots_with_mates,avgLength,size_MB,AssemblyName,download_path,Experiment,LibraryName,LibraryStrategy,LibrarySelection,LibrarySource,LibraryLayout,InsertSize,InsertDev,Platform,Model,SRAStudy,BioProject,Study_Pubmed_id,ProjectID,Sample,BioSample,SampleType,TaxID,ScientificName,SampleName\n\
SRR11790001,2020-05-15 10:00:00,2020-05-14 09:00:00,25617283,7685184900,25617283,300,2300,,https://sra-downloadb.be-md.ncbi.nlm.nih.gov/sos2/sra-pub-run-13/SRR11790001/SRR11790001.1,SRX8354901,GSM4546421,RNA-Seq,cDNA,TRANSCRIPTOMIC,PAIRED,0,0,ILLUMINA,\"Illumina NovaSeq 6000\",SRP261279,PRJNA631912,,631912,SRS6657890,SAMN14882001,simple,9606,Homo sapiens,GSM4546421\n\
Run,ReleaseDate\n\n";
        let rows = parse_runinfo(csv).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].run, "SRR11790001");
        assert_eq!(rows[0].library_layout, "PAIRED");
        assert_eq!(rows[0].model, "Illumina NovaSeq 6000");
        assert_eq!(rows[0].bioproject, "PRJNA631912");
        assert_eq!(rows[0].bases, Some(7_685_184_900));
        // The same table with its columns in another order reads the same.
        let swapped = "BioSample,Run,LibraryLayout\nSAMN1,SRR1,SINGLE\n";
        let rows = parse_runinfo(swapped).unwrap();
        assert_eq!(
            (
                rows[0].run.as_str(),
                rows[0].biosample.as_str(),
                rows[0].library_layout.as_str()
            ),
            ("SRR1", "SAMN1", "SINGLE")
        );
        assert!(parse_runinfo("").unwrap().is_empty());
        assert!(parse_runinfo("a,b\n1,2\n").is_err());
    }
}
