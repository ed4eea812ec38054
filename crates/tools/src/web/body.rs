//! The body of an `http_request`: exactly one of six ways to give it, and the local files a body
//! or a saved answer touches, each kept inside the fence.

use std::path::{Path, PathBuf};

use base64::Engine;
use reqwest::multipart::{Form, Part};
use serde_json::{Map, Value};

use crate::context::{ToolContext, normalize};
use crate::tool::ToolError;

/// The argument names that carry a body, in the order messages list them.
pub const BODY_ARGS: &[&str] = &[
    "body",
    "body_base64",
    "body_file",
    "json",
    "form",
    "form_data",
];

/// Files sent at most: a body is held in memory while it is sent.
const MAX_UPLOAD: u64 = 64 * 1024 * 1024;

/// A request body, ready to attach.
#[derive(Debug)]
pub enum Body {
    None,
    Bytes(Vec<u8>),
    Json(Vec<u8>),
    Form(Vec<(String, String)>),
    Multipart(Form),
}

/// The body the arguments describe; more than one of [`BODY_ARGS`] is the model's mistake.
pub async fn body(ctx: &ToolContext, args: &Value) -> Result<Body, ToolError> {
    let given: Vec<&str> = BODY_ARGS
        .iter()
        .copied()
        .filter(|name| args.get(*name).is_some_and(|value| !value.is_null()))
        .collect();
    let name = match given.as_slice() {
        [] => return Ok(Body::None),
        [one] => *one,
        several => {
            return Err(ToolError::model(format!(
                "give at most one of `body`, `body_base64`, `body_file`, `json`, `form`, `form_data`; got `{}`",
                several.join("`, `")
            )));
        }
    };
    let value = &args[name];
    match name {
        "body" => Ok(Body::Bytes(string(value, name)?.as_bytes().to_vec())),
        "body_base64" => base64::engine::general_purpose::STANDARD
            .decode(string(value, name)?.trim())
            .map(Body::Bytes)
            .map_err(|error| ToolError::model(format!("`body_base64` is not base64: {error}"))),
        "body_file" => Ok(Body::Bytes(read_fenced(ctx, string(value, name)?).await?)),
        "json" => serde_json::to_vec(value)
            .map(Body::Json)
            .map_err(|error| ToolError::model(format!("`json` cannot be encoded: {error}"))),
        "form" => Ok(Body::Form(
            object(value, name)?
                .iter()
                .map(|(key, value)| Ok((key.clone(), scalar(value, name)?)))
                .collect::<Result<_, ToolError>>()?,
        )),
        _ => multipart(ctx, object(value, name)?)
            .await
            .map(Body::Multipart),
    }
}

/// `form_data`: a string is a text field; `{"file": path, "filename"?, "content_type"?}` uploads
/// a file from inside the fence.
async fn multipart(ctx: &ToolContext, fields: &Map<String, Value>) -> Result<Form, ToolError> {
    let mut form = Form::new();
    for (key, value) in fields {
        let Some(file) = value.get("file") else {
            form = form.text(key.clone(), scalar(value, "form_data")?);
            continue;
        };
        let path = string(file, "form_data file")?;
        let data = read_fenced(ctx, path).await?;
        let filename = match value.get("filename") {
            Some(name) => string(name, "form_data filename")?.to_owned(),
            None => Path::new(path)
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_else(|| key.clone()),
        };
        let mut part = Part::bytes(data).file_name(filename);
        if let Some(media) = value.get("content_type") {
            let media = string(media, "form_data content_type")?;
            part = part.mime_str(media).map_err(|_| {
                ToolError::model(format!("`{media}` is not a media type (form_data `{key}`)"))
            })?;
        }
        form = form.part(key.clone(), part);
    }
    Ok(form)
}

/// `path` made absolute against the working directory and found inside the fence, lexically.
pub fn fenced(ctx: &ToolContext, path: &str) -> Result<PathBuf, ToolError> {
    let absolute = ctx.absolute(path);
    let outside = || ToolError::model(format!("`{path}` is outside the allowed directories"));
    let normal = normalize(&absolute).ok_or_else(outside)?;
    ctx.fence.locate(&normal).ok_or_else(outside)?;
    Ok(normal)
}

/// A file's bytes, after its real path (every symlink followed) was found inside the fence.
async fn read_fenced(ctx: &ToolContext, path: &str) -> Result<Vec<u8>, ToolError> {
    let lexical = fenced(ctx, path)?;
    let not_found =
        |error: std::io::Error| ToolError::model(format!("cannot read `{path}`: {error}"));
    let real = tokio::fs::canonicalize(&lexical).await.map_err(not_found)?;
    if ctx.fence.locate(&real).is_none() {
        return Err(ToolError::model(format!(
            "`{path}` leads outside the allowed directories (through a symlink)"
        )));
    }
    let size = tokio::fs::metadata(&real).await.map_err(not_found)?.len();
    if size > MAX_UPLOAD {
        return Err(ToolError::model(format!(
            "`{path}` is {size} bytes; at most {MAX_UPLOAD} can be sent"
        )));
    }
    tokio::fs::read(&real).await.map_err(not_found)
}

/// Where `output_file` is written: its directory (created if missing) resolved with every
/// symlink followed and found inside the fence. The caller writes a fresh temporary file there
/// and renames it over the name, so a symlink or hard link planted at the name itself is
/// replaced, never written through.
pub async fn output_target(ctx: &ToolContext, path: &str) -> Result<PathBuf, ToolError> {
    let lexical = fenced(ctx, path)?;
    let (Some(parent), Some(name)) = (lexical.parent(), lexical.file_name()) else {
        return Err(ToolError::model(format!("`{path}` does not name a file")));
    };
    let failed =
        |error: std::io::Error| ToolError::model(format!("cannot write `{path}`: {error}"));
    tokio::fs::create_dir_all(parent).await.map_err(failed)?;
    let real_parent = tokio::fs::canonicalize(parent).await.map_err(failed)?;
    if ctx.fence.locate(&real_parent).is_none() {
        return Err(ToolError::model(format!(
            "`{path}` leads outside the allowed directories (through a symlink)"
        )));
    }
    Ok(real_parent.join(name))
}

fn string<'a>(value: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    value
        .as_str()
        .ok_or_else(|| ToolError::model(format!("`{name}` must be a string")))
}

fn object<'a>(value: &'a Value, name: &str) -> Result<&'a Map<String, Value>, ToolError> {
    value
        .as_object()
        .ok_or_else(|| ToolError::model(format!("`{name}` must be an object of fields")))
}

/// A string, number or boolean as the text a form or query carries.
pub fn scalar(value: &Value, name: &str) -> Result<String, ToolError> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Number(number) => Ok(number.to_string()),
        Value::Bool(flag) => Ok(flag.to_string()),
        _ => Err(ToolError::model(format!(
            "`{name}` values must be strings, numbers or booleans"
        ))),
    }
}
