//! SRA esummary records: their `expxml` and `runs` fields are XML fragments (several top-level
//! elements, no root) carried as JSON strings, read here into an experiment and its runs.

use crate::client::Eutils;
use crate::error::NcbiError;
use crate::summary::{RawSummary, text};
use crate::xml::{Element, parse_fragment};

/// One SRA experiment (`SRX…`) with its runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SraSummary {
    pub uid: String,
    /// `SRX…`, `ERX…` or `DRX…`.
    pub experiment: String,
    pub title: String,
    /// `SRP…`.
    pub study: String,
    pub organism: String,
    pub taxid: String,
    /// `SRS…`.
    pub sample: String,
    /// `RNA-Seq`, `WGS`, …
    pub library_strategy: String,
    /// `PAIRED` or `SINGLE`.
    pub library_layout: String,
    /// `TRANSCRIPTOMIC`, `GENOMIC`, …
    pub library_source: String,
    pub library_selection: String,
    /// `ILLUMINA`, `OXFORD_NANOPORE`, …
    pub platform: String,
    pub instrument_model: String,
    pub total_bases: Option<u64>,
    pub total_spots: Option<u64>,
    /// `PRJNA…`.
    pub bioproject: String,
    /// `SAMN…`.
    pub biosample: String,
    pub runs: Vec<SraRun>,
}

/// One run (`SRR…`) of an experiment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SraRun {
    pub accession: String,
    pub spots: Option<u64>,
    pub bases: Option<u64>,
}

impl Eutils {
    /// SRA summaries of `uids`; a record whose XML does not parse is an error naming it.
    pub async fn sra_summaries(&self, uids: &[String]) -> Result<Vec<SraSummary>, NcbiError> {
        let raw = self.esummary("sra", uids).await?;
        raw.iter()
            .filter(|raw| raw.record.get("error").is_none())
            .map(|raw| SraSummary::from_raw(raw).map_err(|error| self.scrub(error)))
            .collect()
    }
}

impl SraSummary {
    pub fn from_raw(raw: &RawSummary) -> Result<Self, NcbiError> {
        let malformed = |detail: String| NcbiError::Malformed {
            utility: "esummary",
            expected: "an SRA record with XML `expxml` and `runs`",
            detail: format!("uid {}: {detail}", raw.uid),
        };
        let expxml = text(&raw.record["expxml"]).unwrap_or_default();
        let exp = parse_fragment(&expxml, "ExpXml")
            .map_err(|error| malformed(format!("`expxml`: {error}")))?;
        let runs_xml = text(&raw.record["runs"]).unwrap_or_default();
        let runs = parse_fragment(&runs_xml, "Runs")
            .map_err(|error| malformed(format!("`runs`: {error}")))?;
        let attr = |path: &[&str], name: &str| {
            exp.find(path)
                .and_then(|element| element.attr(name))
                .unwrap_or_default()
                .trim()
                .to_owned()
        };
        let inner_text = |path: &[&str]| exp.find(path).map(Element::text).unwrap_or_default();
        let statistics = |name: &str| {
            exp.find(&["Summary", "Statistics"])
                .and_then(|s| s.attr(name))
                .and_then(|n| n.trim().parse::<u64>().ok())
        };
        let library = exp.child("Library_descriptor");
        let library_field = |name: &str| {
            library
                .and_then(|l| l.child(name))
                .map(Element::text)
                .unwrap_or_default()
        };
        // `<LIBRARY_LAYOUT><PAIRED NOMINAL_LENGTH="…"/></LIBRARY_LAYOUT>`: the layout is the
        // name of the element inside.
        let library_layout = library
            .and_then(|l| l.child("LIBRARY_LAYOUT"))
            .and_then(|layout| layout.elements().next())
            .map(|element| element.name.to_ascii_uppercase())
            .unwrap_or_default();
        let run_list = runs
            .elements()
            .filter(|element| element.name == "Run")
            .filter_map(|run| {
                let accession = run.attr("acc")?.trim().to_owned();
                Some(SraRun {
                    accession,
                    spots: run.attr("total_spots").and_then(|n| n.trim().parse().ok()),
                    bases: run.attr("total_bases").and_then(|n| n.trim().parse().ok()),
                })
            })
            .collect();
        Ok(Self {
            uid: raw.uid.clone(),
            experiment: attr(&["Experiment"], "acc"),
            title: inner_text(&["Summary", "Title"]),
            study: attr(&["Study"], "acc"),
            organism: attr(&["Organism"], "ScientificName"),
            taxid: attr(&["Organism"], "taxid"),
            sample: attr(&["Sample"], "acc"),
            library_strategy: library_field("LIBRARY_STRATEGY"),
            library_layout,
            library_source: library_field("LIBRARY_SOURCE"),
            library_selection: library_field("LIBRARY_SELECTION"),
            platform: inner_text(&["Summary", "Platform"]),
            instrument_model: attr(&["Summary", "Platform"], "instrument_model"),
            total_bases: statistics("total_bases"),
            total_spots: statistics("total_spots"),
            bioproject: inner_text(&["Bioproject"]),
            biosample: inner_text(&["Biosample"]),
            runs: run_list,
        })
    }

