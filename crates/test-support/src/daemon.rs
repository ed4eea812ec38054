//! A daemon served inside the test process, on a socket in a temp dir (the daemon crate's API
//! tests), and a fake model server on loopback for the providers it talks to.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use codaris_daemon::config::{self, Flags, Sources};
use codaris_daemon::{Shutdown, StateClaim};
use codaris_paths::StateLayout;
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint, Uri};

/// A daemon served by this test process, on `<temp>/state/codaris.sock`.
#[derive(Debug)]
pub struct InProcess {
    pub temp: tempfile::TempDir,
    pub shutdown: Shutdown,
    pub server: tokio::task::JoinHandle<Result<(), codaris_daemon::StartError>>,
    pub socket: PathBuf,
}

impl InProcess {
    pub async fn start() -> Self {
        Self::start_in(tempfile::tempdir().unwrap(), None).await
    }

    /// Starts a daemon whose state lives in `<temp>/state`. With a `config_dir`, skills are read
    /// from `<config_dir>/skills` as they would be beside a real configuration file.
    pub async fn start_in(temp: tempfile::TempDir, config_dir: Option<PathBuf>) -> Self {
        Self::start_with(temp, config_dir, &[]).await
    }

    /// Starts a daemon as if `env` were its environment (the variables configuration reads).
    pub async fn start_with(
        temp: tempfile::TempDir,
        config_dir: Option<PathBuf>,
        env: &[(&str, &str)],
    ) -> Self {
        Self::start_full(temp, config_dir, env, None).await
    }

    /// Starts a daemon that read `toml` as its configuration file.
    pub async fn start_with_toml(toml: &str) -> Self {
        Self::start_with_toml_in(tempfile::tempdir().unwrap(), toml).await
    }

    /// Starts a daemon in `temp` that read `toml` as its configuration file.
    pub async fn start_with_toml_in(temp: tempfile::TempDir, toml: &str) -> Self {
        let path = temp.path().join("config.toml");
        let parsed = config::parse_file(&path, toml).unwrap();
        Self::start_full(temp, None, &[], Some((path, parsed))).await
    }

    async fn start_full(
        temp: tempfile::TempDir,
        config_dir: Option<PathBuf>,
        env: &[(&str, &str)],
        file: Option<(PathBuf, config::ConfigToml)>,
    ) -> Self {
        let state_dir = temp.path().join("state");
        let config = config::resolve(Sources {
            state_dir: state_dir.clone(),
            // No home directory: the temp dir holding it would be refused as a root.
            home: None,
            file,
            config_dir,
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), std::ffi::OsString::from(v)))
                .collect::<BTreeMap<_, _>>(),
            flags: Flags::default(),
        })
        .unwrap();
        let layout = StateLayout::new(&state_dir);
        let socket = layout.socket();
        let claim = StateClaim::acquire(layout).unwrap();
        let shutdown = Shutdown::new();
        let server = tokio::spawn(codaris_daemon::serve(config, claim, shutdown.clone()));
        for _ in 0..500 {
            if UnixStream::connect(&socket).await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Self {
            temp,
            shutdown,
            server,
            socket,
        }
    }

    pub async fn channel(&self) -> Channel {
        let socket = self.socket.clone();
        Endpoint::from_static("http://codarisd.test")
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let socket = socket.clone();
                async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(socket).await?)) }
            }))
            .await
            .unwrap()
    }

    pub async fn stop(self) {
        self.shutdown.trigger("test");
        self.server.await.unwrap().unwrap();
    }

    /// Stops the daemon and hands back its temp dir, so a test can start another on the same
    /// state.
    pub async fn stop_keeping_state(self) -> tempfile::TempDir {
        self.shutdown.trigger("test");
        self.server.await.unwrap().unwrap();
        self.temp
    }
}

/// The request bodies a fake model server received, in order.
pub type Bodies = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// A fake model server on loopback: answers the n-th request with the n-th streamed body of
/// `replies` (the last one again once they run out), and keeps the request bodies. Returns
/// `http://127.0.0.1:<port>`.
pub async fn fake_model(replies: Vec<String>) -> (String, Bodies) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let bodies = Bodies::default();
    let seen = bodies.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = Vec::new();
            let mut buffer = [0u8; 8192];
            // Read the headers, then the body its content-length announces.
            loop {
                let n = socket.read(&mut buffer).await.unwrap_or(0);
                if n == 0 {
                    break;
                }
                request.extend_from_slice(&buffer[..n]);
                let text = String::from_utf8_lossy(&request).into_owned();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let length = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if body.len() >= length {
                        seen.lock().unwrap().push(body.to_owned());
                        break;
                    }
                }
            }
            let answered = seen.lock().unwrap().len();
            let body = replies
                .get(answered.saturating_sub(1))
                .or(replies.last())
                .cloned()
                .unwrap_or_default();
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
        }
    });
    (base, bodies)
}

/// One streamed OpenAI Chat Completions answer of `chunks` (each a `chat.completion.chunk`).
pub fn openai_stream(chunks: &[serde_json::Value]) -> String {
    let mut body: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    body.push_str("data: [DONE]\n\n");
    body
}

fn openai_chunk(delta: serde_json::Value, finish: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"id": "1", "object": "chat.completion.chunk",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

/// A streamed OpenAI answer making one tool call.
pub fn openai_tool_call(id: &str, tool: &str, args: &serde_json::Value) -> String {
    openai_stream(&[
        openai_chunk(
            serde_json::json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
                   "function": {"name": tool, "arguments": args.to_string()}}]}),
            serde_json::Value::Null,
        ),
        openai_chunk(serde_json::json!({}), serde_json::json!("tool_calls")),
    ])
}

/// A streamed OpenAI answer of plain text.
pub fn openai_text(text: &str) -> String {
    openai_stream(&[
        openai_chunk(
            serde_json::json!({"role": "assistant", "content": text}),
            serde_json::Value::Null,
        ),
        openai_chunk(serde_json::json!({}), serde_json::json!("stop")),
    ])
}

/// One streamed Anthropic Messages answer of `events` (each an object with its `type`).
pub fn anthropic_stream(events: &[serde_json::Value]) -> String {
    events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            )
        })
        .collect()
}
