//! A stand-in for NCBI's E-utilities on 127.0.0.1, written from their documented formats:
//! `esearch.fcgi` and `esummary.fcgi` in JSON (counts as strings, `uids` in the order asked,
//! SRA `expxml` and `runs` as escaped XML fragments), `efetch.fcgi` as PubMed XML or SRA
//! `runinfo` CSV, over GET or a POST form.
//!
//! Like NCBI it limits each key (or, without one, the address) to 3 requests a second, 10 with
//! an `api_key`, and answers the real 429 body above that, with `X-RateLimit-*` headers; it
//! counts those violations so a test can assert a client never caused one. Stricter than NCBI,
//! it refuses (400) a request without `tool` and `email`, so a client that forgets them fails
//! loudly. It serves the invented records of [`records`]; anything else is a 404 naming it.

mod records;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::fake_http::{FakeHttp, Reply, Seen};
pub use records::{ARTICLES, Article, GEO, GeoRecord, SRA, SraRecord};

/// How the stand-in names itself, in its `Server` header and its refusals.
pub const NAME: &str = "fake-eutils";
/// The path the utilities live under, as on eutils.ncbi.nlm.nih.gov.
const PREFIX: &str = "/entrez/eutils/";

/// A running fake E-utilities; stops when dropped.
#[derive(Debug)]
pub struct FakeEutils {
    http: FakeHttp,
    state: Arc<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Arrival times of the last second's requests, per key or address.
    arrivals: Mutex<HashMap<String, VecDeque<Instant>>>,
    violations: AtomicUsize,
    injected: AtomicUsize,
}

impl FakeEutils {
    pub fn start() -> Self {
        let state = Arc::new(State::default());
        let handler_state = state.clone();
        let http = FakeHttp::start(move |seen| {
            let reply = answer(&handler_state, seen);
            reply.header("Server", &format!("{NAME} (a Codaris test stand-in)"))
        });
        Self { http, state }
    }

    /// `http://127.0.0.1:PORT/entrez/eutils/`, to configure a client with.
    pub fn base_url(&self) -> String {
        format!("{}{PREFIX}", self.http.url())
    }

    /// Every request so far, in arrival order.
    pub fn seen(&self) -> Vec<Seen> {
        self.http.seen()
    }

    /// The next `n` requests are answered 429, as if another client had used up the limit.
    pub fn inject_429(&self, n: usize) {
        self.state.injected.store(n, Ordering::SeqCst);
    }

    /// Requests answered 429 because the client went over its per-second limit (injected 429s
    /// not counted).
    pub fn rate_violations(&self) -> usize {
        self.state.violations.load(Ordering::SeqCst)
    }
}

/// Every parameter of a request: the query's, then a POST form's.
pub fn params(seen: &Seen) -> Vec<(String, String)> {
    let mut all = seen.query();
    if seen.method == "POST" {
        all.extend(seen.form());
    }
    all
}

fn param(params: &[(String, String)], name: &str) -> Option<String> {
    params
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.clone())
}

fn answer(state: &State, seen: &Seen) -> Reply {
    let params = params(seen);
    let key = param(&params, "api_key").filter(|key| !key.is_empty());
    let limit: usize = if key.is_some() { 10 } else { 3 };
    let who = key.clone().unwrap_or_else(|| "127.0.0.1".to_owned());
    let in_window = record_arrival(state, &who);
    let remaining = limit.saturating_sub(in_window);
    let limited = |reply: Reply| {
        reply
            .header("X-RateLimit-Limit", &limit.to_string())
            .header("X-RateLimit-Remaining", &remaining.to_string())
    };
    let rate_body = || json!({"error": "API rate limit exceeded", "api-key": who, "count": in_window.to_string(), "limit": limit.to_string()});
    let injected = state
        .injected
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if injected {
        return limited(Reply::json(429, &rate_body()));
    }
    if in_window > limit {
        state.violations.fetch_add(1, Ordering::SeqCst);
        return limited(Reply::json(429, &rate_body()));
    }
    if !matches!(seen.method.as_str(), "GET" | "POST") {
        return Reply::not_implemented(NAME, seen);
    }
    let missing: Vec<&str> = ["tool", "email"]
        .into_iter()
        .filter(|name| param(&params, name).is_none_or(|v| v.trim().is_empty()))
        .collect();
    if !missing.is_empty() {
        return Reply::text(
            400,
            &format!(
                "{NAME} (a test stand-in) requires `tool` and `email` on every request, as NCBI asks; missing: {}",
                missing.join(", ")
            ),
        );
    }
    let reply = match seen.path().strip_prefix(PREFIX) {
        Some("esearch.fcgi") => esearch(&params),
        Some("esummary.fcgi") => esummary(&params),
        Some("efetch.fcgi") => efetch(&params),
        _ => None,
    };
    limited(reply.unwrap_or_else(|| Reply::not_implemented(NAME, seen)))
}

