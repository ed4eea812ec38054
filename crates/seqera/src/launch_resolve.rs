//! A launch's arguments made whole before it is decided.
//!
//! Two arguments of `launch_pipeline` name something the launch body is built from rather than
//! carrying it: `launchpad_id` (a launchpad pipeline, whose repository, compute environment,
//! work directory, profiles, params and advanced settings Platform holds) and `params_file` (a
//! file of parameters). The daemon looks both up *before* the policy decides, and writes what
//! it found into the arguments ([`resolve`]): the card then names the compute environment and
//! work directory the run will really use, the policy judges every samplesheet parameter the
//! run will really get, and the body stays a function of the arguments alone, so the digest
//! recorded with the decision is the digest of the bytes that leave. The server never opens a
//! file or asks Platform for a launchpad's settings on its own: a call that reaches it with
//! `params_file` or `launchpad_id` not resolved is refused.
//!
//! The keys the daemon writes ([`DAEMON_KEYS`]) are taken out of whatever the model (or a hook)
//! sent first ([`strip_daemon_keys`]), so a call cannot bring its own `preRunScript` in through
//! `launchpad`, nor claim a params file was read.

use serde_json::{Map, Value};

use crate::SeqeraSetup;
use crate::ToolFailure;
use crate::args::Args;
use crate::launch::LAUNCH_PIPELINE;
use crate::platform::{Platform, where_};

/// The launchpad's launch id, sent back as the body's `id` (as `tw launch` does).
pub const LAUNCH_ID: &str = "launch_id";
/// The launchpad's advanced settings the launch carries as Platform holds them.
pub const LAUNCHPAD: &str = "launchpad";
/// Set when `params_file` was read and merged into `params`.
pub const PARAMS_FILE_MERGED: &str = "params_file_merged";
/// Why the daemon could not resolve the launch, in one line; the server refuses with it.
pub const UNRESOLVED: &str = "unresolved";
/// Every key only the daemon writes.
pub const DAEMON_KEYS: [&str; 4] = [LAUNCH_ID, LAUNCHPAD, PARAMS_FILE_MERGED, UNRESOLVED];

/// The largest params file read.
pub const MAX_PARAMS_FILE_BYTES: u64 = 256 * 1024;

/// The fields of a launchpad's launch (`DescribeLaunchResponse.launch`) carried into the launch
/// request unchanged, as Platform's own CLI carries them (`tw launch`): how the launchpad's
/// maintainers set the pipeline up to run. Anything else of the launchpad is left behind.
pub const CARRIED: [&str; 10] = [
    "configText",
    "preRunScript",
    "postRunScript",
    "mainScript",
    "entryName",
    "schemaName",
    "pullLatest",
    "stubRun",
    "userSecrets",
    "workspaceSecrets",
];

/// Removes every key only the daemon may write from `args`.
pub fn strip_daemon_keys(args: &mut Value) {
    if let Value::Object(map) = args {
        for key in DAEMON_KEYS {
            map.remove(key);
        }
    }
}

/// What a launch's arguments ask to be looked up before the decision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lookups {
    /// The workspace and the launchpad pipeline's id.
    pub launchpad: Option<(u64, u64)>,
    /// The params file, as the call wrote it.
    pub params_file: Option<String>,
}

impl Lookups {
    pub fn is_empty(&self) -> bool {
        self.launchpad.is_none() && self.params_file.is_none()
    }
}

/// A launchpad pipeline's id (`pipelineId` in `list_pipelines`): a number, or its digits.
fn launchpad_id(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// What `args` (a launch's) ask to be looked up, or why they cannot be launched as given.
pub fn lookups(args: &Value) -> Result<Lookups, String> {
    let mut found = Lookups::default();
    let has_pipeline = args
        .get("pipeline")
        .and_then(Value::as_str)
        .is_some_and(|p| !p.trim().is_empty());
    match args.get("launchpad_id") {
        None | Some(Value::Null) => {}
        Some(value) => {
            if has_pipeline {
                return Err(
                    "give `pipeline` or `launchpad_id`, not both: a launchpad pipeline names its repository itself"
                        .to_owned(),
                );
            }
            let id = launchpad_id(value).ok_or_else(|| {
                "`launchpad_id` must be a launchpad pipeline's id (`pipelineId` from list_pipelines)"
                    .to_owned()
            })?;
            // Read as the server's other tools read it.
            let workspace = Args::of(LAUNCH_PIPELINE, args)
                .and_then(|args| args.optional_workspace("workspace_id"))
                .ok()
                .flatten()
                .ok_or_else(|| {
                    "`workspace_id` must be a workspace id (it is required)".to_owned()
                })?;
            found.launchpad = Some((workspace, id));
        }
    }
    match args.get("params_file") {
        None | Some(Value::Null) => {}
        Some(Value::String(path)) if !path.trim().is_empty() => {
            found.params_file = Some(path.trim().to_owned());
        }
        Some(_) => return Err("`params_file` must be a path".to_owned()),
    }
    Ok(found)
}

/// Parameters written as a JSON object or a YAML mapping (as `nextflow -params-file` takes
/// them, and as Platform's `paramsText` holds them). `what` names them in an error.
pub fn params_map(text: &str, what: &str) -> Result<Map<String, Value>, String> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(_) => serde_yaml_ng::from_str(text).map_err(|err| {
            // The location helps; the parser's message may quote the text, which is the
            // person's own file (a launchpad's text is not quoted: see `resolve`).
            let at = err
                .location()
                .map(|l| format!(" at line {}, column {}", l.line(), l.column()))
                .unwrap_or_default();
            format!("{what} is neither JSON nor YAML{at}")
        })?,
    };
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        _ => Err(format!(
            "{what} is not a mapping of parameter names to values"
        )),
    }
}

