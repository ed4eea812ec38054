//! A client for Seqera Wave's container API, for conda-package builds only:
//! `POST /v1alpha2/container` with `packages`, then `GET /v1alpha2/container/{id}/status`
//! until the build is done, and on a failure the tail of `GET /v1alpha1/builds/{id}/logs`.
//!
//! Wave takes the Seqera token in the request body (`towerAccessToken`, with `towerEndpoint`),
//! not in a header; without a token a build is anonymous (allowed, with a lower rate limit).
//! The token is never part of a message this module returns.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::args::cut;
use crate::http::{self, QUOTED_BODY, redact};
use crate::{SeqeraSetup, ToolFailure};

/// Lines of a failed build's log quoted in the error.
pub const LOG_TAIL_LINES: usize = 40;

/// The image format Wave builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Docker,
    Sif,
}

impl Format {
    pub fn parse(text: &str) -> Option<Format> {
        match text.to_ascii_lowercase().as_str() {
            "docker" => Some(Format::Docker),
            "sif" | "singularity" => Some(Format::Sif),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Docker => "docker",
            Format::Sif => "sif",
        }
    }
}

/// What to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildRequest {
    /// Conda entries (`bwa=0.7.19`).
    pub entries: Vec<String>,
    pub channels: Vec<String>,
    /// `linux/amd64` or `linux/arm64`.
    pub platform: String,
    pub format: Format,
    pub freeze: bool,
    /// Where a frozen image is pushed (one of the operator's registries).
    pub build_repository: Option<String>,
}

/// Wave's answer to the request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Submitted {
    pub request_id: String,
    pub target_image: String,
    #[serde(default)]
    pub build_id: Option<String>,
    #[serde(default)]
    pub cached: Option<bool>,
    #[serde(default)]
    pub freeze: Option<bool>,
    #[serde(default)]
    pub scan_id: Option<String>,
    #[serde(default)]
    pub expiration: Option<String>,
}

/// The container request's status.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub status: String,
    #[serde(default)]
    pub build_id: Option<String>,
    #[serde(default)]
    pub scan_id: Option<String>,
    #[serde(default)]
    pub vulnerabilities: Option<BTreeMap<String, u64>>,
    #[serde(default)]
    pub succeeded: Option<bool>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub duration: Option<Value>,
}

/// A finished, successful build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    pub submitted: Submitted,
    pub status: Status,
    /// How many status answers it took.
    pub polls: usize,
}

/// The Wave client of one server.
#[derive(Clone)]
pub struct Wave {
    url: String,
    platform_url: String,
    token: Option<String>,
    poll_interval: Duration,
    build_timeout: Duration,
}

impl std::fmt::Debug for Wave {
    /// The token is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wave")
            .field("url", &self.url)
            .field("platform_url", &self.platform_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("poll_interval", &self.poll_interval)
            .field("build_timeout", &self.build_timeout)
            .finish()
    }
}

impl Wave {
    pub fn new(setup: &SeqeraSetup) -> Wave {
        Wave {
            url: setup.wave_url.clone(),
            platform_url: setup.platform_url.clone(),
            token: setup.token.clone(),
            poll_interval: setup.poll_interval,
            build_timeout: setup.build_timeout,
        }
    }

    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// The request body: exactly one of Wave's three sources (here `packages`).
    pub fn body(&self, request: &BuildRequest) -> Value {
        let mut body = json!({
            "packages": {
                "type": "CONDA",
                "entries": request.entries,
                "channels": request.channels,
            },
            "containerPlatform": request.platform,
            "format": request.format.as_str(),
            "freeze": request.freeze,
        });
        if let Some(repository) = &request.build_repository {
            body["buildRepository"] = json!(repository);
        }
        if let Some(token) = &self.token {
            body["towerAccessToken"] = json!(token);
            body["towerEndpoint"] = json!(self.platform_url);
        }
        body
    }

    /// Submits the build and waits for it to finish.
    pub async fn build(&self, request: &BuildRequest) -> Result<Built, ToolFailure> {
        let client = http::client()?;
        let submitted = self.submit(&client, request).await?;
        let started = tokio::time::Instant::now();
        let mut polls = 0;
        loop {
            let status = self.status(&client, &submitted.request_id).await?;
            polls += 1;
            if status.succeeded == Some(false) {
                return Err(self.failed(&client, &submitted, &status).await);
            }
            if status.status.eq_ignore_ascii_case("DONE") {
                return Ok(Built {
                    submitted,
                    status,
                    polls,
                });
            }
            if started.elapsed() + self.poll_interval > self.build_timeout {
                return Err(ToolFailure::new(format!(
                    "Wave build {} did not finish within {}s (its status: {}); the build goes on at Wave, and a later identical call finds it",
                    submitted
                        .build_id
                        .as_deref()
                        .unwrap_or(&submitted.request_id),
                    self.build_timeout.as_secs(),
                    status.status
                )));
            }
            tokio::time::sleep(self.poll_interval).await;
        }
    }

