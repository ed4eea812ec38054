//! `esummary`: document summaries by id, in the `uids` order NCBI answers, with typed readers
//! for PubMed and GEO DataSets records (SRA's are in `sra.rs`).

use serde_json::Value;

use crate::client::{Eutils, Method, POST_ABOVE_IDS, one_line};
use crate::error::NcbiError;
use crate::esearch::number;

/// One summary record as NCBI sent it, by uid. A uid NCBI could not summarise carries an
/// `error` field instead of the record's fields.
#[derive(Debug, Clone, PartialEq)]
pub struct RawSummary {
    pub uid: String,
    pub record: Value,
}

impl Eutils {
    /// The summaries of `ids` in `db`, in the order NCBI lists them in `uids`. No request is
    /// made for no ids.
    pub async fn esummary(&self, db: &str, ids: &[String]) -> Result<Vec<RawSummary>, NcbiError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let params = vec![
            ("db", db.to_owned()),
            ("id", ids.join(",")),
            ("retmode", "json".to_owned()),
        ];
        let method = if ids.len() > POST_ABOVE_IDS {
            Method::Post
        } else {
            Method::Get
        };
        let body = self.call("esummary", params, method).await?;
        parse_esummary(&body).map_err(|error| self.scrub(error))
    }

    /// PubMed summaries of `pmids`, records NCBI could not summarise left out.
    pub async fn pubmed_summaries(
        &self,
        pmids: &[String],
    ) -> Result<Vec<PubmedSummary>, NcbiError> {
        let raw = self.esummary("pubmed", pmids).await?;
        Ok(raw.iter().filter_map(PubmedSummary::from_raw).collect())
    }

    /// GEO DataSets (`gds`) summaries of `uids`.
    pub async fn gds_summaries(&self, uids: &[String]) -> Result<Vec<GdsSummary>, NcbiError> {
        let raw = self.esummary("gds", uids).await?;
        Ok(raw.iter().filter_map(GdsSummary::from_raw).collect())
    }
}

/// Reads an esummary JSON answer: `{"result":{"uids":[…],"<uid>":{…}}}`.
pub fn parse_esummary(body: &str) -> Result<Vec<RawSummary>, NcbiError> {
    let malformed = |detail: String| NcbiError::Malformed {
        utility: "esummary",
        expected: "esummary JSON",
        detail,
    };
    let value: Value = serde_json::from_str(body)
        .map_err(|error| malformed(format!("{error}: {}", one_line(body, 120))))?;
    if let Some(message) = value.get("error").and_then(Value::as_str) {
        return Err(NcbiError::Reported {
            utility: "esummary",
            message: message.to_owned(),
        });
    }
    let result = value
        .get("result")
        .ok_or_else(|| malformed("no `result`".to_owned()))?;
    let uids = result["uids"]
        .as_array()
        .ok_or_else(|| malformed("no `uids` list".to_owned()))?;
    Ok(uids
        .iter()
        .filter_map(Value::as_str)
        .filter_map(|uid| {
            result.get(uid).map(|record| RawSummary {
                uid: uid.to_owned(),
                record: record.clone(),
            })
        })
        .collect())
}

/// A PubMed record, as `search_pubmed` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PubmedSummary {
    pub pmid: String,
    pub title: String,
    /// `Surname AB` as PubMed writes them, in order.
    pub authors: Vec<String>,
    /// The full journal name, else its abbreviation (`source`).
    pub journal: String,
    pub year: Option<String>,
    pub doi: Option<String>,
    /// `PMC1234567`, when the article is in PubMed Central.
    pub pmc: Option<String>,
}

