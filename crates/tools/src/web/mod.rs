//! The web tools: `webfetch` (a public page as Markdown, behind an SSRF guard) and
//! `http_request` (any request, gated by the policy's `http` class).

mod approval;
mod body;
mod common;
mod error;
mod fetch;
mod guard;
mod markdown;
mod request;

pub use approval::http_request_approval;
pub use error::WebError;
pub use fetch::WebFetch;
pub use request::HttpRequest;
