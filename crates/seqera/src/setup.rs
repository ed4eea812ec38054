//! What the server is told by the daemon that starts it: endpoints, the token, the registries
//! the operator allows pushes to, and the programs it runs. The daemon passes them as
//! environment variables of the server process ([`SeqeraSetup::from_env`]).

use std::path::PathBuf;
use std::time::Duration;

/// Seqera Wave's public endpoint.
pub const DEFAULT_WAVE_URL: &str = "https://wave.seqera.io";
/// Seqera Platform's public API.
pub const DEFAULT_PLATFORM_URL: &str = "https://api.cloud.seqera.io";
/// How often a Wave build's status is asked for, by default.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(3000);
/// How long a Wave build may take before the call gives up on waiting (the build goes on).
pub const DEFAULT_BUILD_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// Wave's base URL.
pub const ENV_WAVE_URL: &str = "CODARIS_SEQERA_WAVE_URL";
/// Seqera Platform's API base URL.
pub const ENV_PLATFORM_URL: &str = "CODARIS_SEQERA_PLATFORM_URL";
/// The Seqera access token, under the name Nextflow and tower-cli read it from.
pub const ENV_TOKEN: &str = "TOWER_ACCESS_TOKEN";
/// Registries images may be pushed to, comma-separated.
pub const ENV_REGISTRIES: &str = "CODARIS_SEQERA_REGISTRIES";
/// The `nextflow` program.
pub const ENV_NEXTFLOW: &str = "CODARIS_SEQERA_NEXTFLOW";
/// A module catalogue file replacing the shipped one.
pub const ENV_MODULES: &str = "CODARIS_SEQERA_MODULES";
/// Wave status polling interval in milliseconds.
pub const ENV_POLL_MS: &str = "CODARIS_SEQERA_POLL_MS";
/// How long to wait for a Wave build, in seconds.
pub const ENV_BUILD_TIMEOUT_SECS: &str = "CODARIS_SEQERA_BUILD_TIMEOUT_SECS";

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
    /// How often a Wave build's status is asked for.
    pub poll_interval: Duration,
    /// How long a Wave build is waited for.
    pub build_timeout: Duration,
    /// The only compute environments a launch may use (`[seqera] compute_envs`; empty: any).
    /// The daemon's policy input, checked before a launch reaches the server: not passed to it.
    pub compute_envs: Vec<String>,
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
            poll_interval: DEFAULT_POLL_INTERVAL,
            build_timeout: DEFAULT_BUILD_TIMEOUT,
            compute_envs: Vec::new(),
        }
    }
}

