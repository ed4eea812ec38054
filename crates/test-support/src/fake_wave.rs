//! A stand-in for Seqera Wave's container API (`codaris-fake-wave`), written from Wave's
//! documented request and answer formats (docs/api.md of seqeralabs/wave): conda-package and
//! image requests on `POST /v1alpha2/container`, their status, and build logs.
//!
//! What it checks, as Wave does: exactly one of `containerImage`, `containerFile`, `packages`
//! (400 otherwise); a frozen build needs `buildRepository` and a token; a given token must be
//! the fixture's (401 otherwise), while no token at all is an anonymous request. Its tags are a
//! checksum of the request, so the same request gets the same image (`cached: true` on a
//! repeat). A build stays PENDING for a set number of status polls, then is DONE; a package
//! entry containing `doesnotexist` fails with a reason and a build log.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use crate::fake_http::{FakeHttp, Reply, Seen};

/// The name it gives itself (its `Server` header).
pub const NAME: &str = "codaris-fake-wave";
/// How many status polls a new build answers PENDING, unless told otherwise.
pub const DEFAULT_PENDING_POLLS: usize = 2;
/// What a failing build's log ends with.
pub const FAILED_LOG_LAST_LINE: &str = "PackagesNotFoundError: The following packages are not available from current channels: doesnotexist";

/// One container request Wave accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeBuild {
    pub request_id: String,
    pub build_id: String,
    /// The request's `packages.entries` (empty for an image request).
    pub entries: Vec<String>,
    pub channels: Vec<String>,
    pub platform: String,
    pub format: String,
    pub freeze: bool,
    pub build_repository: Option<String>,
    /// Whether it came with the fixture token (else anonymous).
    pub authenticated: bool,
    pub target_image: String,
    pub cached: bool,
    /// Status polls answered so far.
    pub polls: usize,
    pub fails: bool,
}

#[derive(Debug, Default)]
struct State {
    builds: Vec<FakeBuild>,
    /// Tags built before (for `cached`).
    tags: HashMap<String, usize>,
}

/// A running fake Wave.
#[derive(Debug)]
pub struct FakeWave {
    http: FakeHttp,
    state: Arc<Mutex<State>>,
}

impl FakeWave {
    /// Accepts `token` (and anonymous requests); builds are PENDING for
    /// [`DEFAULT_PENDING_POLLS`] polls.
    pub fn start(token: &str) -> FakeWave {
        FakeWave::with_pending_polls(token, DEFAULT_PENDING_POLLS)
    }

    pub fn with_pending_polls(token: &str, pending_polls: usize) -> FakeWave {
        let state = Arc::new(Mutex::new(State::default()));
        let (token, shared) = (token.to_owned(), state.clone());
        let http = FakeHttp::start(move |seen| {
            let mut state = shared.lock().unwrap_or_else(PoisonError::into_inner);
            answer(seen, &token, pending_polls, &mut state).header("Server", NAME)
        });
        FakeWave { http, state }
    }

    pub fn url(&self) -> String {
        self.http.url()
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.http.seen()
    }

    /// Every container request accepted so far.
    pub fn builds(&self) -> Vec<FakeBuild> {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .builds
            .clone()
    }
}

fn error(status: u16, message: &str) -> Reply {
    Reply::json(status, &json!({ "message": message }))
}

fn answer(seen: &Seen, token: &str, pending_polls: usize, state: &mut State) -> Reply {
    let parts: Vec<&str> = seen.path().trim_matches('/').split('/').collect();
    match (seen.method.as_str(), parts.as_slice()) {
        ("POST", ["v1alpha2", "container"]) => submit(seen, token, state),
        ("GET", ["v1alpha2", "container", id, "status"]) => {
            container_status(id, pending_polls, state)
                .unwrap_or_else(|| Reply::not_implemented(NAME, seen))
        }
        ("GET", ["v1alpha1", "builds", id, "status"]) => build_status(id, pending_polls, state)
            .unwrap_or_else(|| Reply::not_implemented(NAME, seen)),
        ("GET", ["v1alpha1", "builds", id, "logs"]) => {
            build_logs(id, state).unwrap_or_else(|| Reply::not_implemented(NAME, seen))
        }
        _ => Reply::not_implemented(NAME, seen),
    }
}

