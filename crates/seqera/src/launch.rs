//! `launch_pipeline`: a run launched on Seqera Platform, `POST /workflow/launch?workspaceId=…`
//! with the launch body Platform's API documents (`{"launch": {"pipeline", "revision",
//! "computeEnvId", "workDir", "paramsText", "configProfiles", "runName"}}`), the token as the
//! bearer token.
//!
//! The body is a function of the call's arguments alone ([`launch_request`]), so the daemon
//! records the digest of the very bytes this tool sends ([`launch_body_sha256`]) with the
//! decision that let the call through, before anything leaves. A params file or a launchpad
//! pipeline (`params_file`, `launchpad_id`) is looked up by the daemon before the decision and
//! written into the arguments (`crate::launch_resolve`); this tool never opens the file or asks
//! for the launchpad itself, and refuses a call whose lookups were not made.

use serde_json::{Map, Value, json};
use sha2::Digest;

use crate::args::{Args, cut};
use crate::launch_resolve::{LAUNCH_ID, LAUNCHPAD, PARAMS_FILE_MERGED, UNRESOLVED};
use crate::platform::{Platform, where_};
use crate::{SeqeraSetup, SeqeraTool, ToolFailure};

/// The tool's name.
pub const LAUNCH_PIPELINE: &str = "launch_pipeline";

/// The most config profiles a launch names.
const MAX_PROFILES: usize = 20;
/// The largest `params` a launch sends, as JSON text.
const MAX_PARAMS_BYTES: usize = 256 * 1024;

/// A launch as it will be sent: the workspace (the query) and the body's exact bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchRequest {
    pub workspace: u64,
    pub pipeline: String,
    pub body: Vec<u8>,
}