impl SeqeraSetup {
    /// The settings from the environment the daemon gave the server process (`get` reads one
    /// variable, so tests pass a map). Unset or empty variables keep the defaults; a malformed
    /// one is an error naming the variable (never its value, which may be the token).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<SeqeraSetup, String> {
        let read = |name: &str| {
            get(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let mut setup = SeqeraSetup::default();
        if let Some(url) = read(ENV_WAVE_URL) {
            setup.wave_url = base_url(ENV_WAVE_URL, &url)?;
        }
        if let Some(url) = read(ENV_PLATFORM_URL) {
            setup.platform_url = base_url(ENV_PLATFORM_URL, &url)?;
        }
        setup.token = read(ENV_TOKEN);
        if let Some(list) = read(ENV_REGISTRIES) {
            setup.registries = list
                .split(',')
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .map(str::to_owned)
                .collect();
        }
        if let Some(program) = read(ENV_NEXTFLOW) {
            setup.nextflow = PathBuf::from(program);
        }
        setup.modules = read(ENV_MODULES).map(PathBuf::from);
        if let Some(ms) = read(ENV_POLL_MS) {
            let ms = ms
                .parse::<u64>()
                .ok()
                .filter(|ms| (1..=600_000).contains(ms))
                .ok_or_else(|| {
                    format!("{ENV_POLL_MS} must be a number of milliseconds from 1 to 600000")
                })?;
            setup.poll_interval = Duration::from_millis(ms);
        }
        if let Some(secs) = read(ENV_BUILD_TIMEOUT_SECS) {
            let secs = secs
                .parse::<u64>()
                .ok()
                .filter(|s| (1..=86_400).contains(s))
                .ok_or_else(|| {
                    format!("{ENV_BUILD_TIMEOUT_SECS} must be a number of seconds from 1 to 86400")
                })?;
            setup.build_timeout = Duration::from_secs(secs);
        }
        Ok(setup)
    }

    /// The variables [`SeqeraSetup::from_env`] reads back into these settings, for the daemon
    /// to set on the server process (the token included: the child needs it).
    pub fn to_env(&self) -> Vec<(&'static str, String)> {
        let mut vars = vec![
            (ENV_WAVE_URL, self.wave_url.clone()),
            (ENV_PLATFORM_URL, self.platform_url.clone()),
            (ENV_REGISTRIES, self.registries.join(",")),
            (ENV_NEXTFLOW, self.nextflow.to_string_lossy().into_owned()),
            (ENV_POLL_MS, self.poll_interval.as_millis().to_string()),
            (
                ENV_BUILD_TIMEOUT_SECS,
                self.build_timeout.as_secs().max(1).to_string(),
            ),
        ];
        if let Some(token) = &self.token {
            vars.push((ENV_TOKEN, token.clone()));
        }
        if let Some(modules) = &self.modules {
            vars.push((ENV_MODULES, modules.to_string_lossy().into_owned()));
        }
        vars
    }
}

/// An `http(s)` base URL without its trailing slash.
fn base_url(name: &str, value: &str) -> Result<String, String> {
    match url::Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {
            Ok(value.trim_end_matches('/').to_owned())
        }
        _ => Err(format!("{name} must be an http or https URL")),
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
            .field("poll_interval", &self.poll_interval)
            .field("build_timeout", &self.build_timeout)
            .field("compute_envs", &self.compute_envs)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn nothing_set_gives_the_defaults() {
        assert_eq!(
            SeqeraSetup::from_env(env(&[])).unwrap(),
            SeqeraSetup::default()
        );
    }

    #[test]
    fn every_variable_is_read() {
        let setup = SeqeraSetup::from_env(env(&[
            (ENV_WAVE_URL, "http://127.0.0.1:9/"),
            (ENV_PLATFORM_URL, "https://tower.example.org/api"),
            (ENV_TOKEN, "tok-123"),
            (ENV_REGISTRIES, " quay.io/me/images, ,ghcr.io/lab/x "),
            (ENV_NEXTFLOW, "/opt/nf/nextflow"),
            (ENV_MODULES, "/etc/codaris/modules.json"),
            (ENV_POLL_MS, "5"),
            (ENV_BUILD_TIMEOUT_SECS, "30"),
        ]))
        .unwrap();
        assert_eq!(setup.wave_url, "http://127.0.0.1:9");
        assert_eq!(setup.platform_url, "https://tower.example.org/api");
        assert_eq!(setup.token.as_deref(), Some("tok-123"));
        assert_eq!(setup.registries, ["quay.io/me/images", "ghcr.io/lab/x"]);
        assert_eq!(setup.nextflow, PathBuf::from("/opt/nf/nextflow"));
        assert_eq!(
            setup.modules,
            Some(PathBuf::from("/etc/codaris/modules.json"))
        );
        assert_eq!(setup.poll_interval, Duration::from_millis(5));
        assert_eq!(setup.build_timeout, Duration::from_secs(30));
    }

    #[test]
    fn to_env_round_trips() {
        let setup = SeqeraSetup {
            token: Some("tok".into()),
            registries: vec!["a.io/x".into(), "b.io/y".into()],
            modules: Some("/m.json".into()),
            poll_interval: Duration::from_millis(7),
            build_timeout: Duration::from_secs(9),
            ..SeqeraSetup::default()
        };
        let vars: HashMap<&str, String> = setup.to_env().into_iter().collect();
        let back = SeqeraSetup::from_env(|name| vars.get(name).cloned()).unwrap();
        assert_eq!(back, setup);
    }

    #[test]
    fn malformed_values_name_the_variable_not_the_value() {
        for (name, value) in [
            (ENV_POLL_MS, "soon"),
            (ENV_POLL_MS, "0000000"),
            (ENV_POLL_MS, "99999999999999999999"),
            (ENV_BUILD_TIMEOUT_SECS, "-1"),
            (ENV_WAVE_URL, "ftp://wave"),
            (ENV_PLATFORM_URL, "not a url"),
        ] {
            let err = SeqeraSetup::from_env(env(&[(name, value)])).unwrap_err();
            assert!(err.starts_with(name), "{err}");
            assert!(!err.contains(value), "{err}");
        }
    }

    #[test]
    fn debug_never_shows_the_token() {
        let setup = SeqeraSetup {
            token: Some("s3cr3t-token".into()),
            ..SeqeraSetup::default()
        };
        let printed = format!("{setup:?}");
        assert!(!printed.contains("s3cr3t-token"), "{printed}");
        assert!(printed.contains("<redacted>"));
    }
}
