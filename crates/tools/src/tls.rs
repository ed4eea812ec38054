//! The crypto provider under reqwest's TLS: rustls's ring. reqwest is built without one of its
//! own (`rustls-no-provider`, so no aws-lc-sys C build; the workspace Cargo.toml says more) and
//! panics when a client is built before a provider is installed.

/// A client builder with ring installed as the process's provider first (once: another crate
/// of the process may have installed it already, which is as good).
pub(crate) fn client_builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}
