//! `verify_tls` against a loopback HTTPS fake whose certificate is self-signed, so no client
//! trusts it: refused by default, accepted when the call turns the check off.

use std::sync::Arc;

use codaris_tools::{HttpRequest, Tool};
use serde_json::json;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{ServerConfig, crypto};

use crate::fake::{Reply, serve_tls};
use crate::{ctx, model_error, text};

/// Self-signed for `127.0.0.1` and `localhost`, valid from 2000 to 2100 (made once with
/// `openssl ca -selfsign`; a test key, used nowhere else).
const CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBaTCCARCgAwIBAgIBATAKBggqhkjOPQQDAjAXMRUwEwYDVQQDDAxjb2Rhcmlz
LXRlc3QwIBcNMDAwMTAxMDAwMDAwWhgPMjEwMDAxMDEwMDAwMDBaMBcxFTATBgNV
BAMMDGNvZGFyaXMtdGVzdDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABOf/syiX
on4m2F9PzfDjz6tzGQlqoZ61U1Y1MXsPtgDSla1ZhVeVA6Kg1rEa4g3oO8RatsqA
pkH/6qVXYkiJUISjSzBJMAwGA1UdEwEB/wQCMAAwGgYDVR0RBBMwEYcEfwAAAYIJ
bG9jYWxob3N0MB0GA1UdDgQWBBSuoTokEga8oH5amXIATS4EeXadoTAKBggqhkjO
PQQDAgNHADBEAiBy8AkD1sEVbbnutOliqy7Jw9MdofLiK0jOM7v6g68V5QIgQybW
FxYBoEDr9ghp22xReAIlZ6S1dfxziAby9XZvaBI=
-----END CERTIFICATE-----
";
const KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgrKi5Rhx4TqyhnUCo
W6vM6J2Z4IhvtIYM0xbK2E96cOKhRANCAATn/7Mol6J+JthfT83w48+rcxkJaqGe
tVNWNTF7D7YA0pWtWYVXlQOioNaxGuIN6DvEWrbKgKZB/+qlV2JIiVCE
-----END PRIVATE KEY-----
";

fn acceptor() -> TlsAcceptor {
    let cert = CertificateDer::from_pem_slice(CERT.as_bytes()).unwrap();
    let key = PrivateKeyDer::from_pem_slice(KEY.as_bytes()).unwrap();
    let config = ServerConfig::builder_with_provider(Arc::new(crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    TlsAcceptor::from(Arc::new(config))
}

#[tokio::test]
async fn verify_tls_false_accepts_a_self_signed_certificate_and_only_then() {
    let server = serve_tls(acceptor(), |_| Reply::new(200, "text/plain", "over tls")).await;
    let dir = tempfile::tempdir().unwrap();
    let url = server.url("/secure");
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    for args in [json!({"url": url}), json!({"url": url, "verify_tls": true})] {
        let message = model_error(HttpRequest::new().call(&ctx(dir.path()), &args).await);
        assert!(
            message.starts_with(&format!("request to `{url}` failed: ")),
            "{args}: {message}"
        );
        assert!(
            message.contains("certificate") && message.contains("UnknownIssuer"),
            "{args}: {message}"
        );
    }
    assert_eq!(
        server.seen(),
        vec![],
        "no request crossed a refused handshake"
    );
    let output = HttpRequest::new()
        .call(&ctx(dir.path()), &json!({"url": url, "verify_tls": false}))
        .await
        .unwrap();
    let text = text(&output);
    assert!(text.starts_with("HTTP/1.1 200 "), "{text}");
    assert!(text.ends_with("\n\nover tls"), "{text}");
    assert_eq!(server.seen().len(), 1);
}
