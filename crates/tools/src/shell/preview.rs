//! `preview_server`: a directory of the project served as a static site on a free loopback
//! port, as a background task of the session.
//!
//! It runs inside the daemon (no process to confine) and answers only GET and HEAD for files
//! beneath the directory: `..` segments are refused and a path whose resolved form leaves the
//! directory (a symlink out) is not found, so it never serves what the fence keeps out.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::args::{boolean, count, string};
use super::pool::ShellPools;
use super::run::resolve_dir;
use super::task::Log;
use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};

const NAME: &str = "preview_server";
/// A request head larger than this is refused; a static site needs no more.
const MAX_HEAD: usize = 16 * 1024;
/// A connection that has not sent its request by then is dropped.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// `preview_server`: serve a directory on `127.0.0.1` until stopped (or `timeout_seconds`).
#[derive(Debug, Clone)]
pub struct PreviewServer {
    pools: Arc<ShellPools>,
}

impl PreviewServer {
    pub fn new(pools: Arc<ShellPools>) -> Self {
        Self { pools }
    }
}

#[async_trait::async_trait]
impl Tool for PreviewServer {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "Serve a directory of the project (`path`, default the working directory) as a static website on a free 127.0.0.1 port and return the address for the user to open. It runs as a background task (see background_list) until background_stop, or for `timeout_seconds` when given; index.html is served for a directory. Only GET and HEAD, only files beneath the directory."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory to serve, inside the allowed roots."},
                "timeout_seconds": {"type": "integer", "minimum": 1, "description": "Stop serving after this many seconds (default: until stopped)."},
                "notify_on_finish": {"type": "boolean", "description": "Be told when the server stops (default false)."}
            },
            "additionalProperties": false
        })
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let root = resolve_dir(ctx, "path", string(args, "path")?)?;
        let lifetime = count(args, "timeout_seconds")?.map(Duration::from_secs);
        let notify = boolean(args, "notify_on_finish", false)?;
        let pool = self
            .pools
            .pool(&ctx.session_id)
            .map_err(|error| error.into_tool_error(NAME))?;
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|source| ToolError::Fatal { tool: NAME, source })?;
        let address = listener
            .local_addr()
            .map_err(|source| ToolError::Fatal { tool: NAME, source })?;
        let label = format!("preview_server {} on http://{address}/", root.display());
        let started = pool.start_in_process(
            label,
            move |log| async move {
                let serving = serve(listener, Arc::new(root), log);
                match lifetime {
                    Some(limit) => {
                        let _ = tokio::time::timeout(limit, serving).await;
                    }
                    None => serving.await,
                }
            },
            notify,
        );
        Ok(ToolOutput::text(format!(
            "serving at http://{address}/ as background task `{}` (stop it with background_stop)",
            started.task_id
        )))
    }
}

async fn serve(listener: TcpListener, root: Arc<PathBuf>, log: Log) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors or similar: back off rather than spin.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let root = root.clone();
        let log = log.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(REQUEST_TIMEOUT, answer(stream, &root, &log)).await;
        });
    }
}

async fn answer(mut stream: TcpStream, root: &Path, log: &Log) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut chunk = [0_u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = stream.read(&mut chunk).await?;
        if read == 0 || head.len() + read > MAX_HEAD {
            return respond(&mut stream, 400, "text/plain", b"bad request\n", true).await;
        }
        head.extend_from_slice(&chunk[..read]);
    }
    let line = String::from_utf8_lossy(&head);
    let mut parts = line.lines().next().unwrap_or_default().split(' ');
    let (method, target) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let with_body = method != "HEAD";
    let (status, kind, body) = if method != "GET" && method != "HEAD" {
        (405, "text/plain", b"only GET and HEAD\n".to_vec())
    } else {
        lookup(root, target).await
    };
    log.line(&format!("{method} {target} {status}"));
    respond(&mut stream, status, kind, &body, with_body).await
}

/// The status, content type and body for `target`.
async fn lookup(root: &Path, target: &str) -> (u16, &'static str, Vec<u8>) {
    let not_found = (404, "text/plain", b"not found\n".to_vec());
    let path = target.split(['?', '#']).next().unwrap_or_default();
    let Some(decoded) = percent_decode(path) else {
        return (400, "text/plain", b"bad request\n".to_vec());
    };
    let mut file = root.to_path_buf();
    for segment in decoded.split('/').filter(|s| !s.is_empty() && *s != ".") {
        if segment == ".." || segment.contains('\0') {
            return not_found;
        }
        file.push(segment);
    }
    // Resolved, so a symlink beneath the directory cannot lead out of it.
    let Ok(mut resolved) = tokio::fs::canonicalize(&file).await else {
        return not_found;
    };
    if !resolved.starts_with(root) {
        return not_found;
    }
    if resolved.is_dir() {
        resolved.push("index.html");
    }
    match tokio::fs::read(&resolved).await {
        Ok(bytes) => (200, content_type(&resolved), bytes),
        Err(_) => not_found,
    }
}

async fn respond(
    stream: &mut TcpStream,
    status: u16,
    kind: &str,
    body: &[u8],
    with_body: bool,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Method Not Allowed",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    if with_body {
        stream.write_all(body).await?;
    }
    stream.shutdown().await
}

/// `%XX` escapes decoded; `None` for a malformed escape or a result that is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while let Some(&byte) = bytes.get(index) {
        if byte == b'%' {
            let hex = std::str::from_utf8(bytes.get(index + 1..index + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(byte);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn content_type(path: &Path) -> &'static str {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("json" | "map") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("ico") => "image/x-icon",
        Some("wasm") => "application/wasm",
        Some("pdf") => "application/pdf",
        Some("xml") => "application/xml",
        Some("txt" | "md" | "csv" | "tsv") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_escapes_and_refuses_broken_ones() {
        assert_eq!(percent_decode("/a%20b/c").as_deref(), Some("/a b/c"));
        assert_eq!(percent_decode("/%2e%2e/x").as_deref(), Some("/../x"));
        assert_eq!(percent_decode("/bad%2"), None);
        assert_eq!(percent_decode("/bad%zz"), None);
        assert_eq!(percent_decode("/%ff"), None);
    }
}
