//! `http_request`: any HTTP or HTTPS request, like curl. It refuses no address, which is why the
//! policy gates it (class `http`); what it carries besides the request itself (local files, a
//! proxy, an unchecked certificate, redirects) is part of the policy's `send_http` capability,
//! so the permission card names it and approving the destination alone does not cover it.

use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Response, Url};
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use super::body::{self, Body, OutputFile};
use super::common::{self, USER_AGENT};
use super::error::WebError;
use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};

const DEFAULT_TIMEOUT: u64 = 60;
const MAX_TIMEOUT: u64 = codaris_catalogue::limits::HTTP_REQUEST_MAX_TIMEOUT_SECONDS;
/// Bytes of an answer shown to the model; the rest is for `output_file`.
const MAX_SHOWN: usize = 256 * 1024;
const MAX_REDIRECTS: usize = 10;

#[derive(Debug, Clone, Default)]
pub struct HttpRequest {
    /// `tools.http_request.default_headers`: sent on every request; a call's own headers win.
    default_headers: Vec<(String, String)>,
}

impl HttpRequest {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_default_headers(default_headers: Vec<(String, String)>) -> Self {
        Self { default_headers }
    }
}

#[async_trait::async_trait]
impl Tool for HttpRequest {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::HTTP_REQUEST
    }

    fn preview(&self, _ctx: &ToolContext, args: &Value) -> Option<crate::preview::CallPreview> {
        crate::preview::http_preview(args)
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let mut url = common::url(args)?;
        append_query(&mut url, args)?;
        let method = method(args)?;
        let headers = self.headers(args)?;
        let (timeout, seconds) = common::timeout(args, DEFAULT_TIMEOUT, MAX_TIMEOUT)?;
        let output_file = common::opt_str(args, "output_file")?;
        let client = client(args, timeout)?;
        let body = body::body(ctx, args).await?;
        let output = match output_file {
            Some(path) => Some(OutputFile::prepare(ctx, path).await?),
            None => None,
        };
        let typed = headers.contains_key(CONTENT_TYPE);
        let request = attach(
            client.request(method, url.clone()).headers(headers),
            body,
            typed,
        );
        let exchange = async {
            let response = request
                .send()
                .await
                .map_err(|error| WebError::request(url.as_str(), &error))?;
            let head = head(&response);
            let tail = match &output {
                Some(output) => save(response, output, url.as_str()).await?,
                None => shown_body(response, url.as_str()).await?,
            };
            Ok::<_, ToolError>(format!("{head}\n{tail}"))
        };
        let Ok(text) = tokio::time::timeout(timeout, exchange).await else {
            if let Some(output) = &output {
                output.discard().await;
            }
            return Err(WebError::Timeout {
                url: url.to_string(),
                seconds,
            }
            .into());
        };
        let text = text?;
        Ok(ToolOutput::text(text))
    }
}

impl HttpRequest {
    /// The operator's default headers, then the call's own (which replace a default of the same
    /// name).
    fn headers(&self, args: &Value) -> Result<HeaderMap, ToolError> {
        let mut map = HeaderMap::new();
        let own: Vec<(String, String)> = match args.get("headers") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(fields)) => fields
                .iter()
                .map(|(name, value)| Ok((name.clone(), body::scalar(value, "headers")?)))
                .collect::<Result<_, ToolError>>()?,
            Some(_) => {
                return Err(ToolError::model(
                    "`headers` must be an object of names to values",
                ));
            }
        };
        for (name, value) in self.default_headers.iter().chain(&own) {
            let bad = || ToolError::model(format!("`{name}: {value}` is not a valid header"));
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
            let value = HeaderValue::from_str(value).map_err(|_| bad())?;
            map.insert(name, value);
        }
        Ok(map)
    }
}

fn method(args: &Value) -> Result<Method, ToolError> {
    let text = common::opt_str(args, "method")?
        .unwrap_or("GET")
        .to_ascii_uppercase();
    Method::from_bytes(text.as_bytes())
        .map_err(|_| ToolError::model(format!("`{text}` is not an HTTP method")))
}

