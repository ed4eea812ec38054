//! `preview_server`: a directory of the project served as a static site on a free loopback
//! port, as a background task of the session.
//!
//! It runs inside the daemon (no process to confine) and answers only GET and HEAD for files
//! beneath the directory. The directory is opened once, beneath the allowed root it lies in
//! (`files::fence::Beneath`), as a capability (`cap_std::fs::Dir`), and every request opens its
//! file relative to that handle: `..` segments are refused, a symlink leading out of the
//! directory — planted or swapped in while it is served — is not found, and neither is one of
//! the fence's secrets, so it never serves what the fence keeps out.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::args::{boolean, count, string};
use super::pools::ShellPools;
use super::task::Log;
use crate::context::{Fence, ToolContext};
use crate::files::fence::Beneath;
use crate::tool::{Tool, ToolError, ToolOutput};

const NAME: &str = codaris_catalogue::PREVIEW_SERVER.name;
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
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::PREVIEW_SERVER
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let site = Site::open(ctx, string(args, "path")?.unwrap_or("."))?;
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
        let label = format!("preview_server {} on http://{address}/", site.abs.display());
        let started = pool.start_in_process(
            label,
            move |log| async move {
                let serving = serve(listener, Arc::new(site), log);
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

/// The served directory: opened once beneath its root, and what the fence keeps secret.
#[derive(Debug)]
struct Site {
    dir: Dir,
    /// The directory's absolute path, for the label and the secret check.
    abs: PathBuf,
    fence: Fence,
}

impl Site {
    fn open(ctx: &ToolContext, path: &str) -> Result<Self, ToolError> {
        let at = Beneath::locate(ctx, NAME, path)?;
        let dir = at.dir.open_dir(&at.rel).map_err(|e| at.err(ctx, e))?;
        Ok(Self {
            dir,
            abs: at.abs,
            fence: ctx.fence.clone(),
        })
    }
}

async fn serve(listener: TcpListener, site: Arc<Site>, log: Log) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors or similar: back off rather than spin.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let site = site.clone();
        let log = log.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(REQUEST_TIMEOUT, answer(stream, site, &log)).await;
        });
    }
}

async fn answer(mut stream: TcpStream, site: Arc<Site>, log: &Log) -> std::io::Result<()> {
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
        let owned = target.to_owned();
        tokio::task::spawn_blocking(move || lookup(&site, &owned))
            .await
            .unwrap_or_else(|_| (404, "text/plain", b"not found\n".to_vec()))
    };
    log.line(&format!("{method} {target} {status}"));
    respond(&mut stream, status, kind, &body, with_body).await
}

/// The status, content type and body for `target`, its file opened beneath the served
/// directory (blocking: run on the blocking pool).
fn lookup(site: &Site, target: &str) -> (u16, &'static str, Vec<u8>) {
    let not_found = (404, "text/plain", b"not found\n".to_vec());
    let path = target.split(['?', '#']).next().unwrap_or_default();
    let Some(decoded) = percent_decode(path) else {
        return (400, "text/plain", b"bad request\n".to_vec());
    };
    let mut rel = PathBuf::from(".");
    for segment in decoded.split('/').filter(|s| !s.is_empty() && *s != ".") {
        if segment == ".." || segment.contains('\0') {
            return not_found;
        }
        rel.push(segment);
    }
    // cap-std follows a symlink only while it stays beneath the directory.
    let Ok(meta) = site.dir.metadata(&rel) else {
        return not_found;
    };
    if meta.is_dir() {
        rel.push("index.html");
    }
    if site.fence.is_secret(&site.abs.join(&rel)) {
        return not_found;
    }
    // Non-blocking, so a FIFO cannot hang the answer; it is refused just below.
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed());
    let Ok(mut file) = site.dir.open_with(&rel, &options) else {
        return not_found;
    };
    if !file.metadata().is_ok_and(|meta| meta.is_file()) {
        return not_found;
    }
    let mut bytes = Vec::new();
    match file.read_to_end(&mut bytes) {
        Ok(_) => (200, content_type(&rel), bytes),
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