impl LaunchRequest {
    /// SHA-256 (hex) of the body's bytes.
    pub fn sha256(&self) -> String {
        hex(&sha2::Sha256::digest(&self.body))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A name Platform takes in a list or a run name: letters, digits, `-`, `_`, `.`.
fn plain(text: &str) -> bool {
    text.len() <= 80
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The launch a call's arguments describe, or why they describe none.
pub fn launch_request(value: &Value) -> Result<LaunchRequest, ToolFailure> {
    let args = Args::of(LAUNCH_PIPELINE, value)?;
    let wrong = |key: &str, what: &str| {
        ToolFailure::new(format!("{LAUNCH_PIPELINE}: `{key}` must be {what}"))
    };
    if let Some(reason) = args.optional_str(UNRESOLVED)? {
        return Err(ToolFailure::new(format!("{LAUNCH_PIPELINE}: {reason}")));
    }
    let from_launchpad = !matches!(value.get("launchpad_id"), None | Some(Value::Null));
    let launch_id = args.optional_str(LAUNCH_ID)?;
    if from_launchpad != launch_id.is_some() {
        return Err(ToolFailure::new(format!(
            "{LAUNCH_PIPELINE}: a launchpad pipeline's settings are looked up by the Codaris daemon before the launch is decided, and this call came without them"
        )));
    }
    let file_merged = value.get(PARAMS_FILE_MERGED) == Some(&Value::Bool(true));
    if args.optional_str("params_file")?.is_some() != file_merged {
        return Err(ToolFailure::new(format!(
            "{LAUNCH_PIPELINE}: a params file is read by the Codaris daemon before the launch is decided, and this call came without its parameters"
        )));
    }
    let pipeline = args.required_str("pipeline")?;
    if pipeline
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(wrong(
            "pipeline",
            "a repository URL or a launchpad pipeline's name, without spaces",
        ));
    }
    let workspace = args
        .optional_workspace("workspace_id")?
        .ok_or_else(|| wrong("workspace_id", "a workspace id (it is required)"))?;
    let mut launch = Map::new();
    if let Some(id) = launch_id {
        launch.insert("id".into(), Value::from(id));
    }
    launch.insert("pipeline".into(), Value::from(pipeline));
    if let Some(revision) = args.optional_str("revision")? {
        if revision
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(wrong("revision", "a branch, tag or commit without spaces"));
        }
        launch.insert("revision".into(), Value::from(revision));
    }
    if let Some(ce) = args.optional_str("compute_env")? {
        if !ce.chars().all(|c| c.is_ascii_alphanumeric()) || ce.len() > 64 {
            return Err(wrong(
                "compute_env",
                "a compute environment id of letters and digits",
            ));
        }
        launch.insert("computeEnvId".into(), Value::from(ce));
    }
    if let Some(dir) = args.optional_str("work_dir")? {
        if dir.chars().any(char::is_control) {
            return Err(wrong("work_dir", "a URL or a path on one line"));
        }
        launch.insert("workDir".into(), Value::from(dir));
    }
    match value.get("params") {
        None | Some(Value::Null) => {}
        Some(Value::Object(params)) => {
            // Platform reads `paramsText` as YAML, of which JSON is a subset.
            let text = serde_json::to_string_pretty(params)
                .map_err(|_| wrong("params", "an object of parameters"))?;
            if text.len() > MAX_PARAMS_BYTES {
                return Err(wrong(
                    "params",
                    &format!("at most {} KiB as JSON", MAX_PARAMS_BYTES / 1024),
                ));
            }
            launch.insert("paramsText".into(), Value::from(text));
        }
        Some(_) => return Err(wrong("params", "an object of parameters")),
    }
    if let Some(profiles) = args.optional_strings("profiles", MAX_PROFILES)? {
        if let Some(bad) = profiles.iter().find(|p| !plain(p)) {
            return Err(ToolFailure::new(format!(
                "{LAUNCH_PIPELINE}: `{}` is not a profile name (letters, digits, `-`, `_`, `.`)",
                cut(bad, 80)
            )));
        }
        launch.insert("configProfiles".into(), json!(profiles));
    }
    if let Some(name) = args.optional_str("run_name")? {
        if !plain(name) {
            return Err(wrong(
                "run_name",
                "at most 80 letters, digits, `-`, `_` or `.`",
            ));
        }
        launch.insert("runName".into(), Value::from(name));
    }
    // The launchpad's own settings, as Platform holds them (only with a launchpad: the
    // daemon writes this key, never the model).
    match value.get(LAUNCHPAD) {
        None | Some(Value::Null) => {}
        Some(Value::Object(carried)) if from_launchpad => {
            for key in crate::launch_resolve::CARRIED {
                if let Some(setting) = carried.get(key).filter(|v| !v.is_null()) {
                    launch.insert(key.into(), setting.clone());
                }
            }
        }
        Some(_) => {
            return Err(ToolFailure::new(format!(
                "{LAUNCH_PIPELINE}: `{LAUNCHPAD}` is written by the Codaris daemon from a launchpad pipeline, not given"
            )));
        }
    }
    let body = serde_json::to_vec(&json!({ "launch": launch }))
        .map_err(|err| ToolFailure::new(format!("{LAUNCH_PIPELINE}: {err}")))?;
    Ok(LaunchRequest {
        workspace,
        pipeline: pipeline.to_owned(),
        body,
    })
}

/// What a person sees on a launch's card: the request exactly as it will be sent to
/// `platform_url` (its body pretty-printed, the token left out) and the body's digest, and the
/// action in a few words; `None` when the arguments send nothing.
pub fn launch_preview(platform_url: &str, args: &Value) -> Option<(String, String)> {
    let request = launch_request(args).ok()?;
    let body: Value = serde_json::from_slice(&request.body).ok()?;
    let pretty = serde_json::to_string_pretty(&body).ok()?;
    let text = format!(
        "POST {platform_url}/workflow/launch?workspaceId={}\n{pretty}\nbody sha256: {}",
        request.workspace,
        request.sha256()
    );
    // The card names where the run goes as the grant does: workspace, compute environment
    // and work dir.
    let action = format!(
        "launch `{}` on Seqera Platform in {}",
        cut(&request.pipeline, 120),
        codaris_policy::launch_target(args)
    );
    Some((text, action))
}

/// The SHA-256 of the body a call with `args` sends; `None` when it would send none.
pub fn launch_body_sha256(args: &Value) -> Option<String> {
    launch_request(args).ok().map(|request| request.sha256())
}

/// What vouches for each samplesheet the launch passes, as the policy read them before letting
/// it through: a location the compute environment reads (not gated here), or a local file
/// whose gate held.
fn sheet_lines(args: &Value) -> String {
    use codaris_policy::SheetPlace;
    // The policy judged these already; `/` only makes a relative path printable.
    codaris_policy::launch_samplesheets(args, "/")
        .into_iter()
        .filter_map(|sheet| match sheet.place {
            SheetPlace::Remote(at) => Some(format!(
                "\nsamplesheet `{}`: {at}, read by the compute environment itself (not gated by Codaris)",
                sheet.param
            )),
            SheetPlace::Local(_) => {
                let given = args.get("params")?.get(&sheet.param)?.as_str()?;
                Some(format!(
                    "\nsamplesheet `{}`: {given}, a local file whose samplesheet gate held",
                    sheet.param
                ))
            }
            SheetPlace::Ungateable(_) => None,
        })
        .collect()
}

/// `launch_pipeline` of one server.
#[derive(Debug, Clone)]
pub struct LaunchPipeline {
    platform: Platform,
}

impl LaunchPipeline {
    pub fn new(setup: &SeqeraSetup) -> Self {
        Self {
            platform: Platform {
                url: setup.platform_url.clone(),
                token: setup.token.clone(),
            },
        }
    }
}

#[async_trait::async_trait]
impl SeqeraTool for LaunchPipeline {
    fn name(&self) -> &'static str {
        LAUNCH_PIPELINE
    }

