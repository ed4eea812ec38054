//! How the fake E-utilities write their records: esummary JSON (PubMed, GEO DataSets, SRA
//! with its `expxml` and `runs` fragments escaped), efetch's PubMed XML and SRA runinfo CSV.

use serde_json::{Value, json};

use super::records::{Article, GeoRecord, SRA, SraRecord};

pub(super) fn pubmed_summary(a: &Article) -> Value {
    let authors: Vec<Value> = a
        .authors
        .iter()
        .map(|name| json!({"name": name, "authtype": "Author", "clusterid": ""}))
        .collect();
    let mut ids = vec![
        json!({"idtype": "pubmed", "idtypen": 1, "value": a.pmid}),
        json!({"idtype": "doi", "idtypen": 3, "value": a.doi}),
    ];
    if let Some(pmc) = a.pmc {
        ids.push(json!({"idtype": "pmc", "idtypen": 8, "value": pmc}));
        ids.push(json!({"idtype": "pmcid", "idtypen": 5, "value": format!("pmc-id: {pmc};")}));
    }
    json!({
        "uid": a.pmid, "pubdate": a.pubdate, "epubdate": "", "source": a.source,
        "authors": authors, "lastauthor": a.authors.last().copied().unwrap_or_default(),
        "title": a.title, "sorttitle": a.title.to_lowercase(), "volume": "12", "issue": "1", "pages": "101-112",
        "lang": ["eng"], "nlmuniqueid": "101528555", "issn": "", "essn": "2041-1723",
        "pubtype": ["Journal Article"], "recordstatus": "PubMed - indexed for MEDLINE",
        "pubstatus": "4", "articleids": ids, "fulljournalname": a.journal,
        "elocationid": format!("doi: {}", a.doi), "doctype": "citation",
        "sortpubdate": a.sortpubdate, "sortfirstauthor": a.authors.first().copied().unwrap_or_default(),
    })
}

