//! The web tools: `webfetch` (a public page as Markdown, behind an SSRF guard) and
//! `http_request` (any request, gated by the policy's `http` class) and `websearch` (several
//! engines merged), and `web_research` (searches, pages read through webfetch's guard, and
//! the literature, answered as a brief quoting its sources).

mod body;
mod brief;
pub(crate) mod common;

pub(crate) use common::USER_AGENT;
mod dom;
mod engines;
mod error;
mod fetch;
mod guard;
mod literature;
mod markdown;
mod passages;
mod queries;
mod request;
mod research;
mod search;

pub use engines::Engine;
pub use engines::EngineKind;
pub use error::WebError;
pub use fetch::WebFetch;
pub use literature::Article;
pub use literature::Literature;
pub use request::HttpRequest;
pub use research::WebResearch;
pub use search::WebSearch;

use std::sync::Arc;

use crate::tool::Tool;

/// The web tools in the catalogue's order, with the engines `websearch` asks and the headers
/// `http_request` sends on every request unless a call names its own. `web_research` asks the
/// same engines and has no literature client; [`web_tools_with_research`] sets both.
pub fn web_tools(
    engines: Vec<Engine>,
    default_headers: Vec<(String, String)>,
) -> Vec<Arc<dyn Tool>> {
    let research = WebResearch::new(engines.clone(), None);
    web_tools_with_research(engines, default_headers, research)
}

/// The web tools in the catalogue's order, `web_research` as given (its own engines, from
/// `[research] engines`, and its literature client).
pub fn web_tools_with_research(
    engines: Vec<Engine>,
    default_headers: Vec<(String, String)>,
    research: WebResearch,
) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(WebSearch::new(engines)),
        Arc::new(WebFetch::new()),
        Arc::new(HttpRequest::with_default_headers(default_headers)),
        Arc::new(research),
    ]
}