fn submit(seen: &Seen, token: &str, state: &mut State) -> Reply {
    let Some(body) = seen.json().filter(Value::is_object) else {
        return error(400, "the request body is not a JSON object");
    };
    let given = |key: &str| body.get(key).is_some_and(|v| !v.is_null());
    let sources = ["containerImage", "containerFile", "packages"]
        .iter()
        .filter(|key| given(key))
        .count();
    if sources != 1 {
        return error(
            400,
            "Exactly one of containerImage, containerFile or packages must be given",
        );
    }
    let authenticated = match body.get("towerAccessToken").and_then(Value::as_str) {
        None => false,
        Some(sent) if sent == token => true,
        Some(_) => return error(401, "Unauthorized"),
    };
    if let Some(file) = body.get("containerFile")
        && !file.as_str().is_some_and(is_base64)
    {
        return error(400, "containerFile must be base64 encoded");
    }
    let (entries, channels) = match body.get("packages") {
        Some(packages) => {
            let kind = packages.get("type").and_then(Value::as_str);
            if !matches!(kind, Some("CONDA" | "CRAN")) {
                return error(400, "packages.type must be CONDA or CRAN");
            }
            let strings = |key: &str| -> Option<Vec<String>> {
                packages.get(key).map_or(Some(Vec::new()), |v| {
                    v.as_array()?
                        .iter()
                        .map(|e| e.as_str().map(str::to_owned))
                        .collect()
                })
            };
            let (Some(entries), Some(channels)) = (strings("entries"), strings("channels")) else {
                return error(
                    400,
                    "packages.entries and packages.channels must be lists of strings",
                );
            };
            if entries.is_empty()
                && !packages
                    .get("environment")
                    .is_some_and(|e| e.as_str().is_some_and(is_base64))
            {
                return error(400, "packages needs entries or a base64 environment");
            }
            (entries, channels)
        }
        None => (Vec::new(), Vec::new()),
    };
    let freeze = body.get("freeze").and_then(Value::as_bool).unwrap_or(false);
    let build_repository = body
        .get("buildRepository")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if freeze && build_repository.is_none() {
        return error(
            400,
            "Freeze mode requires a build repository (buildRepository)",
        );
    }
    if freeze && !authenticated {
        return error(400, "Freeze mode requires an access token");
    }
    let platform = body
        .get("containerPlatform")
        .and_then(Value::as_str)
        .unwrap_or("linux/amd64")
        .to_owned();
    let format = body
        .get("format")
        .and_then(Value::as_str)
        .unwrap_or("docker")
        .to_owned();
    if !matches!(format.as_str(), "docker" | "sif") {
        return error(400, "format must be docker or sif");
    }
    // The tag stands for what is built, never for who asked: the token is left out.
    let mut canonical = body.clone();
    if let Some(object) = canonical.as_object_mut() {
        object.remove("towerAccessToken");
        object.remove("towerEndpoint");
    }
    let tag = format!("{:016x}", fnv1a(canonical.to_string().as_bytes()));
    let repeats = state.tags.entry(tag.clone()).or_insert(0);
    let cached = *repeats > 0;
    *repeats += 1;
    let request_id = format!(
        "{:012x}",
        fnv1a(format!("{tag}#{}", state.builds.len()).as_bytes()) & 0xffff_ffff_ffff
    );
    let build_id = format!("bd-{tag}_1");
    let host = seen.header("host").unwrap_or("wave.seqera.io").to_owned();
    let target_image = match (&build_repository, freeze, format.as_str()) {
        (Some(repo), true, "sif") => format!("oras://{repo}:{tag}"),
        (Some(repo), true, _) => format!("{repo}:{tag}"),
        _ => format!("{host}/wt/{request_id}/wave/build:{tag}"),
    };
    let fails = entries.iter().any(|e| e.contains("doesnotexist"));
    state.builds.push(FakeBuild {
        request_id: request_id.clone(),
        build_id: build_id.clone(),
        entries,
        channels,
        platform,
        format,
        freeze,
        build_repository,
        authenticated,
        target_image: target_image.clone(),
        cached,
        polls: 0,
        fails,
    });
    let mut reply = json!({
        "requestId": request_id,
        "targetImage": target_image,
        "containerImage": format!("private.cr.seqera.io/wave/build:{tag}"),
        "buildId": build_id,
        "cached": cached,
        "freeze": freeze,
        "mirror": false,
        "scanId": format!("sc-{tag}_1"),
    });
    if !freeze {
        reply["containerToken"] = json!(request_id);
        reply["expiration"] = json!("2030-01-01T00:00:00Z");
    }
    Reply::json(200, &reply)
}

/// Counts a poll; whether the build is finished now.
fn poll(
    state: &mut State,
    pending_polls: usize,
    find: impl Fn(&FakeBuild) -> bool,
) -> Option<(&FakeBuild, bool)> {
    let build = state.builds.iter_mut().find(|b| find(b))?;
    build.polls += 1;
    let done = build.cached || build.polls > pending_polls;
    Some((build, done))
}

fn container_status(id: &str, pending_polls: usize, state: &mut State) -> Option<Reply> {
    let (build, done) = poll(state, pending_polls, |b| b.request_id == id)?;
    let tag = build
        .build_id
        .trim_start_matches("bd-")
        .trim_end_matches("_1");
    let mut status = json!({
        "id": build.request_id,
        "status": if done { "DONE" } else { "PENDING" },
        "buildId": build.build_id,
        "scanId": format!("sc-{tag}_1"),
        "creationTime": "2030-01-01T00:00:00Z",
    });
    if done {
        status["succeeded"] = json!(!build.fails);
        status["duration"] = json!("PT42S");
        if build.fails {
            status["reason"] = json!(
                "Container build failed: conda could not resolve the packages (exit status 1)"
            );
        } else {
            status["vulnerabilities"] = json!({ "HIGH": 1, "MEDIUM": 3, "LOW": 7 });
        }
    }
    Some(Reply::json(200, &status))
}

fn build_status(id: &str, pending_polls: usize, state: &mut State) -> Option<Reply> {
    let (build, done) = poll(state, pending_polls, |b| b.build_id == id)?;
    let mut status = json!({
        "id": build.build_id,
        "status": if done { "COMPLETED" } else { "PENDING" },
        "startTime": "2030-01-01T00:00:00Z",
    });
    if done {
        status["succeeded"] = json!(!build.fails);
        status["duration"] = json!("PT42S");
    }
    Some(Reply::json(200, &status))
}

fn build_logs(id: &str, state: &State) -> Option<Reply> {
    let build = state.builds.iter().find(|b| b.build_id == id)?;
    let mut log: Vec<String> = (1..=60)
        .map(|n| format!("#{n} [fake build step {n}] ok"))
        .collect();
    if build.fails {
        log.push("critical libmamba Could not solve for environment specs".to_owned());
        log.push(FAILED_LOG_LAST_LINE.to_owned());
    } else {
        log.push("pushing the image: done".to_owned());
    }
    Some(Reply::text(200, &log.join("\n")))
}

fn is_base64(text: &str) -> bool {
    !text.is_empty()
        && text.len().is_multiple_of(4)
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
