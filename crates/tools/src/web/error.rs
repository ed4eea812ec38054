//! What can go wrong on the way to a web page; every case is told to the model.

use std::net::IpAddr;

use crate::tool::ToolError;

#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("`{url}` is not an http or https URL")]
    BadUrl { url: String },
    #[error(
        "`{host}` is {addr}, a {kind} address: webfetch only fetches public pages (a local service needs http_request)"
    )]
    Blocked {
        host: String,
        addr: IpAddr,
        kind: &'static str,
    },
    #[error("could not resolve `{host}`: {source}")]
    Resolve {
        host: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{host}` resolves to no address")]
    NoAddress { host: String },
    #[error("stopped after {limit} redirects")]
    TooManyRedirects { limit: usize },
    #[error("`{url}` answered a redirect without a usable Location header")]
    BadRedirect { url: String },
    #[error("request to `{url}` failed: {detail}")]
    Request { url: String, detail: String },
    #[error("`{url}` did not answer within {seconds} s")]
    Timeout { url: String, seconds: u64 },
    #[error("`{url}` answered {status}")]
    Status { url: String, status: u16 },
    #[error("`{url}` is {content_type} ({bytes} bytes), not a page with text")]
    NotText {
        url: String,
        content_type: String,
        bytes: usize,
    },
}

impl WebError {
    /// A reqwest error with its whole cause chain: its own `Display` says only "error sending
    /// request", which tells the model nothing about what to change.
    pub fn request(url: &str, error: &reqwest::Error) -> Self {
        let mut detail = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            detail.push_str(": ");
            detail.push_str(&cause.to_string());
            source = cause.source();
        }
        Self::Request {
            url: url.to_owned(),
            detail,
        }
    }
}

impl From<WebError> for ToolError {
    fn from(error: WebError) -> Self {
        ToolError::model(error.to_string())
    }
}