    async fn submit(
        &self,
        client: &reqwest::Client,
        request: &BuildRequest,
    ) -> Result<Submitted, ToolFailure> {
        let answer = client
            .post(format!("{}/v1alpha2/container", self.url))
            .json(&self.body(request))
            .send()
            .await
            .map_err(|err| http::unreachable("Wave", &self.url, &err, self.token()))?;
        let text = self.checked(answer, "POST /v1alpha2/container").await?;
        serde_json::from_str(&text).map_err(|_| {
            ToolFailure::new(format!(
                "Wave's answer to POST /v1alpha2/container is not the documented JSON: {}",
                self.quote(&text)
            ))
        })
    }

    async fn status(
        &self,
        client: &reqwest::Client,
        request_id: &str,
    ) -> Result<Status, ToolFailure> {
        let path = format!("/v1alpha2/container/{}/status", path_segment(request_id));
        let answer = client
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .map_err(|err| http::unreachable("Wave", &self.url, &err, self.token()))?;
        let text = self.checked(answer, &format!("GET {path}")).await?;
        serde_json::from_str(&text).map_err(|_| {
            ToolFailure::new(format!(
                "Wave's answer to GET {path} is not the documented JSON: {}",
                self.quote(&text)
            ))
        })
    }

    /// A failed build in words: Wave's reason and the end of the build log.
    async fn failed(
        &self,
        client: &reqwest::Client,
        submitted: &Submitted,
        status: &Status,
    ) -> ToolFailure {
        let build_id = status.build_id.as_ref().or(submitted.build_id.as_ref());
        let reason = status.reason.as_deref().unwrap_or("no reason given");
        let mut message = format!(
            "Wave build {} failed: {}",
            build_id.map_or("(no build id)", String::as_str),
            cut(&redact(reason, self.token()), 1000)
        );
        match build_id {
            Some(id) => match self.log_tail(client, id).await {
                Ok(tail) if !tail.is_empty() => {
                    message.push_str(&format!("\nlast lines of the build log:\n{tail}"));
                }
                Ok(_) => message.push_str("\nthe build log is empty"),
                Err(err) => message.push_str(&format!("\nno build log: {err}")),
            },
            None => message.push_str("\nno build log: Wave gave no build id"),
        }
        ToolFailure::new(message)
    }

    async fn log_tail(&self, client: &reqwest::Client, build_id: &str) -> Result<String, String> {
        let path = format!("/v1alpha1/builds/{}/logs", path_segment(build_id));
        let answer = client
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .map_err(|err| http::unreachable("Wave", &self.url, &err, self.token()).0)?;
        let text = self
            .checked(answer, &format!("GET {path}"))
            .await
            .map_err(|err| err.0)?;
        let lines: Vec<&str> = text.lines().collect();
        let tail = &lines[lines.len().saturating_sub(LOG_TAIL_LINES)..];
        Ok(redact(&tail.join("\n"), self.token()))
    }

    /// The body of a 200 answer, or the error for any other.
    async fn checked(&self, answer: reqwest::Response, what: &str) -> Result<String, ToolFailure> {
        let status = answer.status();
        let text = answer
            .text()
            .await
            .map_err(|err| http::unreachable("Wave", &self.url, &err, self.token()))?;
        if status.as_u16() == 401 {
            return Err(ToolFailure::new(
                "Wave: invalid Seqera token (401 Unauthorized); check [seqera] token or TOWER_ACCESS_TOKEN, or remove it to build anonymously",
            ));
        }
        if !status.is_success() {
            return Err(ToolFailure::new(format!(
                "Wave answered {status} to {what}: {}",
                self.quote(&text)
            )));
        }
        Ok(text)
    }

    fn quote(&self, text: &str) -> String {
        let quoted = cut(&redact(text, self.token()), QUOTED_BODY);
        if quoted.is_empty() {
            "(empty body)".to_owned()
        } else {
            quoted
        }
    }
}

