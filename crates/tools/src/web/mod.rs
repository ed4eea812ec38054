//! The web tools: `webfetch` (a public page as Markdown, behind an SSRF guard) and
//! `http_request` (any request, gated by the policy's `http` class).

mod common;
mod error;
mod fetch;
mod guard;
mod markdown;

pub use error::WebError;
pub use fetch::WebFetch;
