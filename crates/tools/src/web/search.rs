//! `websearch`: ask several engines at once, drop a result set unrelated to the query, merge the
//! rest (alternating between engines, one entry per address), and report each engine's outcome.
//! A search every engine turned away fails rather than passing for "nothing found".

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinSet;

use super::common;
use super::engines::{Engine, Hit, Outcome};
use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};

/// Engines are asked for what a browser is sent; most turn away an unknown client outright.
const BROWSER_AGENT: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36";
const ENGINE_TIMEOUT: Duration = Duration::from_secs(15);
/// Bytes of a results page read at most.
const MAX_PAGE: usize = 4 * 1024 * 1024;
const STOPWORDS: &[&str] = &[
    "the", "and", "for", "with", "how", "what", "from", "that", "this", "are", "was", "who", "why",
    "when", "where", "which", "into", "your", "you",
];

#[derive(Debug, Clone)]
pub struct WebSearch {
    engines: Vec<Engine>,
}

impl Default for WebSearch {
    /// Brave then Bing, the catalogue's default `tools.websearch_engines`.
    fn default() -> Self {
        Self::new(vec![Engine::brave(), Engine::bing()])
    }
}

impl WebSearch {
    pub fn new(engines: Vec<Engine>) -> Self {
        Self { engines }
    }
}

#[async_trait::async_trait]
impl Tool for WebSearch {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::WEBSEARCH
    }

    async fn call(&self, _ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let query = common::opt_str(args, "query")?
            .map(str::trim)
            .filter(|query| !query.is_empty())
            .ok_or_else(|| ToolError::model("`query` is required"))?;
        let page = common::count(args, "page", 1, 10)?;
        let max_results =
            usize::try_from(common::count(args, "max_results", 10, 50)?).unwrap_or(10);
        let full_query = match common::opt_str(args, "site")? {
            Some(site) if !site.trim().is_empty() => format!("{query} site:{}", site.trim()),
            _ => query.to_owned(),
        };
        if self.engines.is_empty() {
            return Err(ToolError::model(
                "no search engine is configured (tools.websearch_engines)",
            ));
        }
        let outcomes = ask_all(&self.engines, &full_query, page).await;
        let outcomes: Vec<(&'static str, Outcome)> = outcomes
            .into_iter()
            .map(|(name, outcome)| (name, relevance_gate(query, outcome)))
            .collect();
        let turned_away = outcomes
            .iter()
            .all(|(_, outcome)| matches!(outcome, Outcome::Challenge(_) | Outcome::Failed(_)));
        if turned_away {
            return Err(ToolError::model(format!(
                "every search engine was turned away: {}",
                report(&outcomes)
            )));
        }
        Ok(ToolOutput::text(render(&outcomes, max_results)))
    }
}

/// Every engine asked at once; outcomes in the configured order.
pub(crate) async fn ask_all(
    engines: &[Engine],
    query: &str,
    page: u64,
) -> Vec<(&'static str, Outcome)> {
    let client = crate::tls::client_builder()
        .user_agent(BROWSER_AGENT)
        .no_proxy()
        .timeout(ENGINE_TIMEOUT)
        .build();
    let client = match client {
        Ok(client) => client,
        Err(error) => {
            let failed = Outcome::Failed(error.to_string());
            return engines.iter().map(|e| (e.name(), failed.clone())).collect();
        }
    };
    let mut tasks = JoinSet::new();
    for (index, engine) in engines.iter().enumerate() {
        let (client, engine, query) = (client.clone(), engine.clone(), query.to_owned());
        tasks.spawn(async move { (index, ask(&client, &engine, &query, page).await) });
    }
    let mut outcomes: Vec<Outcome> = vec![Outcome::Failed("did not finish".into()); engines.len()];
    while let Some(joined) = tasks.join_next().await {
        if let Ok((index, outcome)) = joined
            && let Some(slot) = outcomes.get_mut(index)
        {
            *slot = outcome;
        }
    }
    engines.iter().map(Engine::name).zip(outcomes).collect()
}

async fn ask(client: &reqwest::Client, engine: &Engine, query: &str, page: u64) -> Outcome {
    let Some(url) = engine.request_url(query, page) else {
        return Outcome::Failed(format!("`{}` is not a URL", engine.base));
    };
    let sent = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT_LANGUAGE, "en-US,en;q=0.8")
        .send();
    let mut response = match tokio::time::timeout(ENGINE_TIMEOUT, sent).await {
        Ok(Ok(response)) => response,
        Ok(Err(error)) => {
            return Outcome::Failed(super::WebError::request(url.as_str(), &error).to_string());
        }
        Err(_) => return Outcome::Failed("timed out".into()),
    };
    let status = response.status().as_u16();
    let charset = common::charset(&response);
    match common::read_bounded(&mut response, MAX_PAGE, url.as_str()).await {
        Ok((body, _)) => engine.read(status, &common::decode(&body, charset.as_deref())),
        Err(error) => Outcome::Failed(error.to_string()),
    }
}

/// The words of the query a related result would mention.
fn terms(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|word| word.chars().count() >= 3 && !STOPWORDS.contains(&word.as_str()))
        .collect()
}

