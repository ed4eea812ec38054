//! A stand-in for NCBI's E-utilities on 127.0.0.1, written from their documented formats:
//! `esearch.fcgi` and `esummary.fcgi` in JSON (counts as strings, `uids` in the order asked,
//! SRA `expxml` and `runs` as escaped XML fragments), `efetch.fcgi` as PubMed XML or SRA
//! `runinfo` CSV, over GET or a POST form.
//!
//! Like NCBI it limits each key (or, without one, the address) to 3 requests a second, 10 with
//! an `api_key`, and answers the real 429 body above that, with `X-RateLimit-*` headers; it
//! counts those violations so a test can assert a client never caused one. Stricter than NCBI,
//! it refuses (400) a request without `tool` and `email`, so a client that forgets them fails
//! loudly. It serves the invented records of `records.rs`; anything else is a 404 naming it.

mod records;
mod render;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::fake_http::{FakeHttp, Reply, Seen};
pub use records::{ARTICLES, Article, GEO, GeoRecord, SRA, SraRecord};
use render::{gds_summary, pubmed_article, pubmed_summary, runinfo, sra_summary};

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