/// An id from Wave's answer, made safe to put in a URL path.
fn path_segment(id: &str) -> String {
    id.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> BuildRequest {
        BuildRequest {
            entries: vec!["bwa=0.7.19".into()],
            channels: vec!["conda-forge".into(), "bioconda".into()],
            platform: "linux/amd64".into(),
            format: Format::Docker,
            freeze: false,
            build_repository: None,
        }
    }

    #[test]
    fn the_body_sends_only_packages_and_the_token_in_the_body() {
        let setup = SeqeraSetup {
            token: Some("tok".into()),
            platform_url: "https://platform.example".into(),
            ..SeqeraSetup::default()
        };
        let body = Wave::new(&setup).body(&BuildRequest {
            freeze: true,
            build_repository: Some("quay.io/lab/images".into()),
            format: Format::Sif,
            ..request()
        });
        assert_eq!(
            body,
            json!({
                "packages": {"type": "CONDA", "entries": ["bwa=0.7.19"], "channels": ["conda-forge", "bioconda"]},
                "containerPlatform": "linux/amd64",
                "format": "sif",
                "freeze": true,
                "buildRepository": "quay.io/lab/images",
                "towerAccessToken": "tok",
                "towerEndpoint": "https://platform.example",
            })
        );
        assert!(body.get("containerImage").is_none() && body.get("containerFile").is_none());
    }

    #[test]
    fn anonymous_bodies_carry_no_token_fields() {
        let body = Wave::new(&SeqeraSetup::default()).body(&request());
        assert!(body.get("towerAccessToken").is_none());
        assert!(body.get("towerEndpoint").is_none());
        assert!(body.get("buildRepository").is_none());
    }

    #[test]
    fn ids_are_kept_to_url_safe_characters() {
        assert_eq!(path_segment("bd-49b2_1"), "bd-49b2_1");
        assert_eq!(path_segment("../../x?y=1"), "xy1");
    }

    #[test]
    fn formats_parse() {
        assert_eq!(Format::parse("SIF"), Some(Format::Sif));
        assert_eq!(Format::parse("docker"), Some(Format::Docker));
        assert_eq!(Format::parse("oci"), None);
    }

    #[tokio::test]
    async fn a_build_that_never_finishes_is_given_up_on_with_its_status() {
        let wave = codaris_test_support::fake_wave::FakeWave::with_pending_polls("tok", usize::MAX);
        let setup = SeqeraSetup {
            wave_url: wave.url(),
            poll_interval: Duration::from_millis(1),
            build_timeout: Duration::from_millis(30),
            ..SeqeraSetup::default()
        };
        let err = Wave::new(&setup).build(&request()).await.unwrap_err();
        assert!(err.0.contains("did not finish within"), "{err}");
        assert!(err.0.contains("its status: PENDING"), "{err}");
        assert!(wave.builds()[0].polls >= 1);
    }

    /// The stand-in keeps Wave's documented rules, so a client that broke them would fail.
    #[tokio::test]
    async fn the_fake_wave_keeps_the_documented_rules() {
        let wave = codaris_test_support::fake_wave::FakeWave::start("tok");
        let client = crate::tls::client_builder().build().unwrap();
        let post = |body: Value| {
            client
                .post(format!("{}/v1alpha2/container", wave.url()))
                .json(&body)
                .send()
        };
        let packages = json!({"type": "CONDA", "entries": ["bwa"], "channels": ["bioconda"]});
        let both = post(json!({"containerImage": "ubuntu:24.04", "packages": packages}))
            .await
            .unwrap();
        assert_eq!(both.status(), 400);
        let none = post(json!({"format": "docker"})).await.unwrap();
        assert_eq!(none.status(), 400);
        let wrong = post(json!({"packages": packages, "towerAccessToken": "nope"}))
            .await
            .unwrap();
        assert_eq!(wrong.status(), 401);
        let frozen = post(json!({"packages": packages, "freeze": true, "towerAccessToken": "tok"}))
            .await
            .unwrap();
        assert_eq!(frozen.status(), 400, "freeze needs a build repository");
        let anonymous = post(json!({"packages": packages})).await.unwrap();
        assert_eq!(anonymous.status(), 200);
        assert_eq!(
            anonymous
                .headers()
                .get("server")
                .and_then(|v| v.to_str().ok()),
            Some(codaris_test_support::fake_wave::NAME)
        );
        let unknown = client
            .get(format!("{}/v1alpha2/container/nope/status", wave.url()))
            .send()
            .await
            .unwrap();
        assert_eq!(unknown.status(), 404);
    }
}