/// Discards a result set in which fewer than a quarter of the results mention any word of the
/// query: what an engine answers when it did not really search (a blocked or rewritten query).
pub(crate) fn relevance_gate(query: &str, outcome: Outcome) -> Outcome {
    let Outcome::Results(hits) = outcome else {
        return outcome;
    };
    let terms = terms(query);
    if terms.is_empty() {
        return Outcome::Results(hits);
    }
    let related = hits
        .iter()
        .filter(|hit| {
            let haystack = format!("{} {} {}", hit.title, hit.url, hit.snippet).to_lowercase();
            terms.iter().any(|term| haystack.contains(term.as_str()))
        })
        .count();
    if related * 4 >= hits.len() && related > 0 {
        Outcome::Results(hits)
    } else {
        Outcome::Unrelated(hits.len())
    }
}

pub(crate) fn report(outcomes: &[(&'static str, Outcome)]) -> String {
    outcomes
        .iter()
        .map(|(name, outcome)| match outcome {
            Outcome::Results(hits) => format!("{name}: {}", results(hits.len())),
            Outcome::Empty => format!("{name}: no results"),
            Outcome::Challenge(what) => format!("{name}: turned away by {what}"),
            Outcome::Failed(why) => format!("{name}: failed ({why})"),
            Outcome::Unrelated(n) => {
                format!(
                    "{name}: {} discarded as unrelated to the query",
                    results(*n)
                )
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn results(n: usize) -> String {
    if n == 1 {
        "1 result".to_owned()
    } else {
        format!("{n} results")
    }
}

/// The results alternating between engines in their order, one entry per address (naming
/// every engine that listed it), at most `max_results`.
fn merge(
    outcomes: &[(&'static str, Outcome)],
    max_results: usize,
) -> Vec<(Hit, Vec<&'static str>)> {
    let lists: Vec<(&'static str, &[Hit])> = outcomes
        .iter()
        .filter_map(|(name, outcome)| match outcome {
            Outcome::Results(hits) => Some((*name, hits.as_slice())),
            _ => None,
        })
        .collect();
    let mut merged: Vec<(Hit, Vec<&'static str>)> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let longest = lists.iter().map(|(_, hits)| hits.len()).max().unwrap_or(0);
    for rank in 0..longest {
        for (name, hits) in &lists {
            let Some(hit) = hits.get(rank) else { continue };
            match seen.get(&address_key(&hit.url)) {
                Some(&at) => {
                    if let Some((_, engines)) = merged.get_mut(at) {
                        engines.push(name);
                    }
                }
                None => {
                    seen.insert(address_key(&hit.url), merged.len());
                    merged.push((hit.clone(), vec![name]));
                }
            }
        }
    }
    merged.truncate(max_results);
    merged
}

/// An address compared loosely: scheme, `www.`, fragment and a final `/` do not matter.
pub(crate) fn address_key(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.split('#').next().unwrap_or(rest);
    rest.trim_start_matches("www.")
        .trim_end_matches('/')
        .to_lowercase()
}

fn render(outcomes: &[(&'static str, Outcome)], max_results: usize) -> String {
    let merged = merge(outcomes, max_results);
    let mut out = format!("Engines: {}\n", report(outcomes));
    if merged.is_empty() {
        out.push_str("\nNo results.");
        return out;
    }
    for (index, (hit, engines)) in merged.iter().enumerate() {
        out.push_str(&format!("\n{}. {}\n   {}\n", index + 1, hit.title, hit.url));
        if !hit.snippet.is_empty() {
            out.push_str(&format!("   {}\n", hit.snippet));
        }
        out.push_str(&format!("   [{}]\n", engines.join(", ")));
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(url: &str, title: &str) -> Hit {
        Hit {
            title: title.into(),
            url: url.into(),
            snippet: String::new(),
        }
    }

    #[test]
    fn merge_alternates_and_joins_the_same_address() {
        let outcomes = vec![
            (
                "brave",
                Outcome::Results(vec![hit("https://a.org/", "A"), hit("https://b.org", "B")]),
            ),
            (
                "bing",
                Outcome::Results(vec![
                    hit("http://www.a.org", "A2"),
                    hit("https://c.org", "C"),
                ]),
            ),
        ];
        let merged = merge(&outcomes, 10);
        let summary: Vec<(&str, Vec<&str>)> = merged
            .iter()
            .map(|(hit, engines)| (hit.title.as_str(), engines.clone()))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("A", vec!["brave", "bing"]),
                ("B", vec!["brave"]),
                ("C", vec!["bing"])
            ]
        );
        assert_eq!(merge(&outcomes, 1).len(), 1);
    }

    #[test]
    fn the_gate_drops_a_set_that_is_not_about_the_query() {
        let unrelated = Outcome::Results(vec![
            hit("https://x.org", "Cooking"),
            hit("https://y.org", "Sports"),
        ]);
        assert_eq!(
            relevance_gate("nextflow dsl2 modules", unrelated),
            Outcome::Unrelated(2)
        );
        let related = Outcome::Results(vec![
            hit("https://nextflow.io", "Nextflow docs"),
            hit("https://y.org", "Sports"),
        ]);
        assert!(matches!(
            relevance_gate("nextflow dsl2", related),
            Outcome::Results(_)
        ));
    }
}
