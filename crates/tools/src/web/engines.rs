//! The search engines `websearch` asks: where each is asked, and how its answer is read —
//! results, nothing found, or a challenge page (a CAPTCHA, a rate limit) that must be named
//! rather than counted as nothing found.

use std::rc::Rc;

use markup5ever_rcdom::Node;
use reqwest::Url;
use serde_json::Value;

use super::dom::{self, Dom};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    Brave,
    Bing,
    DuckDuckGo,
    /// A SearXNG instance's JSON API (`format=json` must be enabled in its settings).
    Searxng,
}

/// One engine and the address it is asked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Engine {
    pub kind: EngineKind,
    pub base: String,
}

/// One result as an engine listed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// What asking one engine came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Results(Vec<Hit>),
    /// The engine answered normally and found nothing.
    Empty,
    /// The engine turned the search away: a CAPTCHA, a bot check, a rate limit.
    Challenge(String),
    /// The request failed or the answer could not be read.
    Failed(String),
    /// Results came back but none of them is about the query (the relevance gate).
    Unrelated(usize),
}

impl Engine {
    pub fn brave() -> Self {
        Self::at(EngineKind::Brave, "https://search.brave.com/search")
    }

    pub fn bing() -> Self {
        Self::at(EngineKind::Bing, "https://www.bing.com/search")
    }

    pub fn duckduckgo() -> Self {
        Self::at(EngineKind::DuckDuckGo, "https://html.duckduckgo.com/html/")
    }

    /// A SearXNG instance at `base` (e.g. `http://localhost:8888/`); `/search` is added.
    pub fn searxng(base: &str) -> Self {
        Self::at(
            EngineKind::Searxng,
            &format!("{}/search", base.trim_end_matches('/')),
        )
    }

    /// `kind` asked at the exact address `base` (tests point engines at a fake server).
    pub fn at(kind: EngineKind, base: &str) -> Self {
        Self {
            kind,
            base: base.to_owned(),
        }
    }

    /// An engine of `tools.websearch_engines`: `brave`, `bing`, `duckduckgo`, or
    /// `searxng:<http(s) base URL>`; `None` for anything else.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.trim() {
            "brave" => Some(Self::brave()),
            "bing" => Some(Self::bing()),
            "duckduckgo" => Some(Self::duckduckgo()),
            other => other
                .strip_prefix("searxng:")
                .filter(|base| {
                    base.strip_prefix("http://")
                        .or_else(|| base.strip_prefix("https://"))
                        .is_some_and(|host| !host.is_empty())
                })
                .map(Self::searxng),
        }
    }

    pub fn name(&self) -> &'static str {
        match self.kind {
            EngineKind::Brave => "brave",
            EngineKind::Bing => "bing",
            EngineKind::DuckDuckGo => "duckduckgo",
            EngineKind::Searxng => "searxng",
        }
    }

    /// The address of results page `page` (1-based) for `query`.
    pub fn request_url(&self, query: &str, page: u64) -> Option<Url> {
        let mut url = Url::parse(&self.base).ok()?;
        let skip = page.saturating_sub(1);
        {
            let mut pairs = url.query_pairs_mut();
            pairs.append_pair("q", query);
            match self.kind {
                EngineKind::Brave => pairs.append_pair("offset", &skip.to_string()),
                EngineKind::Bing => pairs.append_pair("first", &(skip * 10 + 1).to_string()),
                EngineKind::DuckDuckGo => pairs.append_pair("s", &(skip * 30).to_string()),
                EngineKind::Searxng => pairs
                    .append_pair("format", "json")
                    .append_pair("pageno", &page.to_string()),
            };
        }
        Some(url)
    }

    /// Reads an engine's answer.
    pub fn read(&self, status: u16, body: &str) -> Outcome {
        if status == 429 {
            return Outcome::Challenge("a rate limit (HTTP 429)".into());
        }
        let hits = match self.kind {
            EngineKind::Searxng => match searxng_hits(body) {
                Some(hits) => hits,
                None if challenge_marker(body).is_some() || status == 403 => Vec::new(),
                None => {
                    return Outcome::Failed(format!(
                        "HTTP {status}, not a JSON answer (is `json` in the instance's search.formats?)"
                    ));
                }
            },
            _ => html_hits(self.kind, body),
        };
        if !hits.is_empty() {
            return Outcome::Results(hits);
        }
        if let Some(marker) = challenge_marker(body) {
            return Outcome::Challenge(format!("a challenge page ({marker})"));
        }
        if status == 403 {
            return Outcome::Challenge("a refusal (HTTP 403)".into());
        }
        if !(200..300).contains(&status) {
            return Outcome::Failed(format!("HTTP {status}"));
        }
        Outcome::Empty
    }
}

/// What a bot check says about itself, checked only when no result could be read (a results
/// page may well mention a CAPTCHA in a snippet).
fn challenge_marker(body: &str) -> Option<&'static str> {
    let lower = body.to_lowercase();
    [
        ("captcha", "CAPTCHA"),
        ("are you a robot", "robot check"),
        ("unusual traffic", "unusual traffic"),
        ("verify you are human", "human verification"),
        ("challenge-platform", "bot challenge"),
        ("cf-challenge", "bot challenge"),
        ("anomaly-modal", "anomaly check"),
    ]
    .into_iter()
    .find(|(needle, _)| lower.contains(needle))
    .map(|(_, name)| name)
}