    fn description(&self) -> &'static str {
        "Seqera Platform: launch a pipeline run in a workspace, on a compute environment, with a work dir, revision, profiles and params; answers the run's id and name (follow it with describe_run, list_run_tasks, get_run_log). Always needs the user's approval."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pipeline": {"type": "string", "description": "A repository URL (https://github.com/nf-core/rnaseq) or the name of a launchpad pipeline (from list_pipelines); or give launchpad_id"},
                "launchpad_id": {"type": ["integer", "string"], "description": "A launchpad pipeline's id (pipelineId from list_pipelines) instead of pipeline: its repository, compute environment, work dir, profiles, params and settings are used unless given here"},
                "workspace_id": {"type": ["integer", "string"], "description": "Workspace id (from list_workspaces)"},
                "compute_env": {"type": "string", "description": "Compute environment id; leave out for the workspace's primary one"},
                "revision": {"type": "string", "description": "Branch, tag or commit"},
                "profiles": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_PROFILES, "description": "Config profiles (-profile)"},
                "params": {"type": "object", "description": "Pipeline parameters; a samplesheet (`input`) must be at s3://, gs://, az://, a Platform dataset, or a local file whose samplesheet gate holds"},
                "params_file": {"type": "string", "description": "Path of a JSON or YAML params file in the project; params override its values"},
                "work_dir": {"type": "string", "description": "Work directory the compute environment uses (s3://bucket/work); leave out for the compute environment's"},
                "run_name": {"type": "string", "description": "Run name (letters, digits, -, _)"}
            },
            "required": ["workspace_id"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        false
    }

    async fn call(&self, value: &Value) -> Result<String, ToolFailure> {
        let request = launch_request(value)?;
        let digest = request.sha256();
        let query = [("workspaceId", request.workspace.to_string())];
        let place = where_(Some(request.workspace));
        let answer = self
            .platform
            .post("/workflow/launch", &query, request.body, &place)
            .await?;
        let id = answer
            .get("workflowId")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric()))
            .ok_or_else(|| {
                ToolFailure::new(format!(
                    "Seqera Platform's launch answer has no run id: {}",
                    cut(&answer.to_string(), 200)
                ))
            })?;
        // Platform's launch answer is the id alone; the name (given or chosen by Platform) is
        // the run's, read back once. A failure to read it does not undo the launch.
        let name = match value.get("run_name").and_then(Value::as_str) {
            Some(name) => name.to_owned(),
            None => self
                .platform
                .get(&format!("/workflow/{id}"), &query, &place)
                .await
                .ok()
                .and_then(|run| {
                    run.pointer("/workflow/runName")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .unwrap_or_else(|| "chosen by Platform (describe_run shows it)".to_owned()),
        };
        let mut out = format!(
            "launched run {id} ({name}) of {} in {place}\nlaunch body sha256: {digest}",
            request.pipeline
        );
        if let Some(launchpad) = value.get("launchpad_id").filter(|v| !v.is_null()) {
            out.push_str(&format!(
                "\nfrom launchpad pipeline {}: its settings, where not given in the call",
                launchpad
                    .as_str()
                    .map_or_else(|| launchpad.to_string(), str::to_owned)
            ));
        }
        if let Some(file) = value.get("params_file").and_then(Value::as_str) {
            out.push_str(&format!(
                "\nparams: from `{}`, with params over its values",
                cut(file, 200)
            ));
        }
        out.push_str(&sheet_lines(value));
        out.push_str(&format!(
            "\nfollow it: describe_run {{\"run_id\": \"{id}\", \"workspace_id\": {}}}, then list_run_tasks and get_run_log",
            request.workspace
        ));
        Ok(out)
    }
}

#[cfg(test)]
#[path = "launch_tests.rs"]
mod tests;
