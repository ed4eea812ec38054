//! The HTTP side shared by the Wave and Platform clients: one client configuration, and the
//! rule that the token never leaves in words (every message that could quote an answer is
//! passed through [`redact`]).

use std::sync::OnceLock;
use std::time::Duration;

use crate::ToolFailure;

/// How long one HTTP request may take (a Wave build is waited for by polling, not by this).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The most of an answer body quoted in an error.
pub const QUOTED_BODY: usize = 300;

/// The server's one client, built at its first request.
static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();

/// An HTTP client that names Codaris: the server's one client (a handle to it; clones share
/// its connection pool). Building one loads and parses the system's root certificates, which
/// cost more than a call's whole round trip to Platform, one call at a time on the server's
/// single thread (docs/performance.md, "Pipelines beyond one machine"); and a kept client keeps
/// its connections to Platform open between calls, so a TLS handshake is not one per call.
pub fn client() -> Result<reqwest::Client, ToolFailure> {
    if let Some(client) = CLIENT.get() {
        return Ok(client.clone());
    }
    let client = crate::tls::client_builder()
        .user_agent(concat!("codaris-seqera/", env!("CARGO_PKG_VERSION")))
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|err| ToolFailure::new(format!("cannot set up an HTTP client: {err}")))?;
    // Two first calls at once may both build one; the first kept is everyone's from then on.
    Ok(CLIENT.get_or_init(|| client).clone())
}

/// `text` with every occurrence of the token replaced (an answer may echo what it was sent).
pub fn redact(text: &str, token: Option<&str>) -> String {
    match token {
        Some(token) if !token.is_empty() => text.replace(token, "<redacted>"),
        _ => text.to_owned(),
    }
}

/// Why a request did not get an answer, in words, through [`redact`].
pub fn unreachable(
    service: &str,
    base: &str,
    err: &reqwest::Error,
    token: Option<&str>,
) -> ToolFailure {
    let why = if err.is_timeout() {
        "no answer in time".to_owned()
    } else if err.is_connect() {
        "cannot connect".to_owned()
    } else if err.is_decode() {
        "its answer could not be read".to_owned()
    } else {
        err.to_string()
    };
    ToolFailure::new(redact(&format!("{service} at {base}: {why}"), token))
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A server that keeps each connection open for more requests, as Platform does, and
    /// counts the connections it accepted.
    fn keep_alive_server() -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let counted = accepted.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                counted.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut writer = stream;
                    loop {
                        let mut length = 0;
                        loop {
                            let mut line = String::new();
                            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                                return;
                            }
                            let line = line.trim_end().to_ascii_lowercase();
                            if line.is_empty() {
                                break;
                            }
                            if let Some(value) = line.strip_prefix("content-length:") {
                                length = value.trim().parse().unwrap();
                            }
                        }
                        let mut body = vec![0; length];
                        reader.read_exact(&mut body).unwrap();
                        let answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
                        if writer.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (url, accepted)
    }

    #[tokio::test]
    async fn calls_share_one_client_and_its_open_connection() {
        let (url, accepted) = keep_alive_server();
        for _ in 0..3 {
            let answer = client().unwrap().get(&url).send().await.unwrap();
            assert!(answer.status().is_success());
            answer.bytes().await.unwrap();
        }
        // A client built per call would open a connection (a TLS handshake, on Platform) each.
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn redact_removes_the_token_everywhere() {
        assert_eq!(
            redact("a tok b tok", Some("tok")),
            "a <redacted> b <redacted>"
        );
        assert_eq!(redact("a tok", None), "a tok");
        assert_eq!(redact("a", Some("")), "a");
    }
}
