//! What the server is told by the daemon that starts it: endpoints, the token, the registries
//! the operator allows pushes to, and the programs it runs.

use std::path::PathBuf;

/// Seqera Wave's public endpoint.
pub const DEFAULT_WAVE_URL: &str = "https://wave.seqera.io";
/// Seqera Platform's public API.
pub const DEFAULT_PLATFORM_URL: &str = "https://api.cloud.seqera.io";

/// The server's settings (from `[seqera]` in the daemon's configuration and `[nextflow] bin`).
#[derive(Clone, PartialEq, Eq)]
pub struct SeqeraSetup {
    /// Wave's base URL, without a trailing slash.
    pub wave_url: String,
    /// Seqera Platform's API base URL, without a trailing slash.
    pub platform_url: String,
    /// The Seqera access token (`[seqera] token` or `TOWER_ACCESS_TOKEN`); sent only to Wave
    /// (in the body, as Wave requires) and to the Platform API (as a bearer token).
    pub token: Option<String>,
    /// Registries a built image may be pushed to (`[seqera] registries`); any other is refused.
    pub registries: Vec<String>,
    /// The `nextflow` program `lint_nextflow` runs.
    pub nextflow: PathBuf,
    /// A module catalogue that replaces the shipped one (updatable without a new build).
    pub modules: Option<PathBuf>,
}

impl Default for SeqeraSetup {
    fn default() -> Self {
        Self {
            wave_url: DEFAULT_WAVE_URL.to_owned(),
            platform_url: DEFAULT_PLATFORM_URL.to_owned(),
            token: None,
            registries: Vec::new(),
            nextflow: PathBuf::from("nextflow"),
            modules: None,
        }
    }
}

impl std::fmt::Debug for SeqeraSetup {
    /// The token is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeqeraSetup")
            .field("wave_url", &self.wave_url)
            .field("platform_url", &self.platform_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("registries", &self.registries)
            .field("nextflow", &self.nextflow)
            .field("modules", &self.modules)
            .finish()
    }
}
