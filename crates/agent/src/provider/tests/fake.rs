//! An in-process HTTP/1.1 server on 127.0.0.1 that answers each connection with the next scripted
//! reply and records what it received. Every reply closes its connection, so connection `n` is
//! request `n`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use crate::provider::{ProviderConfig, ProviderKind, RetryPolicy, Secret, Timeouts};

/// The key every test config carries; no error may show it.
pub(crate) const KEY: &str = "sk-test-SECRET-0123456789";

/// The longest any test waits for anything.
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

/// What the server does with one connection.
#[derive(Debug)]
pub(crate) enum Reply {
    /// `200` with `text/event-stream`, the pieces written one by one, then `then`.
    Sse { pieces: Vec<String>, then: After },
    /// A complete response with a body and extra headers.
    Json {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Reads the request, then says nothing until the client goes away.
    Silent,
}

/// What happens after the last SSE piece.
#[derive(Debug)]
pub(crate) enum After {
    /// Close the connection.
    Close,
    /// Keep it open and report whether the client closed it (EOF) within [`PATIENCE`].
    Hold(oneshot::Sender<bool>),
}

/// One request as received.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Recorded {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// The exact bytes of the top-level `tools` array.
    pub(crate) fn raw_tools(&self) -> String {
        #[derive(serde::Deserialize)]
        struct Body<'a> {
            #[serde(borrow)]
            tools: &'a serde_json::value::RawValue,
        }
        serde_json::from_str::<Body<'_>>(&self.body)
            .map(|body| body.tools.get().to_owned())
            .unwrap_or_default()
    }
}

/// A running fake server.
#[derive(Debug)]
pub(crate) struct FakeServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl FakeServer {
    /// Starts serving `replies`, one per connection; later connections get a 500.
    pub(crate) async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        tokio::spawn(async move {
            let mut replies = replies.into_iter();
            while let Ok((socket, _)) = listener.accept().await {
                let reply = replies.next().unwrap_or(Reply::Json {
                    status: 500,
                    headers: Vec::new(),
                    body: "no more scripted replies".into(),
                });
                let recorded = Arc::clone(&recorded);
                tokio::spawn(serve(socket, reply, recorded));
            }
        });
        Self { addr, requests }
    }

    /// The requests received so far.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// A config for `kind` pointed at this server, with the test key, generous timeouts and
    /// near-instant retries.
    pub(crate) fn config(&self, kind: ProviderKind) -> ProviderConfig {
        let base = match kind {
            ProviderKind::Anthropic => format!("http://{}", self.addr),
            ProviderKind::OpenAi => format!("http://{}/v1", self.addr),
        };
        ProviderConfig {
            kind,
            model: "test-model".into(),
            api_key: Some(Secret::new(KEY)),
            base_url: base,
            timeouts: Timeouts {
                connect: Duration::from_secs(5),
                request: PATIENCE,
                idle: PATIENCE,
            },
            retry: RetryPolicy {
                max_retries: 3,
                initial_backoff: Duration::from_millis(1),
                max_backoff: Duration::from_millis(10),
                max_retry_after: Duration::from_secs(5),
            },
            max_output_tokens: crate::provider::DEFAULT_MAX_OUTPUT_TOKENS,
            reasoning: None,
        }
    }
}

async fn serve(mut socket: TcpStream, reply: Reply, recorded: Arc<Mutex<Vec<Recorded>>>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    if let Ok(mut requests) = recorded.lock() {
        requests.push(request);
    }
    match reply {
        Reply::Json {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} Whatever\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
        Reply::Sse { pieces, then } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
            let _ = socket.write_all(head.as_bytes()).await;
            for piece in pieces {
                let _ = socket.write_all(piece.as_bytes()).await;
                let _ = socket.flush().await;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            match then {
                After::Close => {
                    let _ = socket.shutdown().await;
                }
                After::Hold(report) => {
                    let _ = report.send(wait_for_eof(&mut socket).await);
                }
            }
        }
        Reply::Silent => {
            wait_for_eof(&mut socket).await;
        }
    }
}

/// Whether the peer closed the connection within [`PATIENCE`].
async fn wait_for_eof(socket: &mut TcpStream) -> bool {
    let mut scratch = [0u8; 1024];
    let read_to_end = async {
        loop {
            match socket.read(&mut scratch).await {
                Ok(0) | Err(_) => return true,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(PATIENCE, read_to_end)
        .await
        .unwrap_or(false)
}

/// Reads the head and the `content-length` body of one request.
async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut data = Vec::new();
    let mut scratch = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let read = socket.read(&mut scratch).await.ok()?;
        if read == 0 {
            return None;
        }
        data.extend_from_slice(&scratch[..read]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines.next()?.split(' ').nth(1)?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = data[head_end + 4..].to_vec();
    while body.len() < length {
        let read = socket.read(&mut scratch).await.ok()?;
        if read == 0 {
            return None;
        }
        body.extend_from_slice(&scratch[..read]);
    }
    Some(Recorded {
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// One SSE event as Anthropic writes it: `event:` then `data:` then a blank line.
pub(crate) fn event(name: &str, data: &serde_json::Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// One SSE chunk as Chat Completions servers write it: `data:` then a blank line.
pub(crate) fn chunk(data: &serde_json::Value) -> String {
    format!("data: {data}\n\n")
}
