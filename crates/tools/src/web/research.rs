//! `web_research`: a research turn's first pass in one call. Several `websearch` queries made
//! from the question, the pages most of them agree on read through `webfetch`'s guarded path
//! (every page and every redirect must be public), the literature searched when the question is
//! biomedical, and the sentences most about the question quoted as a brief with numbered
//! sources. There is no model in here: every claim is a source's own sentence.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use serde_json::Value;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::brief::{self, Gathered};
use super::common;
use super::engines::{Engine, Outcome};
use super::fetch::{self, Readable};
use super::guard::Reach;
use super::literature::{Article, Literature};
use super::queries::{self, Depth};
use super::search;
use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};

/// A question longer than this is a document, not a question.
const MAX_QUESTION_CHARS: usize = 500;
/// Characters of a page's text searched for passages: a reference page's answer is rarely
/// further in, and scoring a whole book would hold up the call.
const MAX_PAGE_CHARS: usize = 200_000;
/// One page's time, redirects included; the call's budget bounds them all.
const PAGE_TIMEOUT: Duration = Duration::from_secs(20);
/// Queries in flight at once: every one goes to every engine, and a burst of identical-looking
/// searches from one address is what draws an engine's bot check.
const QUERIES_AT_ONCE: usize = 2;
/// Reciprocal rank fusion's usual damping: a first place counts for more than a tenth, but not
/// overwhelmingly.
const FUSION_K: f64 = 60.0;

#[derive(Debug, Clone)]
pub struct WebResearch {
    engines: Vec<Engine>,
    literature: Option<Arc<dyn Literature>>,
    reach: Reach,
}

impl WebResearch {
    /// Research with `engines` (as `websearch` asks them) and, for biomedical questions,
    /// `literature` (PubMed); without one, a biomedical question is researched on the web only
    /// and the brief says so.
    pub fn new(engines: Vec<Engine>, literature: Option<Arc<dyn Literature>>) -> Self {
        Self {
            engines,
            literature,
            reach: Reach::default(),
        }
    }

    /// For tests against fake pages on 127.0.0.1 / `[::1]` only, as
    /// [`WebFetch::allowing_loopback_for_tests`](super::WebFetch::allowing_loopback_for_tests):
    /// loopback becomes reachable; private, link-local and the rest stay refused.
    #[must_use]
    pub fn allowing_loopback_for_tests(mut self) -> Self {
        self.reach = Reach { loopback: true };
        self
    }
}

/// One query and what each engine answered it.
#[derive(Debug, Clone)]
pub(crate) struct Searched {
    pub(crate) query: String,
    pub(crate) outcomes: Vec<(&'static str, Outcome)>,
}

/// What asking the literature came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Consulted {
    /// The question is not biomedical: the literature was not asked.
    NotAsked,
    /// The question is biomedical but no literature client is configured.
    NotConfigured,
    Found(Vec<Article>),
    Failed(String),
}

/// A page read: the address it ended at, its title and its text.
#[derive(Debug, Clone)]
pub(crate) struct Read {
    pub(crate) url: String,
    pub(crate) title: String,
    pub(crate) text: String,
    pub(crate) markdown: bool,
}

/// A result that gave the brief nothing, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skipped {
    pub(crate) url: String,
    pub(crate) reason: String,
}

/// A result worth reading: where, the engine's title, and how the queries found it.
#[derive(Debug, Clone)]
struct Candidate {
    url: String,
    title: String,
    queries: BTreeSet<usize>,
    fused: f64,
    first: usize,
}

