//! What a launch on Seqera Platform (`seqera__launch_pipeline`, the `launch` class) is judged
//! by: where it runs (the workspace, the compute environment, the work directory: one
//! `launch_on_platform` target, so the card names all three and a grant covers exactly them),
//! and where each samplesheet parameter points. Lexical only: the daemon finds which local
//! sheets have a gate that holds and passes them in [`crate::Task::gated_sheets`].

use serde_json::Value;

use crate::path::absolutize;
use crate::table::Finding;
use crate::task::Task;

/// The schemes a compute environment reads a samplesheet from itself (object stores).
pub const REMOTE_SCHEMES: [&str; 3] = ["s3://", "gs://", "az://"];

/// The `launch_on_platform` target of a launch: `workspace 123; compute environment ce1;
/// work dir s3://b/w`, with what Platform chooses when an argument is left out said as such.
pub fn launch_target(args: &Value) -> String {
    let workspace = match args.get("workspace_id") {
        Some(Value::Number(n)) => format!("workspace {n}"),
        Some(Value::String(s)) if !s.trim().is_empty() => format!("workspace {}", s.trim()),
        _ => "the personal workspace".to_owned(),
    };
    let compute_env = text(args, "compute_env").map_or_else(
        || "compute environment: the workspace's primary".to_owned(),
        |ce| format!("compute environment {ce}"),
    );
    let work_dir = text(args, "work_dir").map_or_else(
        || "work dir: the compute environment's".to_owned(),
        |dir| format!("work dir {dir}"),
    );
    format!("{workspace}; {compute_env}; {work_dir}")
}

fn text<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// The compute environment a launch names, if any.
pub fn launch_compute_env(args: &Value) -> Option<&str> {
    text(args, "compute_env")
}

/// Where one samplesheet parameter of a launch points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SheetPlace {
    /// An object store or a Platform dataset the compute environment reads itself.
    Remote(String),
    /// A local file, absolute and normalised against the task's working directory: it needs a
    /// gate that holds.
    Local(String),
    /// Anything else (an `https://` page, `ftp://`, a path that cannot be made absolute):
    /// neither gated here nor read by a compute environment as a dataset.
    Ungateable(String),
}

/// One samplesheet parameter of a launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchSheet {
    /// The parameter's name (`input`, `samplesheet`, …).
    pub param: String,
    pub place: SheetPlace,
}

/// Whether a parameter holds a samplesheet: nf-core's `input`, or a name that says so.
fn is_sheet_param(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name == "input" || name.ends_with("samplesheet") || name.ends_with("sample_sheet")
}

/// A Platform dataset's URL: `…/workspaces/{id}/datasets/{id}/v/{version}/n/{file}`.
fn is_platform_dataset(value: &str) -> bool {
    (value.starts_with("https://") || value.starts_with("http://"))
        && value.contains("/datasets/")
        && value.contains("/v/")
}

/// Every samplesheet parameter of a launch's `params` (an object), where each points; `cwd`
/// makes a relative path absolute as the policy judges every path.
pub fn launch_samplesheets(args: &Value, cwd: &str) -> Vec<LaunchSheet> {
    let Some(params) = args.get("params").and_then(Value::as_object) else {
        return Vec::new();
    };
    params
        .iter()
        .filter(|(name, _)| is_sheet_param(name))
        .filter_map(|(name, value)| {
            let value = value.as_str()?.trim();
            let place = if REMOTE_SCHEMES.iter().any(|s| value.starts_with(s))
                || is_platform_dataset(value)
            {
                SheetPlace::Remote(value.to_owned())
            } else if value.contains("://") {
                SheetPlace::Ungateable(value.to_owned())
            } else {
                match absolutize(value, cwd) {
                    Ok(path) => SheetPlace::Local(path.into_owned()),
                    Err(_) => SheetPlace::Ungateable(value.to_owned()),
                }
            };
            Some(LaunchSheet {
                param: name.clone(),
                place,
            })
        })
        .collect()
}

/// Why a `launch` class call is refused before anyone is asked: a compute environment the
/// operator does not list, or a samplesheet nothing vouches for.
pub(crate) fn launch_refusal<'a>(args: &'a Value, task: &'a Task) -> Option<Finding<'a>> {
    if !task.compute_envs.is_empty() {
        let named = launch_compute_env(args);
        if !named.is_some_and(|ce| task.compute_envs.iter().any(|listed| listed == ce)) {
            return Some(Finding::ComputeEnvNotListed(named));
        }
    }
    launch_samplesheets(args, &task.cwd)
        .into_iter()
        .find_map(|sheet| match sheet.place {
            SheetPlace::Remote(_) => None,
            SheetPlace::Local(path) if task.gated_sheets.contains(&path) => None,
            SheetPlace::Local(value) => Some(Finding::SamplesheetNotGated {
                param: sheet.param,
                value,
                local: true,
            }),
            SheetPlace::Ungateable(value) => Some(Finding::SamplesheetNotGated {
                param: sheet.param,
                value,
                local: false,
            }),
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_target_names_workspace_compute_env_and_work_dir() {
        assert_eq!(
            launch_target(
                &json!({"workspace_id": 123, "compute_env": "ce1", "work_dir": "s3://b/w"})
            ),
            "workspace 123; compute environment ce1; work dir s3://b/w"
        );
        assert_eq!(
            launch_target(&json!({"workspace_id": "77"})),
            "workspace 77; compute environment: the workspace's primary; work dir: the compute environment's"
        );
        assert!(launch_target(&json!({})).starts_with("the personal workspace;"));
    }

    #[test]
    fn sheets_are_remote_local_or_ungateable() {
        let args = json!({"params": {
            "input": "s3://lab/sheet.csv",
            "samplesheet": "sheets/../a.csv",
            "tumor_samplesheet": "https://example.org/x.csv",
            "dataset_samplesheet": "https://api.cloud.seqera.io/workspaces/1/datasets/2/v/1/n/s.csv",
            "outdir": "/tmp/out",
        }});
        let sheets = launch_samplesheets(&args, "/w/proj");
        let places: Vec<(&str, &SheetPlace)> = sheets
            .iter()
            .map(|s| (s.param.as_str(), &s.place))
            .collect();
        assert_eq!(
            places,
            [
                ("input", &SheetPlace::Remote("s3://lab/sheet.csv".into())),
                ("samplesheet", &SheetPlace::Local("/w/proj/a.csv".into())),
                (
                    "tumor_samplesheet",
                    &SheetPlace::Ungateable("https://example.org/x.csv".into())
                ),
                (
                    "dataset_samplesheet",
                    &SheetPlace::Remote(
                        "https://api.cloud.seqera.io/workspaces/1/datasets/2/v/1/n/s.csv".into()
                    )
                ),
            ]
        );
    }
}