pub(super) fn gds_summary(g: &GeoRecord) -> Value {
    let extrelations: Vec<Value> = g
        .sra_study
        .iter()
        .map(|study| {
            json!({"relationtype": "SRA", "targetobject": study,
                "targetftplink": format!("ftp://ftp-trace.ncbi.nlm.nih.gov/sra/sra-instant/reads/ByStudy/sra/SRP/{}/{study}/", &study[..6])})
        })
        .collect();
    let number = g
        .accession
        .trim_start_matches(|c: char| c.is_ascii_alphabetic());
    json!({
        "uid": g.uid, "accession": g.accession, "gds": "", "title": g.title, "summary": g.summary,
        "gpl": g.gpl, "gse": if g.entry_type == "GSE" { number } else { "" }, "taxon": g.taxon,
        "entrytype": g.entry_type, "gdstype": "Expression profiling by high throughput sequencing",
        "ptechtype": "", "valtype": "", "ssinfo": "", "subsetinfo": "", "pdat": g.pdat,
        "suppfile": "H5, TSV", "samples": [], "relations": [], "extrelations": extrelations,
        "n_samples": g.n_samples, "seriestitle": "", "platformtitle": "", "platformtaxa": "",
        "samplestaxa": "", "pubmedids": g.pubmed_ids, "projects": [],
        "ftplink": format!("ftp://ftp.ncbi.nlm.nih.gov/geo/series/{}/", g.accession),
        "geo2r": "no", "bioproject": g.bioproject,
    })
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(super) fn sra_summary(s: &SraRecord) -> Value {
    let spots: u64 = s.runs.iter().map(|r| r.1).sum();
    let bases: u64 = s.runs.iter().map(|r| r.2).sum();
    let expxml = format!(
        "   <Summary><Title>{title}</Title><Platform instrument_model=\"{model}\">{platform}</Platform><Statistics total_runs=\"{nruns}\" total_spots=\"{spots}\" total_bases=\"{bases}\" total_size=\"{size}\" load_done=\"true\" cluster_name=\"public\"/></Summary><Submitter acc=\"SRA1770001\" center_name=\"GEO\" contact_name=\"A Researcher\" lab_name=\"\"/><Experiment acc=\"{exp}\" ver=\"1\" status=\"public\" name=\"{title}\"/><Study acc=\"{study}\" name=\"{study_name}\"/><Organism taxid=\"{taxid}\" ScientificName=\"{organism}\"/><Sample acc=\"{sample}\" name=\"\"/><Instrument {platform}=\"{model}\"/><Library_descriptor><LIBRARY_NAME></LIBRARY_NAME><LIBRARY_STRATEGY>{strategy}</LIBRARY_STRATEGY><LIBRARY_SOURCE>{source}</LIBRARY_SOURCE><LIBRARY_SELECTION>{selection}</LIBRARY_SELECTION><LIBRARY_LAYOUT> <{layout}/> </LIBRARY_LAYOUT></Library_descriptor><Bioproject>{bioproject}</Bioproject><Biosample>{biosample}</Biosample>   ",
        title = escape(s.title),
        model = escape(s.model),
        platform = s.platform,
        nruns = s.runs.len(),
        size = bases / 3,
        exp = s.experiment,
        study = s.study,
        study_name = escape(s.study_name),
        taxid = s.taxid,
        organism = escape(s.organism),
        sample = s.sample,
        strategy = escape(s.strategy),
        source = escape(s.source),
        selection = escape(s.selection),
        layout = s.layout,
        bioproject = s.bioproject,
        biosample = s.biosample,
    );
    let runs: String = s
        .runs
        .iter()
        .map(|(acc, spots, bases)| {
            format!("<Run acc=\"{acc}\" total_spots=\"{spots}\" total_bases=\"{bases}\" load_done=\"true\" is_public=\"true\" cluster_name=\"public\" static_data_available=\"true\"/>")
        })
        .collect();
    json!({"uid": s.uid, "expxml": expxml, "runs": runs, "extlinks": "    ",
        "createdate": "2024/01/10", "updatedate": "2024/01/15"})
}

pub(super) fn pubmed_article(a: &Article) -> String {
    let abstract_xml = if a.abstract_sections.is_empty() {
        String::new()
    } else {
        let sections: String = a
            .abstract_sections
            .iter()
            .map(|(label, text)| match label {
                Some(label) => format!(
                    "<AbstractText Label=\"{label}\" NlmCategory=\"{label}\">{}</AbstractText>",
                    escape(text)
                ),
                None => format!("<AbstractText>{}</AbstractText>", escape(text)),
            })
            .collect();
        format!("<Abstract>{sections}</Abstract>")
    };
    let authors: String = a
        .authors
        .iter()
        .map(|name| {
            let (last, initials) = name.rsplit_once(' ').unwrap_or((name, ""));
            format!("<Author ValidYN=\"Y\"><LastName>{}</LastName><Initials>{initials}</Initials></Author>", escape(last))
        })
        .collect();
    format!(
        "<PubmedArticle><MedlineCitation Status=\"MEDLINE\" Owner=\"NLM\"><PMID Version=\"1\">{pmid}</PMID><Article PubModel=\"Print-Electronic\"><Journal><Title>{journal}</Title></Journal><ArticleTitle>{title}</ArticleTitle>{abstract_xml}<AuthorList CompleteYN=\"Y\">{authors}</AuthorList></Article></MedlineCitation><PubmedData><ArticleIdList><ArticleId IdType=\"pubmed\">{pmid}</ArticleId><ArticleId IdType=\"doi\">{doi}</ArticleId></ArticleIdList></PubmedData></PubmedArticle>\n",
        pmid = a.pmid,
        journal = escape(a.journal),
        title = escape(a.title),
        doi = a.doi,
    )
}

/// The runinfo CSV of the experiments `ids` name (uids or experiment, study or run accessions).
pub(super) fn runinfo(ids: &[String]) -> String {
    let mut csv = String::from(
        "Run,ReleaseDate,LoadDate,spots,bases,spots_with_mates,avgLength,size_MB,AssemblyName,download_path,Experiment,LibraryName,LibraryStrategy,LibrarySelection,LibrarySource,LibraryLayout,InsertSize,InsertDev,Platform,Model,SRAStudy,BioProject,Study_Pubmed_id,ProjectID,Sample,BioSample,SampleType,TaxID,ScientificName,SampleName,g1k_pop_code,source,g1k_analysis_group,Subject_ID,Sex,Disease,Tumor,Affection_Status,Analyte_Type,Histological_Type,Body_Site,CenterName,Submission,dbgap_study_accession,Consent,RunHash,ReadHash\n",
    );
    for s in SRA.iter().filter(|s| {
        ids.iter().any(|id| {
            id == s.uid || id == s.experiment || id == s.study || s.runs.iter().any(|r| r.0 == id)
        })
    }) {
        for (run, spots, bases) in s.runs {
            let mates = if s.layout == "PAIRED" { *spots } else { 0 };
            csv.push_str(&format!(
                "{run},2024-01-15 10:00:00,2024-01-14 09:00:00,{spots},{bases},{mates},{avg},{mb},,https://sra-downloadb.be-md.ncbi.nlm.nih.gov/sos5/sra-pub-zq-14/{run}/{run}.lite.1,{exp},,{strategy},{selection},{source},{layout},0,0,{platform},\"{model}\",{study},{bioproject},,{project},{sample},{biosample},simple,{taxid},{organism},,,,,,,,no,,,,,GEO,SRA1770001,,public,,\n",
                avg = bases / spots.max(&1),
                mb = bases / 3 / 1_000_000,
                exp = s.experiment,
                strategy = s.strategy,
                selection = s.selection,
                source = s.source,
                layout = s.layout,
                platform = s.platform,
                model = s.model,
                study = s.study,
                bioproject = s.bioproject,
                project = s.bioproject.trim_start_matches("PRJNA"),
                sample = s.sample,
                biosample = s.biosample,
                taxid = s.taxid,
                organism = s.organism,
            ));
        }
    }
    csv
}
