//! The web tools: `webfetch` (a public page as Markdown, behind an SSRF guard) and
//! `http_request` (any request, gated by the policy's `http` class) and `websearch` (several
//! engines merged).

mod body;
pub(crate) mod common;

pub(crate) use common::USER_AGENT;
mod dom;
mod engines;
mod error;
mod fetch;
mod guard;
mod markdown;
mod request;
mod search;

pub use engines::Engine;
pub use engines::EngineKind;
pub use error::WebError;
pub use fetch::WebFetch;
pub use request::HttpRequest;
pub use search::WebSearch;

use std::sync::Arc;

use crate::tool::Tool;

/// The web tools in the catalogue's order, with the engines `websearch` asks and the headers
/// `http_request` sends on every request unless a call names its own.
pub fn web_tools(
    engines: Vec<Engine>,
    default_headers: Vec<(String, String)>,
) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(WebSearch::new(engines)),
        Arc::new(WebFetch::new()),
        Arc::new(HttpRequest::with_default_headers(default_headers)),
    ]
}