/// Records a request from `who` and returns how many arrived in the last second, this one
/// included.
fn record_arrival(state: &State, who: &str) -> usize {
    let now = Instant::now();
    let mut arrivals = state
        .arrivals
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let times = arrivals.entry(who.to_owned()).or_default();
    while times
        .front()
        .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(1))
    {
        times.pop_front();
    }
    times.push_back(now);
    times.len()
}

/// One `AND`-joined part of a search term.
enum Clause {
    /// Words that must all appear in the record's text.
    Words(Vec<String>),
    /// `value[Field]`.
    Field(String, String),
}

fn parse_term(term: &str) -> Vec<Clause> {
    term.split(" AND ")
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| {
            if let Some(open) = part.rfind('[')
                && part.ends_with(']')
            {
                let value = part[..open].trim().trim_matches('"').to_lowercase();
                let field = part[open + 1..part.len() - 1].to_lowercase();
                if field != "all fields" {
                    return Clause::Field(value, field);
                }
                return Clause::Words(words(&value));
            }
            Clause::Words(words(part))
        })
        .collect()
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// What a record offers a search: its text, and its value for each field a tool filters on.
struct Searchable {
    id: String,
    text: String,
    fields: Vec<(&'static str, String)>,
    date: String,
}

fn searchable(db: &str) -> Option<Vec<Searchable>> {
    let lower = |parts: &[&str]| parts.join(" ").to_lowercase();
    Some(match db {
        "pubmed" => ARTICLES
            .iter()
            .map(|a| {
                let sections: Vec<&str> = a.abstract_sections.iter().map(|(_, t)| *t).collect();
                Searchable {
                    id: a.pmid.to_owned(),
                    text: lower(&[
                        a.title,
                        a.journal,
                        &a.authors.join(" "),
                        &sections.join(" "),
                        a.pmid,
                    ]),
                    fields: vec![("journal", a.source.to_lowercase())],
                    date: a.sortpubdate.chars().take(10).collect(),
                }
            })
            .collect(),
        "gds" => GEO
            .iter()
            .map(|g| Searchable {
                id: g.uid.to_owned(),
                text: lower(&[
                    g.title,
                    g.summary,
                    g.accession,
                    g.sra_study.unwrap_or_default(),
                ]),
                fields: vec![
                    ("organism", g.taxon.to_lowercase()),
                    ("entry type", g.entry_type.to_lowercase()),
                    ("accession", g.accession.to_lowercase()),
                ],
                date: g.pdat.to_owned(),
            })
            .collect(),
        "sra" => SRA
            .iter()
            .map(|s| {
                let runs: Vec<&str> = s.runs.iter().map(|r| r.0).collect();
                Searchable {
                    id: s.uid.to_owned(),
                    text: lower(&[
                        s.title,
                        s.experiment,
                        s.study,
                        s.study_name,
                        s.sample,
                        s.bioproject,
                        s.biosample,
                        &runs.join(" "),
                    ]),
                    fields: vec![
                        ("organism", s.organism.to_lowercase()),
                        ("strategy", s.strategy.to_lowercase()),
                        ("platform", s.platform.to_lowercase()),
                        ("accession", s.experiment.to_lowercase()),
                    ],
                    date: String::new(),
                }
            })
            .collect(),
        _ => return None,
    })
}

fn esearch(params: &[(String, String)]) -> Option<Reply> {
    if param(params, "retmode").as_deref() != Some("json") {
        return None;
    }
    let db = param(params, "db").unwrap_or_default();
    let term = param(params, "term").unwrap_or_default();
    let error = |message: String| {
        Some(Reply::json(
            200,
            &json!({"header": {"type": "esearch", "version": "0.3"}, "esearchresult": {"ERROR": message}}),
        ))
    };
    let Some(records) = searchable(&db) else {
        return error(format!("Invalid db name specified: {db}"));
    };
    if term.trim().is_empty() {
        return error("Empty term and query_key - nothing todo".to_owned());
    }
    let clauses = parse_term(&term);
    let known_fields: Vec<&str> = records
        .first()
        .map(|r| r.fields.iter().map(|(name, _)| *name).collect())
        .unwrap_or_default();
    let mut fields_not_found = Vec::new();
    let mut translation = Vec::new();
    for clause in &clauses {
        match clause {
            Clause::Words(words) => {
                translation.extend(words.iter().map(|w| format!("{w}[All Fields]")))
            }
            Clause::Field(value, field) if known_fields.contains(&field.as_str()) => {
                translation.push(format!("\"{value}\"[{field}]"));
            }
            Clause::Field(_, field) => fields_not_found.push(format!("[{field}]")),
        }
    }
    let same = |a: &str, b: &str| a.replace(['-', ' '], "") == b.replace(['-', ' '], "");
    let (min, max) = date_range(params);
    let mut hits: Vec<&Searchable> = records
        .iter()
        .filter(|r| {
            clauses.iter().all(|clause| match clause {
                Clause::Words(words) => words.iter().all(|w| r.text.contains(w.as_str())),
                Clause::Field(value, field) => {
                    match r.fields.iter().find(|(name, _)| name == field) {
                        Some((_, have)) => same(have, value),
                        // An unknown field is ignored and reported, as NCBI does.
                        None => true,
                    }
                }
            })
        })
        .filter(|r| {
            r.date.is_empty()
                || (r.date.as_str() >= min.as_str() && r.date.as_str() <= max.as_str())
        })
        .collect();
    if param(params, "sort").as_deref() == Some("pub_date") {
        hits.sort_by(|a, b| b.date.cmp(&a.date));
    }
    let phrases_not_found: Vec<String> = clauses
        .iter()
        .flat_map(|clause| match clause {
            Clause::Words(words) => words.clone(),
            Clause::Field(..) => Vec::new(),
        })
        .filter(|w| !records.iter().any(|r| r.text.contains(w.as_str())))
        .collect();
    let retmax: usize = param(params, "retmax")
        .and_then(|n| n.parse().ok())
        .unwrap_or(20);
    let retstart: usize = param(params, "retstart")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let ids: Vec<&str> = hits
        .iter()
        .skip(retstart)
        .take(retmax)
        .map(|r| r.id.as_str())
        .collect();
    let mut result = json!({
        "count": hits.len().to_string(),
        "retmax": ids.len().to_string(),
        "retstart": retstart.to_string(),
        "idlist": ids,
        "translationset": [],
        "querytranslation": translation.join(" AND "),
    });
    if !phrases_not_found.is_empty() || !fields_not_found.is_empty() {
        result["errorlist"] =
            json!({"phrasesnotfound": phrases_not_found, "fieldsnotfound": fields_not_found});
    }
    if hits.is_empty() {
        result["warninglist"] = json!({"phrasesignored": [], "quotedphrasesnotfound": [], "outputmessages": ["No items found."]});
    }
    Some(Reply::json(
        200,
        &json!({"header": {"type": "esearch", "version": "0.3"}, "esearchresult": result}),
    ))
}

/// `mindate`/`maxdate` (`YYYY[/MM[/DD]]`) as comparable `YYYY/MM/DD` bounds.
fn date_range(params: &[(String, String)]) -> (String, String) {
    let pad = |date: Option<String>, fill: &str, default: &str| {
        let date = date.unwrap_or_else(|| default.to_owned());
        let parts = date.split('/').count();
        match parts {
            1 => format!("{date}/{fill}"),
            2 => format!("{date}/{}", &fill[3..]),
            _ => date,
        }
    };
    (
        pad(param(params, "mindate"), "01/01", "0000"),
        pad(param(params, "maxdate"), "12/31", "9999"),
    )
}

fn ids(params: &[(String, String)]) -> Vec<String> {
    param(params, "id")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
        .collect()
}

fn esummary(params: &[(String, String)]) -> Option<Reply> {
    if param(params, "retmode").as_deref() != Some("json") {
        return None;
    }
    let db = param(params, "db").unwrap_or_default();
    let ids = ids(params);
    if ids.is_empty() {
        return Some(Reply::json(
            200,
            &json!({"header": {"type": "esummary", "version": "0.3"}, "esummaryresult": ["Empty id list - nothing todo"]}),
        ));
    }
    let mut result = json!({"uids": ids});
    for id in &ids {
        let record = match db.as_str() {
            "pubmed" => ARTICLES.iter().find(|a| a.pmid == id).map(pubmed_summary),
            "gds" => GEO.iter().find(|g| g.uid == id).map(gds_summary),
            "sra" => SRA.iter().find(|s| s.uid == id).map(sra_summary),
            _ => return None,
        };
        result[id.as_str()] =
            record.unwrap_or_else(|| json!({"uid": id, "error": "cannot get document summary"}));
    }
    Some(Reply::json(
        200,
        &json!({"header": {"type": "esummary", "version": "0.3"}, "result": result}),
    ))
}

fn pubmed_summary(a: &Article) -> Value {
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

fn gds_summary(g: &GeoRecord) -> Value {
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

fn sra_summary(s: &SraRecord) -> Value {
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

fn efetch(params: &[(String, String)]) -> Option<Reply> {
    let db = param(params, "db").unwrap_or_default();
    let ids = ids(params);
    match (
        db.as_str(),
        param(params, "rettype").as_deref(),
        param(params, "retmode").as_deref(),
    ) {
        ("pubmed", None | Some("xml" | "abstract"), Some("xml")) => {
            let articles: String = ids
                .iter()
                .filter_map(|id| ARTICLES.iter().find(|a| a.pmid == id))
                .map(pubmed_article)
                .collect();
            Some(Reply::new(
                200,
                "text/xml; charset=UTF-8",
                format!(
                    "<?xml version=\"1.0\" ?>\n<!DOCTYPE PubmedArticleSet PUBLIC \"-//NLM//DTD PubMedArticle, 1st January 2024//EN\" \"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_240101.dtd\">\n<PubmedArticleSet>\n{articles}</PubmedArticleSet>\n"
                ),
            ))
        }
        ("sra", Some("runinfo"), _) => Some(Reply::new(200, "text/csv", runinfo(&ids))),
        _ => None,
    }
}

fn pubmed_article(a: &Article) -> String {
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
fn runinfo(ids: &[String]) -> String {
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