#[async_trait::async_trait]
impl Tool for WebResearch {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::WEB_RESEARCH
    }

    async fn call(&self, _ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        if !args.is_object() {
            return Err(ToolError::model(
                "web_research takes an object of arguments: {\"question\": \"…\", \"depth\": \"quick\" | \"standard\" | \"deep\"}",
            ));
        }
        let question = question(args)?;
        let depth = Depth::from_args(args)?;
        if self.engines.is_empty() {
            return Err(ToolError::model(
                "no search engine is configured (research.engines or tools.websearch_engines)",
            ));
        }
        let deadline = Instant::now() + depth.budget();
        let queries = queries::plan(&question, depth);
        let (searched, consulted) = tokio::join!(
            search_all(&self.engines, &queries, &question, deadline),
            self.consult(&question, depth, deadline),
        );
        let articles: &[Article] = match &consulted {
            Consulted::Found(articles) => articles,
            _ => &[],
        };
        if turned_away(&searched) && articles.is_empty() {
            let first = searched.first().map(|s| s.outcomes.as_slice());
            return Err(ToolError::model(format!(
                "every search engine was turned away: {}",
                search::report(first.unwrap_or_default())
            )));
        }
        let candidates = rank(&searched);
        let (read, skipped) = read_pages(&candidates, depth, self.reach, deadline).await;
        if read.is_empty() && articles.is_empty() && !skipped.is_empty() {
            let reasons: Vec<String> = skipped
                .iter()
                .map(|s| format!("{}: {}", s.url, s.reason))
                .collect();
            return Err(ToolError::model(format!(
                "none of the {} pages found for the question could be read: {}",
                skipped.len(),
                reasons.join("; ")
            )));
        }
        Ok(ToolOutput::text(brief::compose(&Gathered {
            question: &question,
            depth,
            searched: &searched,
            consulted: &consulted,
            read: &read,
            skipped,
        })))
    }
}

fn question(args: &Value) -> Result<String, ToolError> {
    let question = common::opt_str(args, "question")?
        .map(|text| text.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|text| !text.is_empty())
        .ok_or_else(|| ToolError::model("`question` is required"))?;
    let chars = question.chars().count();
    if chars > MAX_QUESTION_CHARS {
        return Err(ToolError::model(format!(
            "`question` is {chars} characters; ask it in at most {MAX_QUESTION_CHARS}"
        )));
    }
    Ok(question)
}

impl WebResearch {
    async fn consult(&self, question: &str, depth: Depth, deadline: Instant) -> Consulted {
        if !queries::is_biomedical(question) {
            return Consulted::NotAsked;
        }
        let Some(literature) = &self.literature else {
            return Consulted::NotConfigured;
        };
        let max = depth.articles();
        let query = queries::keywords(question);
        let asked = literature.search(&query, max);
        match tokio::time::timeout_at(deadline, asked).await {
            Ok(Ok(mut articles)) => {
                articles.truncate(max);
                Consulted::Found(articles)
            }
            Ok(Err(why)) => Consulted::Failed(why),
            Err(_) => Consulted::Failed(format!(
                "no answer within the {} s budget",
                depth.budget().as_secs()
            )),
        }
    }
}

