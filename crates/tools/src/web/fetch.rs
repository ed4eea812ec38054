//! `webfetch`: GET a public page and return its main text as Markdown.
//!
//! Redirects are followed here, one hop at a time, because each hop's host must pass the SSRF
//! guard and have its address pinned before anything is sent to it; the client itself never
//! follows one, never resolves a name (it is handed the checked address) and never uses a proxy
//! (a proxy would resolve and connect on our behalf, out of the guard's sight).

use std::time::Duration;

use reqwest::header::{ACCEPT, LOCATION};
use reqwest::{Response, Url};
use serde_json::Value;

use super::common::{self, USER_AGENT};
use super::error::WebError;
use super::guard::{self, Pinned, Reach};
use super::markdown::html_to_markdown;
use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};

/// Hops followed before giving up.
pub const MAX_REDIRECTS: usize = 5;
const DEFAULT_TIMEOUT: u64 = 30;
const MAX_TIMEOUT: u64 = codaris_catalogue::limits::WEBFETCH_MAX_TIMEOUT_SECONDS;
const DEFAULT_MAX_CHARS: u64 = 40_000;
const MAX_MAX_CHARS: u64 = codaris_catalogue::limits::WEBFETCH_MAX_CHARS;
/// Bytes of a page read at most: past this a page is not worth converting.
const MAX_BODY: usize = 8 * 1024 * 1024;

#[derive(Debug, Clone, Default)]
pub struct WebFetch {
    reach: Reach,
}

impl WebFetch {
    pub fn new() -> Self {
        Self::default()
    }

    /// For tests against a fake server on 127.0.0.1 / `[::1]` only: loopback becomes reachable,
    /// private, link-local and the rest stay refused. Never used outside tests.
    pub fn allowing_loopback_for_tests() -> Self {
        Self {
            reach: Reach { loopback: true },
        }
    }
}

#[async_trait::async_trait]
impl Tool for WebFetch {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::WEBFETCH
    }

    async fn call(&self, _ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let url = common::url(args)?;
        let (timeout, seconds) = common::timeout(args, DEFAULT_TIMEOUT, MAX_TIMEOUT)?;
        let max_chars = common::count(args, "max_chars", DEFAULT_MAX_CHARS, MAX_MAX_CHARS)?;
        let max_chars = usize::try_from(max_chars).unwrap_or(usize::MAX);
        let started = url.to_string();
        let fetched = tokio::time::timeout(timeout, fetch(url, self.reach, timeout))
            .await
            .map_err(|_| WebError::Timeout {
                url: started,
                seconds,
            })??;
        Ok(ToolOutput::text(render(&fetched, max_chars)))
    }
}

/// A page as fetched: where it ended up, its media type and its body.
pub(crate) struct Fetched {
    pub(crate) url: Url,
    media_type: String,
    charset: Option<String>,
    body: Vec<u8>,
    truncated: bool,
}

/// GETs `url` behind the guard, following redirects one checked hop at a time (`web_research`
/// reads its pages through this too).
pub(crate) async fn fetch(
    mut url: Url,
    reach: Reach,
    timeout: Duration,
) -> Result<Fetched, WebError> {
    for _ in 0..=MAX_REDIRECTS {
        let mut response = send(&url, reach, timeout).await?;
        if response.status().is_redirection()
            && let Some(location) = response.headers().get(LOCATION)
        {
            let bad = || WebError::BadRedirect {
                url: url.to_string(),
            };
            let location = location.to_str().map_err(|_| bad())?;
            let next = url.join(location).map_err(|_| bad())?;
            if !matches!(next.scheme(), "http" | "https") {
                return Err(bad());
            }
            url = next;
            continue;
        }
        let status = response.status();
        if !status.is_success() {
            return Err(WebError::Status {
                url: url.to_string(),
                status: status.as_u16(),
            });
        }
        let media_type = common::media_type(&response);
        let charset = common::charset(&response);
        let (body, truncated) = common::read_bounded(&mut response, MAX_BODY, url.as_str()).await?;
        check_textual(&media_type, &body, &url)?;
        return Ok(Fetched {
            url,
            media_type,
            charset,
            body,
            truncated,
        });
    }
    Err(WebError::TooManyRedirects {
        limit: MAX_REDIRECTS,
    })
}

