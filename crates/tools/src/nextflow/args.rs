//! The Nextflow tools' arguments: a pipeline directory, files beside it, and lists of names,
//! each path located under the fence as the file tools locate theirs (secrets refused,
//! symlinks followed only within the root).

use std::path::PathBuf;

use serde_json::Value;

use crate::context::ToolContext;
pub(crate) use crate::files::fence::opt_bool as flag;
use crate::files::fence::{Beneath, opt_str};
use crate::tool::ToolError;

/// Where `path` really is beneath its root, every symlink followed.
fn real(ctx: &ToolContext, tool: &'static str, path: &str) -> Result<PathBuf, ToolError> {
    let at = Beneath::locate(ctx, tool, path)?;
    at.real().ok_or_else(|| {
        ToolError::model(format!(
            "{tool}: `{path}` leads outside its allowed root or through a symlink loop"
        ))
    })
}

/// The pipeline directory of `args.path` (default: the working directory).
pub(crate) fn pipeline_dir(
    ctx: &ToolContext,
    tool: &'static str,
    args: &Value,
) -> Result<PathBuf, ToolError> {
    let path = optional_string(tool, args, "path")?.unwrap_or(".");
    let dir = real(ctx, tool, path)?;
    if !dir.is_dir() {
        return Err(ToolError::model(format!(
            "{tool}: `{path}` is not a directory; give the pipeline's directory"
        )));
    }
    Ok(dir)
}

/// An existing regular file named by `args.NAME`, when given.
pub(crate) fn input_file(
    ctx: &ToolContext,
    tool: &'static str,
    args: &Value,
    name: &str,
) -> Result<Option<PathBuf>, ToolError> {
    let Some(path) = optional_string(tool, args, name)? else {
        return Ok(None);
    };
    let file = real(ctx, tool, path)?;
    if !file.is_file() {
        return Err(ToolError::model(format!(
            "{tool}: `{name}` `{path}` is not a file"
        )));
    }
    Ok(Some(file))
}

/// An existing regular file at `path` (absolute, or relative to the working directory),
/// located under the fence; `what` names it in the error (`samplesheet `input``).
pub(crate) fn located_file(
    ctx: &ToolContext,
    tool: &'static str,
    what: &str,
    path: &str,
) -> Result<PathBuf, ToolError> {
    let file = real(ctx, tool, path)?;
    if !file.is_file() {
        return Err(ToolError::model(format!(
            "{tool}: {what} `{path}` is not a file"
        )));
    }
    Ok(file)
}

/// A directory the tool will create, named as the model wrote it: beneath a root, not
/// protected (`.git`, Codaris's own files) nor secret, its parent existing.
pub(crate) fn new_dir(
    ctx: &ToolContext,
    tool: &'static str,
    path: &str,
) -> Result<PathBuf, ToolError> {
    let at = Beneath::locate_change(ctx, tool, path)?;
    let dir = at.real().ok_or_else(|| {
        ToolError::model(format!(
            "{tool}: `{path}` leads outside its allowed root or through a symlink loop"
        ))
    })?;
    Ok(dir)
}

/// An optional string argument; given, it must not be blank.
pub(crate) fn optional_string<'a>(
    tool: &'static str,
    args: &'a Value,
    name: &str,
) -> Result<Option<&'a str>, ToolError> {
    match opt_str(tool, args, name)? {
        Some(text) if text.trim().is_empty() => Err(ToolError::model(format!(
            "{tool}: `{name}` must not be empty"
        ))),
        given => Ok(given),
    }
}

pub(crate) fn required_string<'a>(
    tool: &'static str,
    args: &'a Value,
    name: &str,
) -> Result<&'a str, ToolError> {
    optional_string(tool, args, name)?
        .ok_or_else(|| ToolError::model(format!("{tool}: `{name}` is required")))
}

/// A list of strings (`tests`, `skip_features`, `rules`); absent is empty.
pub(crate) fn string_list(
    tool: &'static str,
    args: &Value,
    name: &str,
) -> Result<Vec<String>, ToolError> {
    let wrong = || ToolError::model(format!("{tool}: `{name}` must be a list of strings"));
    match args.get(name) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned).ok_or_else(wrong))
            .collect(),
        Some(_) => Err(wrong()),
    }
}