fn append_query(url: &mut Url, args: &Value) -> Result<(), ToolError> {
    let fields = match args.get("query") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(fields)) => fields,
        Some(_) => {
            return Err(ToolError::model(
                "`query` must be an object of names to values",
            ));
        }
    };
    let mut pairs = Vec::new();
    for (name, value) in fields {
        match value {
            Value::Array(items) => {
                for item in items {
                    pairs.push((name, body::scalar(item, "query")?));
                }
            }
            value => pairs.push((name, body::scalar(value, "query")?)),
        }
    }
    if !pairs.is_empty() {
        url.query_pairs_mut().extend_pairs(pairs);
    }
    Ok(())
}

fn client(args: &Value, timeout: Duration) -> Result<reqwest::Client, ToolError> {
    let follow = common::opt_bool(args, "follow_redirects")?.unwrap_or(false);
    let verify = common::opt_bool(args, "verify_tls")?.unwrap_or(true);
    let redirect = if follow {
        reqwest::redirect::Policy::limited(MAX_REDIRECTS)
    } else {
        reqwest::redirect::Policy::none()
    };
    // The environment's proxy variables are not used: a proxy is part of what the user
    // approves, so only the one the call names is.
    let mut builder = crate::tls::client_builder()
        .user_agent(USER_AGENT)
        .redirect(redirect)
        .no_proxy()
        .danger_accept_invalid_certs(!verify)
        .timeout(timeout);
    if let Some(proxy) = common::opt_str(args, "proxy")? {
        let proxy = reqwest::Proxy::all(proxy)
            .map_err(|_| ToolError::model(format!("`{proxy}` is not a proxy URL")))?;
        builder = builder.proxy(proxy);
    }
    builder
        .build()
        .map_err(|error| WebError::request("(client)", &error).into())
}

fn attach(request: reqwest::RequestBuilder, body: Body, typed: bool) -> reqwest::RequestBuilder {
    match body {
        Body::None => request,
        Body::Bytes(bytes) => request.body(bytes),
        // The call's own Content-Type wins, as curl's -H does over --json.
        Body::Json(bytes) if typed => request.body(bytes),
        Body::Json(bytes) => request.header(CONTENT_TYPE, "application/json").body(bytes),
        Body::Form(fields) => request.form(&fields),
        Body::Multipart(form) => request.multipart(form),
    }
}

/// `HTTP/1.1 200 OK` and the response headers, one per line.
fn head(response: &Response) -> String {
    let status = response.status();
    let mut out = format!(
        "{:?} {} {}\n",
        response.version(),
        status.as_str(),
        status.canonical_reason().unwrap_or("")
    );
    for (name, value) in response.headers() {
        out.push_str(&format!(
            "{name}: {}\n",
            String::from_utf8_lossy(value.as_bytes())
        ));
    }
    out
}

async fn shown_body(mut response: Response, url: &str) -> Result<String, ToolError> {
    let media_type = common::media_type(&response);
    let charset = common::charset(&response);
    let (bytes, more) = common::read_bounded(&mut response, MAX_SHOWN, url).await?;
    if !common::is_textual(&media_type, &bytes) {
        return Ok(format!(
            "[binary body{}: {} bytes{}; save it with output_file]",
            if media_type.is_empty() {
                String::new()
            } else {
                format!(" of type {media_type}")
            },
            bytes.len(),
            if more { " and more" } else { "" }
        ));
    }
    let mut text = common::decode(&bytes, charset.as_deref());
    if more {
        text.push_str(&format!(
            "\n[body cut at {MAX_SHOWN} bytes; save it whole with output_file]"
        ));
    }
    Ok(text)
}

/// Streams the body into a fresh file beside the output file, then renames it over the name.
async fn save(mut response: Response, output: &OutputFile, url: &str) -> Result<String, ToolError> {
    let mut file = output.create().await?;
    let failed = |error: std::io::Error| {
        ToolError::model(format!(
            "http_request: cannot write `{}`: {error}",
            output.shown
        ))
    };
    let mut written: u64 = 0;
    let copied: Result<(), ToolError> = async {
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| WebError::request(url, &error))?
        {
            file.write_all(&chunk).await.map_err(failed)?;
            written += chunk.len() as u64;
        }
        file.flush().await.map_err(failed)?;
        drop(file);
        output.commit().await
    }
    .await;
    if copied.is_err() {
        output.discard().await;
    }
    copied?;
    Ok(format!(
        "[saved {written} bytes of body to `{}`]",
        output.shown
    ))
}
