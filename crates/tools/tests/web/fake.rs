//! A fake HTTP/1.1 server on 127.0.0.1: answers each request with what the test's handler
//! returns and records every request it saw. One request per connection (`Connection: close`).
//! `serve_tls` is the same behind TLS, with the certificate the test's acceptor holds.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

// The request and answer types are the shared stand-ins' (`codaris_test_support::fake_http`):
// this server differs only in running on tokio and speaking TLS when asked.
pub use codaris_test_support::fake_http::{Reply, Seen};

pub struct Fake {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    scheme: &'static str,
}

impl Fake {
    pub fn url(&self, path: &str) -> String {
        format!("{}://{}{path}", self.scheme, self.addr)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen
            .lock()
            .map(|seen| seen.clone())
            .unwrap_or_default()
    }
}

pub async fn serve(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Fake {
    serve_with(None, handler).await
}

/// The fake behind TLS: each connection's handshake is made with `acceptor`.
pub async fn serve_tls(
    acceptor: TlsAcceptor,
    handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> Fake {
    serve_with(Some(acceptor), handler).await
}

async fn serve_with(
    acceptor: Option<TlsAcceptor>,
    handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler = Arc::new(handler);
    let record = Arc::clone(&seen);
    let scheme = if acceptor.is_some() { "https" } else { "http" };
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let handler = Arc::clone(&handler);
            let record = Arc::clone(&record);
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                match acceptor {
                    // A client that refuses the certificate ends the handshake: nothing to answer.
                    Some(acceptor) => {
                        if let Ok(stream) = acceptor.accept(stream).await {
                            answer(stream, &*handler, &record).await;
                        }
                    }
                    None => answer(stream, &*handler, &record).await,
                }
            });
        }
    });
    Fake { addr, seen, scheme }
}

async fn answer<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    handler: &(impl Fn(&Seen) -> Reply + ?Sized),
    record: &Mutex<Vec<Seen>>,
) {
    if let Some((mut stream, request)) = read_request(stream).await {
        if let Ok(mut seen) = record.lock() {
            seen.push(request.clone());
        }
        let reply = handler(&request);
        tokio::time::sleep(reply.delay).await;
        let _ = stream.write_all(&encode(&reply)).await;
        let _ = stream.shutdown().await;
    }
}

async fn read_request<S: AsyncRead + Unpin>(mut stream: S) -> Option<(S, Seen)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some((
        stream,
        Seen {
            method,
            target,
            headers,
            body,
        },
    ))
}

fn encode(reply: &Reply) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {} Fake\r\n", reply.status);
    for (name, value) in &reply.headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        reply.body.len()
    ));
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&reply.body);
    bytes
}
