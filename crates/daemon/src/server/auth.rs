//! The guard in front of the loopback TCP listener.
//!
//! The Unix socket is protected by its 0600 mode; TCP on loopback is reachable by every local user
//! and by any web page a browser opens, so each request must carry the bearer token, must not come
//! from a browser (an `Origin` header), and must name a loopback host (a foreign `Host` is how DNS
//! rebinding reaches loopback services). The check runs before any handler.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{HeaderMap, Request, Response, Uri};
use tower::{Layer, Service};

/// Why a TCP request was refused; the text goes back to the client as the gRPC message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "missing bearer token: send `authorization: Bearer <token>` with the token from the daemon's state directory"
    )]
    MissingToken,
    #[error("wrong bearer token")]
    WrongToken,
    #[error("requests carrying an `Origin` header (browsers) are refused")]
    Origin,
    #[error("host `{0}` is not a loopback name; connect to 127.0.0.1, [::1] or localhost")]
    ForeignHost(String),
}

/// Checks one request; pure, so it is tested without a server.
pub fn check(token: &str, uri: &Uri, headers: &HeaderMap) -> Result<(), Refusal> {
    if headers.contains_key(http::header::ORIGIN) {
        return Err(Refusal::Origin);
    }
    // HTTP/2 carries the host as `:authority` (in the URI); HTTP/1 as `Host`. Check every one.
    let uri_host = uri.authority().map(http::uri::Authority::as_str);
    let header_hosts = headers
        .get_all(http::header::HOST)
        .iter()
        .map(|h| h.to_str().unwrap_or(""));
    for host in uri_host.into_iter().chain(header_hosts) {
        if !is_loopback_authority(host) {
            return Err(Refusal::ForeignHost(host.to_owned()));
        }
    }
    let presented = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
        .ok_or(Refusal::MissingToken)?;
    if crate::secret::constant_time_eq(presented.trim().as_bytes(), token.as_bytes()) {
        Ok(())
    } else {
        Err(Refusal::WrongToken)
    }
}

fn is_loopback_authority(authority: &str) -> bool {
    let host = match authority.rsplit_once(':') {
        // `[::1]:7457` or `127.0.0.1:7457`; a bare IPv6 literal without brackets has many colons.
        Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) && !host.ends_with(':') => {
            host
        }
        _ => authority,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// Wraps the TCP server's services with [`check`].
#[derive(Debug, Clone)]
pub struct TcpGuardLayer {
    token: Arc<str>,
}

impl TcpGuardLayer {
    pub fn new(token: String) -> Self {
        Self {
            token: token.into(),
        }
    }
}

impl<S> Layer<S> for TcpGuardLayer {
    type Service = TcpGuard<S>;

    fn layer(&self, inner: S) -> Self::Service {
        TcpGuard {
            inner,
            token: self.token.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct TcpGuard<S> {
    inner: S,
    token: Arc<str>,
}

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S, ReqBody> Service<Request<ReqBody>> for TcpGuard<S>
where
    S: Service<Request<ReqBody>, Response = Response<tonic::body::Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        match check(&self.token, request.uri(), request.headers()) {
            Ok(()) => Box::pin(self.inner.call(request)),
            Err(refusal) => {
                tracing::warn!(%refusal, "refused a TCP request");
                let status = match refusal {
                    Refusal::MissingToken | Refusal::WrongToken => {
                        tonic::Status::unauthenticated(refusal.to_string())
                    }
                    Refusal::Origin | Refusal::ForeignHost(_) => {
                        tonic::Status::permission_denied(refusal.to_string())
                    }
                };
                Box::pin(std::future::ready(Ok(status.into_http())))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn request(uri: &str, headers: &[(&str, &str)]) -> Result<(Uri, HeaderMap), http::Error> {
        let mut builder = Request::builder().uri(uri);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder.body(())?;
        let (parts, ()) = request.into_parts();
        Ok((parts.uri, parts.headers))
    }

    #[test]
    fn accepts_the_token_on_loopback_names() -> Result<(), http::Error> {
        for uri in [
            "http://127.0.0.1:7457/codaris.v1.Daemon/Status",
            "http://[::1]:7457/x",
            "http://localhost:7457/x",
            "http://127.0.0.2/x",
        ] {
            let (uri, headers) = request(uri, &[("authorization", "Bearer t0k")])?;
            assert_eq!(check("t0k", &uri, &headers), Ok(()), "{uri}");
        }
        Ok(())
    }

    #[test]
    fn refuses_each_way_in() -> Result<(), http::Error> {
        let loopback = "http://127.0.0.1:7457/x";
        let cases = [
            (loopback, vec![], Refusal::MissingToken),
            (
                loopback,
                vec![("authorization", "Bearer nope")],
                Refusal::WrongToken,
            ),
            (
                loopback,
                vec![("authorization", "t0k")],
                Refusal::MissingToken,
            ),
            (
                loopback,
                vec![
                    ("authorization", "Bearer t0k"),
                    ("origin", "http://evil.example"),
                ],
                Refusal::Origin,
            ),
            (
                "http://evil.example:7457/x",
                vec![("authorization", "Bearer t0k")],
                Refusal::ForeignHost("evil.example:7457".to_owned()),
            ),
            (
                "/x",
                vec![("authorization", "Bearer t0k"), ("host", "10.0.0.1:7457")],
                Refusal::ForeignHost("10.0.0.1:7457".to_owned()),
            ),
            (
                "http://localhost.evil.example/x",
                vec![("authorization", "Bearer t0k")],
                Refusal::ForeignHost("localhost.evil.example".to_owned()),
            ),
        ];
        for (uri, headers, expected) in cases {
            let (uri, headers) = request(uri, &headers)?;
            assert_eq!(check("t0k", &uri, &headers), Err(expected));
        }
        Ok(())
    }

    #[test]
    fn a_loopback_authority_with_a_foreign_host_header_is_refused() -> Result<(), http::Error> {
        let (uri, headers) = request(
            "http://127.0.0.1:7457/x",
            &[("authorization", "Bearer t0k"), ("host", "evil.example")],
        )?;
        assert_eq!(
            check("t0k", &uri, &headers),
            Err(Refusal::ForeignHost("evil.example".to_owned()))
        );
        Ok(())
    }
}