fn searxng_hits(body: &str) -> Option<Vec<Hit>> {
    let value: Value = serde_json::from_str(body).ok()?;
    let results = value.get("results")?.as_array()?;
    let field = |item: &Value, name: &str| {
        item.get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    Some(
        results
            .iter()
            .map(|item| Hit {
                title: field(item, "title"),
                url: field(item, "url"),
                snippet: field(item, "content"),
            })
            .filter(|hit| hit.url.starts_with("http"))
            .collect(),
    )
}

fn html_hits(kind: EngineKind, body: &str) -> Vec<Hit> {
    let Some(page) = Dom::parse(body) else {
        return Vec::new();
    };
    let blocks = dom::find_all(&page.document, &|node| match kind {
        EngineKind::Bing => {
            dom::tag(node).as_deref() == Some("li") && dom::has_class(node, "b_algo")
        }
        EngineKind::DuckDuckGo => {
            dom::has_class(node, "result") && !dom::has_class(node, "result--ad")
        }
        _ => {
            dom::has_class(node, "snippet")
                && dom::attr(node, "data-type").as_deref() == Some("web")
        }
    });
    blocks
        .iter()
        .filter_map(|block| match kind {
            EngineKind::Bing => hit(block, &|n| dom::tag(n).as_deref() == Some("h2"), &|n| {
                dom::tag(n).as_deref() == Some("p")
            }),
            EngineKind::DuckDuckGo => hit(block, &|n| dom::has_class(n, "result__a"), &|n| {
                dom::has_class(n, "result__snippet")
            }),
            _ => hit(block, &|n| dom::has_class(n, "title"), &|n| {
                dom::has_class(n, "snippet-description") || dom::has_class(n, "generic-snippet")
            }),
        })
        .collect()
}

/// A result block read: its title element, the first link in the block (inside the title when
/// the title holds one) and its snippet element.
fn hit(
    block: &Rc<Node>,
    is_title: &dyn Fn(&Node) -> bool,
    is_snippet: &dyn Fn(&Node) -> bool,
) -> Option<Hit> {
    let is_link = |n: &Node| dom::tag(n).as_deref() == Some("a") && dom::attr(n, "href").is_some();
    let title = dom::find(block, is_title);
    let link = title
        .as_ref()
        .and_then(|title| dom::find(title, &is_link))
        .or_else(|| dom::find(block, &is_link))?;
    let url = real_url(&dom::attr(&link, "href")?)?;
    let title = dom::text(title.as_ref().unwrap_or(&link));
    let snippet = dom::find(block, is_snippet)
        .map(|node| dom::text(&node))
        .unwrap_or_default();
    Some(Hit {
        title,
        url,
        snippet,
    })
}

/// The address a result leads to: DuckDuckGo wraps it in `//duckduckgo.com/l/?uddg=<address>`.
fn real_url(href: &str) -> Option<String> {
    let absolute = if href.starts_with("//") {
        format!("https:{href}")
    } else {
        href.to_owned()
    };
    let url = Url::parse(&absolute).ok()?;
    if let Some((_, target)) = url.query_pairs().find(|(key, _)| key == "uddg") {
        return Some(target.into_owned());
    }
    matches!(url.scheme(), "http" | "https").then_some(absolute)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_are_named_in_the_configuration() {
        assert_eq!(Engine::from_name("brave"), Some(Engine::brave()));
        assert_eq!(Engine::from_name(" bing "), Some(Engine::bing()));
        assert_eq!(Engine::from_name("duckduckgo"), Some(Engine::duckduckgo()));
        assert_eq!(
            Engine::from_name("searxng:http://localhost:8888/"),
            Some(Engine::at(
                EngineKind::Searxng,
                "http://localhost:8888/search"
            ))
        );
        assert_eq!(Engine::from_name("altavista"), None);
    }

    #[test]
    fn each_engine_is_asked_for_the_page() {
        let url = |engine: Engine| {
            engine
                .request_url("a b", 3)
                .map(|url| url.to_string())
                .unwrap_or_default()
        };
        assert_eq!(
            url(Engine::brave()),
            "https://search.brave.com/search?q=a+b&offset=2"
        );
        assert_eq!(
            url(Engine::bing()),
            "https://www.bing.com/search?q=a+b&first=21"
        );
        assert_eq!(
            url(Engine::duckduckgo()),
            "https://html.duckduckgo.com/html/?q=a+b&s=60"
        );
        assert_eq!(
            url(Engine::searxng("http://127.0.0.1:8888")),
            "http://127.0.0.1:8888/search?q=a+b&format=json&pageno=3"
        );
        assert_eq!(
            Engine::at(EngineKind::Bing, "not a url").request_url("q", 1),
            None
        );
    }

    #[test]
    fn a_challenge_is_told_from_an_empty_page() {
        let bing = Engine::bing();
        assert_eq!(
            bing.read(200, "<p>There are no results</p>"),
            Outcome::Empty
        );
        assert_eq!(
            bing.read(200, "<div id=challenge-platform></div>"),
            Outcome::Challenge("a challenge page (bot challenge)".into())
        );
        assert_eq!(
            bing.read(403, "<p>Forbidden</p>"),
            Outcome::Challenge("a refusal (HTTP 403)".into())
        );
        assert_eq!(
            bing.read(503, "<p>down</p>"),
            Outcome::Failed("HTTP 503".into())
        );
    }
}