/// `args` with what `launchpad` (the `launch` object of `GET /pipelines/{id}/launch`) and the
/// params file's `params_file_text` hold written in; the call's own arguments win over the
/// launchpad's, and `params` over the file's over the launchpad's, key by key (as Nextflow's
/// command line wins over `-params-file`).
pub fn resolve(
    args: &Value,
    launchpad: Option<&Value>,
    params_file_text: Option<&str>,
) -> Result<Value, String> {
    let Value::Object(given) = args else {
        return Err("the arguments must be a JSON object".to_owned());
    };
    let mut out = given.clone();
    let mut params = Map::new();
    if let Some(launch) = launchpad {
        let text = launch
            .get("paramsText")
            .and_then(Value::as_str)
            .unwrap_or("");
        // Not quoted: the launchpad's text is Platform's, not the person's file.
        params.extend(params_map(text, "the launchpad's params").map_err(|_| {
            "the launchpad's params are not a JSON or YAML mapping of names to values".to_owned()
        })?);
        let pipeline = launch
            .get("pipeline")
            .and_then(Value::as_str)
            .filter(|p| !p.trim().is_empty())
            .ok_or_else(|| "the launchpad pipeline names no repository".to_owned())?;
        out.insert("pipeline".into(), Value::from(pipeline));
        let id = launch
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .ok_or_else(|| "the launchpad pipeline's launch has no id".to_owned())?;
        out.insert(LAUNCH_ID.into(), Value::from(id));
        let defaults = [
            ("compute_env", launch.pointer("/computeEnv/id")),
            ("work_dir", launch.get("workDir")),
            ("revision", launch.get("revision")),
            ("profiles", launch.get("configProfiles")),
        ];
        for (key, value) in defaults {
            let given = out.get(key).is_some_and(|v| !v.is_null());
            if let Some(value) = value.filter(|v| !v.is_null())
                && !given
            {
                out.insert(key.into(), value.clone());
            }
        }
        let carried: Map<String, Value> = CARRIED
            .iter()
            .filter_map(|key| {
                let value = launch.get(*key).filter(|v| !v.is_null())?;
                Some(((*key).to_owned(), value.clone()))
            })
            .collect();
        if !carried.is_empty() {
            out.insert(LAUNCHPAD.into(), Value::Object(carried));
        }
    }
    if let Some(text) = params_file_text {
        params.extend(params_map(text, "the params file")?);
        out.insert(PARAMS_FILE_MERGED.into(), Value::Bool(true));
    }
    match given.get("params") {
        None | Some(Value::Null) => {}
        Some(Value::Object(own)) => params.extend(own.clone()),
        // Left as given: the server refuses it in its own words.
        Some(_) => return Ok(Value::Object(out)),
    }
    if !params.is_empty() {
        out.insert("params".into(), Value::Object(params));
    }
    Ok(Value::Object(out))
}

/// `args` marked as not resolved, for `reason` (one line, no file's content): the policy still
/// decides the call, and the server refuses it with the reason.
pub fn unresolved(args: &Value, reason: &str) -> Value {
    let mut out = args.clone();
    if let Value::Object(map) = &mut out {
        map.insert(UNRESOLVED.into(), Value::from(reason));
    }
    out
}

/// A launchpad pipeline's launch settings: `GET /pipelines/{id}/launch?workspaceId=…`, the
/// `launch` object of the answer (`DescribeLaunchResponse`).
pub async fn launchpad_launch(
    setup: &SeqeraSetup,
    workspace: u64,
    pipeline: u64,
) -> Result<Value, ToolFailure> {
    let platform = Platform {
        url: setup.platform_url.clone(),
        token: setup.token.clone(),
    };
    let answer = platform
        .get(
            &format!("/pipelines/{pipeline}/launch"),
            &[("workspaceId", workspace.to_string())],
            &where_(Some(workspace)),
        )
        .await?;
    match answer.get("launch") {
        Some(launch @ Value::Object(_)) => Ok(launch.clone()),
        _ => Err(ToolFailure::new(format!(
            "Seqera Platform's answer for launchpad pipeline {pipeline} has no launch settings"
        ))),
    }
}

#[cfg(test)]
#[path = "launch_resolve_tests.rs"]
mod tests;