/// One request to `url`, on a connection to the address the guard checked.
async fn send(url: &Url, reach: Reach, timeout: Duration) -> Result<Response, WebError> {
    let pinned = guard::resolve(url, reach).await?;
    let client =
        pinned_client(&pinned, timeout).map_err(|error| WebError::request(url.as_str(), &error))?;
    client
        .get(url.clone())
        .header(
            ACCEPT,
            "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
        )
        .send()
        .await
        .map_err(|error| WebError::request(url.as_str(), &error))
}

/// A client that connects only to the checked addresses: it resolves nothing itself, follows
/// no redirect and uses no proxy.
fn pinned_client(pinned: &Pinned, timeout: Duration) -> Result<reqwest::Client, reqwest::Error> {
    let builder = crate::tls::client_builder()
        .user_agent(USER_AGENT)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(timeout);
    match &pinned.host {
        // Every checked address is handed over, so the client can still fall back from one
        // to the next (IPv6 to IPv4) without ever asking DNS again.
        Some(host) => builder.resolve_to_addrs(host, &pinned.addrs),
        None => builder,
    }
    .build()
}

/// A fetched page as text: its `<title>` (HTML only) and its main text, Markdown for HTML and
/// the decoded body for any other text.
pub(crate) struct Readable {
    pub(crate) title: Option<String>,
    pub(crate) text: String,
    pub(crate) markdown: bool,
}

pub(crate) fn readable(fetched: &Fetched) -> Readable {
    let text = common::decode(&fetched.body, fetched.charset.as_deref());
    let looks_html = fetched.media_type.contains("html")
        || (fetched.media_type.is_empty() && text.trim_start().starts_with('<'));
    if looks_html {
        let page = html_to_markdown(&text);
        Readable {
            title: page.title,
            text: page.markdown,
            markdown: true,
        }
    } else {
        Readable {
            title: None,
            text,
            markdown: false,
        }
    }
}

fn render(fetched: &Fetched, max_chars: usize) -> String {
    let Readable {
        title, text: body, ..
    } = readable(fetched);
    let mut out = String::new();
    if let Some(title) = title {
        out.push_str(&format!("# {title}\n"));
    }
    out.push_str(&format!("Source: {}\n\n", fetched.url));
    let (kept, total) = common::cut_chars(&body, max_chars);
    out.push_str(kept.trim_end());
    if let Some(total) = total {
        out.push_str(&format!(
            "\n\n[cut at {max_chars} of {total} characters; raise max_chars to read more]"
        ));
    } else if fetched.truncated {
        out.push_str(&format!(
            "\n\n[the page is larger than {MAX_BODY} bytes; only its start was read]"
        ));
    }
    out
}

/// Whether a fetched body is something `render` can show; binary files are refused with
/// their type and size.
fn check_textual(fetched_type: &str, body: &[u8], url: &Url) -> Result<(), WebError> {
    if fetched_type.contains("html") || common::is_textual(fetched_type, body) {
        return Ok(());
    }
    Err(WebError::NotText {
        url: url.to_string(),
        content_type: fetched_type.to_owned(),
        bytes: body.len(),
    })
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// The client connects to the pinned address and never asks DNS: `pinned.invalid` cannot
    /// resolve anywhere, yet the request arrives, carrying the name in its Host header.
    #[tokio::test]
    async fn the_connection_goes_to_the_pinned_address() -> Result<(), Box<dyn std::error::Error>> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await?;
            let mut request = vec![0u8; 4096];
            let n = stream.read(&mut request).await?;
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                .await?;
            Ok::<_, std::io::Error>(String::from_utf8_lossy(&request[..n]).into_owned())
        });
        let pinned = Pinned {
            host: Some("pinned.invalid".into()),
            addrs: vec![addr],
        };
        let url = format!("http://pinned.invalid:{}/x", addr.port());
        let response = pinned_client(&pinned, Duration::from_secs(20))?
            .get(url)
            .send()
            .await?;
        assert_eq!(response.text().await?, "ok");
        let request = server.await??;
        assert!(
            request.contains(&format!("host: pinned.invalid:{}", addr.port())),
            "{request}"
        );
        Ok(())
    }
}