    pub fn url(&self) -> String {
        format!("https://www.ncbi.nlm.nih.gov/sra/{}", self.experiment)
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::summary::parse_esummary;

    /// The shape esummary answers for `db=sra`: the XML escaped inside JSON strings, leading
    /// spaces and all.
    const SRA: &str = r#"{"header":{"type":"esummary","version":"0.3"},"result":{"uids":["10735209"],"10735209":{"uid":"10735209","expxml":"   <Summary><Title>GSM4546421: airway A1; Homo sapiens; RNA-Seq</Title><Platform instrument_model=\"Illumina NovaSeq 6000\">ILLUMINA</Platform><Statistics total_runs=\"2\" total_spots=\"51234567\" total_bases=\"15370370100\" total_size=\"4876543210\" load_done=\"true\" cluster_name=\"public\"/></Summary><Submitter acc=\"SRA1078901\" center_name=\"GEO\" contact_name=\"A B\" lab_name=\"\"/><Experiment acc=\"SRX8354901\" ver=\"1\" status=\"public\" name=\"GSM4546421: airway A1; Homo sapiens; RNA-Seq\"/><Study acc=\"SRP261279\" name=\"Airway epithelium &amp; smoking\"/><Organism taxid=\"9606\" ScientificName=\"Homo sapiens\"/><Sample acc=\"SRS6657890\" name=\"\"/><Instrument ILLUMINA=\"Illumina NovaSeq 6000\"/><Library_descriptor><LIBRARY_NAME>GSM4546421</LIBRARY_NAME><LIBRARY_STRATEGY>RNA-Seq</LIBRARY_STRATEGY><LIBRARY_SOURCE>TRANSCRIPTOMIC</LIBRARY_SOURCE><LIBRARY_SELECTION>cDNA</LIBRARY_SELECTION><LIBRARY_LAYOUT> <PAIRED/> </LIBRARY_LAYOUT></Library_descriptor><Bioproject>PRJNA631912</Bioproject><Biosample>SAMN14882001</Biosample>   ","runs":"<Run acc=\"SRR11790001\" total_spots=\"25617283\" total_bases=\"7685184900\" load_done=\"true\" is_public=\"true\" cluster_name=\"public\" static_data_available=\"true\"/><Run acc=\"SRR11790002\" total_spots=\"25617284\" total_bases=\"7685185200\" load_done=\"true\" is_public=\"true\" cluster_name=\"public\" static_data_available=\"true\"/>","extlinks":"    ","createdate":"2020/05/14","updatedate":"2020/05/15"}}}"#;

    #[test]
    fn expxml_and_runs_are_read_from_their_fragments() {
        let raw = parse_esummary(SRA).unwrap();
        assert_eq!(
            SraSummary::from_raw(&raw[0]).unwrap(),
            SraSummary {
                uid: "10735209".into(),
                experiment: "SRX8354901".into(),
                title: "GSM4546421: airway A1; Homo sapiens; RNA-Seq".into(),
                study: "SRP261279".into(),
                organism: "Homo sapiens".into(),
                taxid: "9606".into(),
                sample: "SRS6657890".into(),
                library_strategy: "RNA-Seq".into(),
                library_layout: "PAIRED".into(),
                library_source: "TRANSCRIPTOMIC".into(),
                library_selection: "cDNA".into(),
                platform: "ILLUMINA".into(),
                instrument_model: "Illumina NovaSeq 6000".into(),
                total_bases: Some(15_370_370_100),
                total_spots: Some(51_234_567),
                bioproject: "PRJNA631912".into(),
                biosample: "SAMN14882001".into(),
                runs: vec![
                    SraRun {
                        accession: "SRR11790001".into(),
                        spots: Some(25_617_283),
                        bases: Some(7_685_184_900),
                    },
                    SraRun {
                        accession: "SRR11790002".into(),
                        spots: Some(25_617_284),
                        bases: Some(7_685_185_200),
                    },
                ],
            }
        );
    }

    #[test]
    fn broken_expxml_names_the_record() {
        let raw = RawSummary {
            uid: "42".into(),
            record: serde_json::json!({"uid": "42", "expxml": "<Summary><Title>x</Summary>", "runs": ""}),
        };
        let text = SraSummary::from_raw(&raw).unwrap_err().to_string();
        assert!(text.contains("uid 42: `expxml`"), "{text}");
        assert!(!text.contains('\n'));
    }

    #[test]
    fn missing_fields_leave_blanks_not_errors() {
        let raw = RawSummary {
            uid: "7".into(),
            record: serde_json::json!({"uid": "7"}),
        };
        let summary = SraSummary::from_raw(&raw).unwrap();
        assert_eq!(summary.uid, "7");
        assert!(summary.runs.is_empty());
        assert_eq!(summary.library_layout, "");
    }
}
