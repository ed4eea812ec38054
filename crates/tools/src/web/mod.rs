//! The web tools: `webfetch` (a public page as Markdown, behind an SSRF guard) and
//! `http_request` (any request, gated by the policy's `http` class) and `websearch` (several
//! engines merged).

mod approval;
mod body;
mod common;
mod dom;
mod engines;
mod error;
mod fetch;
mod guard;
mod markdown;
mod request;
mod search;

pub use approval::http_request_approval;
pub use engines::Engine;
pub use engines::EngineKind;
pub use error::WebError;
pub use fetch::WebFetch;
pub use request::HttpRequest;
pub use search::WebSearch;

use std::sync::Arc;

use crate::tool::Tool;

/// The web tools in the catalogue's order, with the engines `websearch` asks.
pub fn web_tools(engines: Vec<Engine>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(WebSearch::new(engines)),
        Arc::new(WebFetch::new()),
        Arc::new(HttpRequest::new()),
    ]
}