/// Every query asked of every engine, [`QUERIES_AT_ONCE`] queries in flight, each result set
/// kept only if it is about the question (websearch's gate); outcomes in the queries' order.
async fn search_all(
    engines: &[Engine],
    queries: &[String],
    question: &str,
    deadline: Instant,
) -> Vec<Searched> {
    let mut tasks = JoinSet::new();
    let launch = |tasks: &mut JoinSet<_>, index: usize| {
        let query = queries.get(index).cloned().unwrap_or_default();
        let engines = engines.to_vec();
        tasks.spawn(async move { (index, search::ask_all(&engines, &query, 1).await) });
    };
    let mut next = 0;
    while next < queries.len().min(QUERIES_AT_ONCE) {
        launch(&mut tasks, next);
        next += 1;
    }
    let unfinished: Vec<(&'static str, Outcome)> = engines
        .iter()
        .map(|engine| {
            let why = "did not answer within the research budget".to_owned();
            (engine.name(), Outcome::Failed(why))
        })
        .collect();
    let mut answered: Vec<Vec<(&'static str, Outcome)>> = vec![unfinished; queries.len()];
    while let Ok(Some(joined)) = tokio::time::timeout_at(deadline, tasks.join_next()).await {
        if next < queries.len() {
            launch(&mut tasks, next);
            next += 1;
        }
        if let Ok((index, outcomes)) = joined
            && let Some(slot) = answered.get_mut(index)
        {
            *slot = outcomes
                .into_iter()
                .map(|(name, outcome)| (name, search::relevance_gate(question, outcome)))
                .collect();
        }
    }
    tasks.abort_all();
    queries
        .iter()
        .cloned()
        .zip(answered)
        .map(|(query, outcomes)| Searched { query, outcomes })
        .collect()
}

/// Whether no engine answered any query at all: each one was turned away or failed.
fn turned_away(searched: &[Searched]) -> bool {
    searched.iter().all(|s| {
        s.outcomes
            .iter()
            .all(|(_, outcome)| matches!(outcome, Outcome::Challenge(_) | Outcome::Failed(_)))
    })
}

/// The results of every query and engine, one per address, the ones more queries found first,
/// then by their fused ranks (the sum of 1 / (k + rank) over every list that has them).
fn rank(searched: &[Searched]) -> Vec<Candidate> {
    let mut list: Vec<Candidate> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for (query, s) in searched.iter().enumerate() {
        for (_, outcome) in &s.outcomes {
            let Outcome::Results(hits) = outcome else {
                continue;
            };
            for (rank, hit) in hits.iter().enumerate() {
                let key = search::address_key(&hit.url);
                let index = *at.entry(key).or_insert_with(|| {
                    list.push(Candidate {
                        url: hit.url.clone(),
                        title: hit.title.clone(),
                        queries: BTreeSet::new(),
                        fused: 0.0,
                        first: list.len(),
                    });
                    list.len() - 1
                });
                if let Some(candidate) = list.get_mut(index) {
                    candidate.queries.insert(query);
                    candidate.fused += 1.0 / (FUSION_K + rank as f64 + 1.0);
                }
            }
        }
    }
    list.sort_by(|a, b| {
        b.queries
            .len()
            .cmp(&a.queries.len())
            .then(b.fused.total_cmp(&a.fused))
            .then(a.first.cmp(&b.first))
    });
    list
}

/// The best candidates read at once, the depth's number of them; a page that cannot be read is
/// replaced by the next candidate (as many again at most) while the budget lasts. Pages come
/// back in the candidates' order, the same page reached twice once.
async fn read_pages(
    candidates: &[Candidate],
    depth: Depth,
    reach: Reach,
    deadline: Instant,
) -> (Vec<Read>, Vec<Skipped>) {
    let wanted = depth.pages();
    let limit = candidates.len().min(wanted * 2);
    let mut outcomes: Vec<Option<Result<Read, String>>> = vec![None; limit];
    let mut tasks = JoinSet::new();
    let launch = |tasks: &mut JoinSet<(usize, Result<Read, String>)>, index: usize| {
        let candidate: &Candidate = &candidates[index];
        let (url, title) = (candidate.url.clone(), candidate.title.clone());
        tasks.spawn(async move { (index, read_page(&url, title, reach).await) });
    };
    let mut next = 0;
    while next < limit.min(wanted) {
        launch(&mut tasks, next);
        next += 1;
    }
    loop {
        let joined = match tokio::time::timeout_at(deadline, tasks.join_next()).await {
            Ok(Some(joined)) => joined,
            Ok(None) => break,
            Err(_) => {
                tasks.abort_all();
                break;
            }
        };
        let Ok((index, outcome)) = joined else {
            continue;
        };
        let failed = outcome.is_err();
        if let Some(slot) = outcomes.get_mut(index) {
            *slot = Some(outcome);
        }
        if failed && next < limit {
            launch(&mut tasks, next);
            next += 1;
        }
    }
    let mut read: Vec<Read> = Vec::new();
    let mut skipped = Vec::new();
    for (candidate, outcome) in candidates.iter().zip(outcomes).take(next) {
        match outcome {
            Some(Ok(page)) => {
                let key = search::address_key(&page.url);
                match read.iter().find(|r| search::address_key(&r.url) == key) {
                    Some(same) => skipped.push(Skipped {
                        url: candidate.url.clone(),
                        reason: format!("the same page as {}", same.url),
                    }),
                    None => read.push(page),
                }
            }
            Some(Err(reason)) => skipped.push(Skipped {
                url: candidate.url.clone(),
                reason,
            }),
            None => skipped.push(Skipped {
                url: candidate.url.clone(),
                reason: format!("not read within the {} s budget", depth.budget().as_secs()),
            }),
        }
    }
    (read, skipped)
}

/// One page through `webfetch`'s guarded path, as text.
async fn read_page(url: &str, found_as: String, reach: Reach) -> Result<Read, String> {
    let parsed = Url::parse(url)
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https") && url.host_str().is_some())
        .ok_or_else(|| "not an http or https URL".to_owned())?;
    let fetched = tokio::time::timeout(PAGE_TIMEOUT, fetch::fetch(parsed, reach, PAGE_TIMEOUT))
        .await
        .map_err(|_| format!("no answer within {} s", PAGE_TIMEOUT.as_secs()))?
        .map_err(|error| error.to_string())?;
    let ended_at = fetched.url.to_string();
    // Parsing a large page is CPU work: off the runtime's threads.
    let Readable {
        title,
        text,
        markdown,
    } = tokio::task::spawn_blocking(move || fetch::readable(&fetched))
        .await
        .map_err(|_| "the page could not be converted to text".to_owned())?;
    if text.trim().is_empty() {
        return Err("the page has no text".to_owned());
    }
    let text = match common::cut_chars(&text, MAX_PAGE_CHARS) {
        (kept, Some(_)) => kept.to_owned(),
        (_, None) => text,
    };
    let title = title
        .filter(|title| !title.trim().is_empty())
        .or_else(|| Some(found_as).filter(|title| !title.trim().is_empty()))
        .unwrap_or_else(|| ended_at.clone());
    Ok(Read {
        url: ended_at,
        title,
        text,
        markdown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::engines::Hit;

    fn hit(url: &str) -> Hit {
        Hit {
            title: url.into(),
            url: url.into(),
            snippet: String::new(),
        }
    }

    fn searched(lists: &[&[&str]]) -> Vec<Searched> {
        lists
            .iter()
            .map(|urls| Searched {
                query: "q".into(),
                outcomes: vec![(
                    "searxng",
                    Outcome::Results(urls.iter().map(|url| hit(url)).collect()),
                )],
            })
            .collect()
    }

    #[test]
    fn pages_more_queries_found_rank_first_then_by_rank() {
        let ranked = rank(&searched(&[
            &["https://a.org/", "https://b.org/", "https://c.org/"],
            &["https://c.org", "https://d.org/"],
            &["https://www.c.org/", "https://b.org/"],
        ]));
        let urls: Vec<&str> = ranked.iter().map(|c| c.url.as_str()).collect();
        assert_eq!(
            urls,
            vec![
                "https://c.org/",
                "https://b.org/",
                "https://a.org/",
                "https://d.org/"
            ]
        );
        assert_eq!(ranked[0].queries, BTreeSet::from([0, 1, 2]));
    }

    #[test]
    fn turned_away_means_no_engine_answered_any_query() {
        let refused = Searched {
            query: "q".into(),
            outcomes: vec![("bing", Outcome::Challenge("a CAPTCHA".into()))],
        };
        let empty = Searched {
            query: "q".into(),
            outcomes: vec![("bing", Outcome::Empty)],
        };
        assert!(turned_away(&[refused.clone(), refused.clone()]));
        assert!(!turned_away(&[refused, empty]));
    }

    #[test]
    fn questions_are_checked() {
        let message = |args: Value| match question(&args) {
            Err(ToolError::Model { message }) => message,
            other => format!("{other:?}"),
        };
        assert_eq!(message(serde_json::json!({})), "`question` is required");
        assert_eq!(
            message(serde_json::json!({"question": " \n\t "})),
            "`question` is required"
        );
        assert_eq!(
            message(serde_json::json!({"question": 42})),
            "`question` must be a string"
        );
        assert_eq!(
            message(serde_json::json!({"question": "x".repeat(501)})),
            "`question` is 501 characters; ask it in at most 500"
        );
        assert_eq!(
            question(&serde_json::json!({"question": " a\n  b "})).ok(),
            Some("a b".to_owned())
        );
    }
}
