//! The body of an `http_request`: exactly one of six ways to give it, and the local files a body
//! or a saved answer touches, each opened beneath its allowed root as the file tools open
//! theirs (`files::fence::Beneath`).

use std::ffi::OsStr;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;
use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};
use reqwest::multipart::{Form, Part};
use serde_json::{Map, Value};

use crate::context::ToolContext;
use crate::files::fence::{Beneath, ensure_dir, io_error};
use crate::tool::ToolError;

const TOOL: &str = codaris_catalogue::HTTP_REQUEST.name;

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

/// Runs file system work on the blocking pool, as the file tools do: reading a 64 MiB upload
/// would otherwise stall a runtime worker.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| ToolError::Fatal {
            tool: TOOL,
            source: io::Error::other(error),
        })?
}

/// A file's bytes, opened beneath the allowed root it lies in as `read_file` opens it: a `..`
/// or a symlink leading out of the root is refused at the open itself (so one swapped in after
/// the policy's check cannot redirect the read), and so are the fence's secrets. A file with
/// several hard links is read, as `read_file` reads it.
async fn read_fenced(ctx: &ToolContext, path: &str) -> Result<Vec<u8>, ToolError> {
    let (ctx, path) = (ctx.clone(), path.to_owned());
    blocking(move || read_beneath(&ctx, &path)).await
}

fn read_beneath(ctx: &ToolContext, path: &str) -> Result<Vec<u8>, ToolError> {
    let at = Beneath::locate(ctx, TOOL, path)?;
    // Non-blocking, so a FIFO swapped in cannot hang the call; it is refused just below.
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed());
    let file = at
        .dir
        .open_with(&at.rel, &options)
        .map_err(|e| at.err(ctx, e))?;
    let meta = file.metadata().map_err(|e| at.err(ctx, e))?;
    if !meta.is_file() {
        return Err(ToolError::model(format!(
            "{TOOL}: `{}` is not a regular file",
            at.shown(ctx)
        )));
    }
    let too_big = |size: u64| {
        ToolError::model(format!(
            "{TOOL}: `{}` is {size} bytes; at most {MAX_UPLOAD} can be sent",
            at.shown(ctx)
        ))
    };
    if meta.len() > MAX_UPLOAD {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_UPLOAD + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| at.err(ctx, e))?;
    if bytes.len() as u64 > MAX_UPLOAD {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Where `output_file` is written: its directory, created if missing and opened beneath the
/// allowed root it lies in, and the name inside it. The body goes into a fresh file created in
/// that directory (`create_new`, so nothing already there is opened) and is renamed over the
/// name: a symlink or a hard link at the name is replaced, never written through, and a symlink
/// on the way to the directory cannot lead out of the root, even one swapped in after the
/// policy's check.
#[derive(Debug)]
pub struct OutputFile {
    dir: Arc<Dir>,
    name: PathBuf,
    partial: PathBuf,
    /// The path as shown to the model.
    pub shown: String,
}

impl OutputFile {
    pub async fn prepare(ctx: &ToolContext, path: &str) -> Result<Self, ToolError> {
        let (ctx, path) = (ctx.clone(), path.to_owned());
        blocking(move || Self::prepare_beneath(&ctx, &path)).await
    }

    fn prepare_beneath(ctx: &ToolContext, path: &str) -> Result<Self, ToolError> {
        let at = Beneath::locate(ctx, TOOL, path)?;
        let name = match at.rel.file_name() {
            Some(name) if !at.is_root() => name,
            _ => {
                return Err(ToolError::model(format!(
                    "{TOOL}: `{}` is a directory, not a file to save to",
                    at.shown(ctx)
                )));
            }
        };
        let dir = match at.parent_rel() {
            Some(parent) => {
                ensure_dir(&at.dir, parent).map_err(|e| at.err(ctx, e))?;
                at.dir.open_dir(parent)
            }
            None => at.dir.try_clone(),
        }
        .map_err(|e| at.err(ctx, e))?;
        Ok(Self {
            dir: Arc::new(dir),
            name: PathBuf::from(name),
            partial: partial_name(name),
            shown: at.shown(ctx),
        })
    }

    /// The fresh file the body streams into.
    pub async fn create(&self) -> Result<tokio::fs::File, ToolError> {
        let (dir, partial, shown) = (
            Arc::clone(&self.dir),
            self.partial.clone(),
            self.shown.clone(),
        );
        blocking(move || {
            let mut options = OpenOptions::new();
            options.write(true).create_new(true);
            dir.open_with(&partial, &options)
                .map(|file| tokio::fs::File::from_std(file.into_std()))
                .map_err(|e| io_error(TOOL, &shown, e))
        })
        .await
    }

    /// The finished file renamed over the name, within the same directory handle.
    pub async fn commit(&self) -> Result<(), ToolError> {
        let (dir, partial, name, shown) = (
            Arc::clone(&self.dir),
            self.partial.clone(),
            self.name.clone(),
            self.shown.clone(),
        );
        blocking(move || {
            dir.rename(&partial, &dir, &name)
                .map_err(|e| io_error(TOOL, &shown, e))
        })
        .await
    }

    /// Best effort: removes the fresh file after a failure (the failure matters more).
    pub async fn discard(&self) {
        let (dir, partial) = (Arc::clone(&self.dir), self.partial.clone());
        let _ = blocking(move || {
            let _ = dir.remove_file(&partial);
            Ok(())
        })
        .await;
    }
}

/// A fresh name beside `name` for the body while it arrives: unique per process and call, so
/// two downloads to the same name do not collide.
fn partial_name(name: &OsStr) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    PathBuf::from(format!(
        ".{}.codaris-partial-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
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