impl PubmedSummary {
    /// `None` for a uid NCBI answered with an `error`.
    pub fn from_raw(raw: &RawSummary) -> Option<Self> {
        let record = &raw.record;
        if record.get("error").is_some() {
            return None;
        }
        let article_id = |kind: &str| {
            record["articleids"].as_array().and_then(|ids| {
                ids.iter()
                    .find(|id| id["idtype"].as_str() == Some(kind))
                    .and_then(|id| id["value"].as_str())
                    .map(str::trim)
                    .filter(|value| !value.is_empty())
                    .map(str::to_owned)
            })
        };
        let authors = record["authors"]
            .as_array()
            .map(|list| {
                list.iter()
                    .filter(|author| author["authtype"].as_str().is_none_or(|t| t == "Author"))
                    .filter_map(|author| author["name"].as_str())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let journal = text(&record["fulljournalname"])
            .or_else(|| text(&record["source"]))
            .unwrap_or_default();
        let year = text(&record["pubdate"])
            .and_then(|date| year_in(&date))
            .or_else(|| text(&record["sortpubdate"]).and_then(|date| year_in(&date)));
        Some(Self {
            pmid: article_id("pubmed").unwrap_or_else(|| raw.uid.clone()),
            title: text(&record["title"]).unwrap_or_default(),
            authors,
            journal,
            year,
            doi: article_id("doi"),
            pmc: article_id("pmc"),
        })
    }

    pub fn url(&self) -> String {
        format!("https://pubmed.ncbi.nlm.nih.gov/{}/", self.pmid)
    }
}

/// A GEO DataSets record: a series (`GSE…`) or a sample, platform or dataset.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GdsSummary {
    pub uid: String,
    /// `GSE150368`.
    pub accession: String,
    pub title: String,
    pub summary: String,
    /// `Homo sapiens`, or several joined by `; `.
    pub taxon: String,
    /// `GPL20795`, …: `gpl` is the bare numbers, `;`-separated.
    pub platforms: Vec<String>,
    pub n_samples: Option<u64>,
    /// `GSE`, `GSM`, `GPL` or `GDS`.
    pub entry_type: String,
    /// The public release date, `2020/09/23`.
    pub pdat: String,
    /// SRA studies (`SRP…`) the record links to through `extrelations`.
    pub sra_studies: Vec<String>,
    pub pubmed_ids: Vec<String>,
}

impl GdsSummary {
    pub fn from_raw(raw: &RawSummary) -> Option<Self> {
        let record = &raw.record;
        if record.get("error").is_some() {
            return None;
        }
        let platforms = text(&record["gpl"])
            .map(|gpl| {
                gpl.split(';')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(|n| {
                        if n.starts_with("GPL") {
                            n.to_owned()
                        } else {
                            format!("GPL{n}")
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        let sra_studies = record["extrelations"]
            .as_array()
            .map(|relations| {
                relations
                    .iter()
                    .filter(|r| r["relationtype"].as_str() == Some("SRA"))
                    .filter_map(|r| r["targetobject"].as_str())
                    .filter(|target| !target.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let pubmed_ids = match &record["pubmedids"] {
            Value::Array(ids) => ids
                .iter()
                .filter_map(|id| text(id).or_else(|| id.as_u64().map(|n| n.to_string())))
                .collect(),
            _ => Vec::new(),
        };
        let entry_type = text(&record["entrytype"]).unwrap_or_default();
        let accession = text(&record["accession"]).unwrap_or_else(|| {
            // A series without an accession field still has its number.
            match text(&record["gse"]) {
                Some(gse) if entry_type == "GSE" => format!("GSE{gse}"),
                _ => raw.uid.clone(),
            }
        });
        Some(Self {
            uid: raw.uid.clone(),
            accession,
            title: text(&record["title"]).unwrap_or_default(),
            summary: text(&record["summary"]).unwrap_or_default(),
            taxon: text(&record["taxon"]).unwrap_or_default(),
            platforms,
            n_samples: number(&record["n_samples"]),
            entry_type,
            pdat: text(&record["pdat"]).unwrap_or_default(),
            sra_studies,
            pubmed_ids,
        })
    }

    pub fn url(&self) -> String {
        format!(
            "https://www.ncbi.nlm.nih.gov/geo/query/acc.cgi?acc={}",
            self.accession
        )
    }
}

/// A non-empty string field, trimmed.
pub(crate) fn text(value: &Value) -> Option<String> {
    value
        .as_str()
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}

/// The first four-digit run in `date` that reads as a year (`2020 Oct 12`, `2020/10/12 00:00`).
fn year_in(date: &str) -> Option<String> {
    let bytes = date.as_bytes();
    (0..bytes.len().saturating_sub(3)).find_map(|at| {
        let window = date.get(at..at + 4)?;
        let bounded = (at == 0 || !bytes[at - 1].is_ascii_digit())
            && bytes.get(at + 4).is_none_or(|b| !b.is_ascii_digit());
        (bounded && window.bytes().all(|b| b.is_ascii_digit()) && window.starts_with(['1', '2']))
            .then(|| window.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    const PUBMED: &str = r#"{"header":{"type":"esummary","version":"0.3"},"result":{"uids":["33262487","32908249"],
      "32908249":{"uid":"32908249","pubdate":"2020 Sep 10","epubdate":"2020 Sep 10","source":"Nature","authors":[{"name":"Li X","authtype":"Author","clusterid":""},{"name":"Wang Y","authtype":"Author","clusterid":""},{"name":"COVID Consortium","authtype":"CollectiveName","clusterid":""}],"lastauthor":"Wang Y","title":"Single-cell atlas of the lung.","volume":"585","issue":"7824","pages":"1-10","lang":["eng"],"issn":"0028-0836","essn":"1476-4687","pubtype":["Journal Article"],"articleids":[{"idtype":"pubmed","idtypen":1,"value":"32908249"},{"idtype":"doi","idtypen":3,"value":"10.1038/s41586-020-2000-0"},{"idtype":"pmc","idtypen":8,"value":"PMC7500000"}],"fulljournalname":"Nature","sortpubdate":"2020/09/10 00:00","elocationid":"doi: 10.1038/s41586-020-2000-0"},
      "33262487":{"uid":"33262487","pubdate":"","source":"Genome Biol","authors":[{"name":"Ewels PA","authtype":"Author","clusterid":""}],"title":"The nf-core framework.","articleids":[{"idtype":"pubmed","idtypen":1,"value":"33262487"}],"fulljournalname":"","sortpubdate":"2020/12/01 00:00"}}}"#;

    #[test]
    fn pubmed_records_come_in_uids_order_with_their_ids() {
        let raw = parse_esummary(PUBMED).unwrap();
        assert_eq!(
            raw.iter().map(|r| r.uid.as_str()).collect::<Vec<_>>(),
            vec!["33262487", "32908249"]
        );
        let records: Vec<PubmedSummary> = raw.iter().filter_map(PubmedSummary::from_raw).collect();
        assert_eq!(
            records[1],
            PubmedSummary {
                pmid: "32908249".into(),
                title: "Single-cell atlas of the lung.".into(),
                authors: vec!["Li X".into(), "Wang Y".into()],
                journal: "Nature".into(),
                year: Some("2020".into()),
                doi: Some("10.1038/s41586-020-2000-0".into()),
                pmc: Some("PMC7500000".into()),
            }
        );
        // No full name: the abbreviation; no pubdate: the sort date's year.
        assert_eq!(records[0].journal, "Genome Biol");
        assert_eq!(records[0].year.as_deref(), Some("2020"));
        assert_eq!(records[0].doi, None);
    }

    #[test]
    fn a_uid_ncbi_could_not_summarise_is_left_out_of_typed_records() {
        let body = r#"{"header":{"type":"esummary","version":"0.3"},"result":{"uids":["1"],"1":{"uid":"1","error":"cannot get document summary"}}}"#;
        let raw = parse_esummary(body).unwrap();
        assert_eq!(raw.len(), 1);
        assert_eq!(PubmedSummary::from_raw(&raw[0]), None);
    }

    #[test]
    fn gds_series_link_their_sra_study() {
        let body = r#"{"header":{"type":"esummary","version":"0.3"},"result":{"uids":["200150368"],"200150368":{"uid":"200150368","accession":"GSE150368","gds":"","title":"Airway epithelium RNA-seq","summary":"We profiled...","gpl":"20795;24676","gse":"150368","taxon":"Homo sapiens","entrytype":"GSE","gdstype":"Expression profiling by high throughput sequencing","pdat":"2020/09/23","samples":[{"accession":"GSM4546421","title":"A1"}],"relations":[],"extrelations":[{"relationtype":"SRA","targetobject":"SRP261279","targetftplink":"ftp://ftp-trace.ncbi.nlm.nih.gov/sra/sra-instant/reads/ByStudy/sra/SRP/SRP261/SRP261279/"}],"n_samples":12,"pubmedids":["33000001"],"bioproject":"PRJNA631912"}}}"#;
        let raw = parse_esummary(body).unwrap();
        assert_eq!(
            GdsSummary::from_raw(&raw[0]).unwrap(),
            GdsSummary {
                uid: "200150368".into(),
                accession: "GSE150368".into(),
                title: "Airway epithelium RNA-seq".into(),
                summary: "We profiled...".into(),
                taxon: "Homo sapiens".into(),
                platforms: vec!["GPL20795".into(), "GPL24676".into()],
                n_samples: Some(12),
                entry_type: "GSE".into(),
                pdat: "2020/09/23".into(),
                sra_studies: vec!["SRP261279".into()],
                pubmed_ids: vec!["33000001".into()],
            }
        );
    }

    #[test]
    fn years_are_found_in_either_date_form() {
        assert_eq!(year_in("2020 Oct 12").as_deref(), Some("2020"));
        assert_eq!(year_in("2019/01/02 00:00").as_deref(), Some("2019"));
        assert_eq!(year_in("Winter 1998").as_deref(), Some("1998"));
        assert_eq!(year_in("123456"), None);
        assert_eq!(year_in(""), None);
    }

    #[test]
    fn a_body_without_uids_is_malformed() {
        let text = parse_esummary(r#"{"result":{}}"#).unwrap_err().to_string();
        assert_eq!(
            text,
            "NCBI esummary answered with a body that is not esummary JSON: no `uids` list"
        );
    }
}
