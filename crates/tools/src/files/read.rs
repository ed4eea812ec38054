//! `read_file`: a text file with a line range, a picture, or a directory listing.

use std::io::Read;

use cap_std::fs::{OpenOptions, OpenOptionsExt};

use serde_json::Value;

use super::decode::{self, Kind, MAX_IMAGE_BYTES, MAX_IMAGE_SIDE};
use super::fence::{Beneath, opt_bool, opt_usize, str_arg};
use super::list;
use crate::context::ToolContext;
use crate::tool::{Content, ToolError, ToolOutput};

const TOOL: &str = codaris_catalogue::READ_FILE.name;
/// Past this a text file is refused whole: the model should page with `offset`/`limit` or grep,
/// and reading gigabytes to show 2000 lines is waste.
const MAX_TEXT_BYTES: u64 = 32 * 1024 * 1024;

#[derive(Debug, Default, Clone, Copy)]
pub struct ReadFile;

#[async_trait::async_trait]
impl crate::tool::Tool for ReadFile {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::READ_FILE
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        super::blocking(TOOL, ctx, args, read).await
    }
}

fn read(ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
    let path = str_arg(TOOL, args, "path")?;
    let offset = opt_usize(TOOL, args, "offset")?;
    let limit = opt_usize(TOOL, args, "limit")?;
    let at = Beneath::locate(ctx, TOOL, path)?;
    let meta = at.dir.metadata(&at.rel).map_err(|e| at.err(ctx, e))?;
    if !meta.is_dir() && !meta.is_file() {
        return Err(ToolError::model(format!(
            "{TOOL}: `{}` is not a regular file (a device, socket or FIFO)",
            at.shown(ctx)
        )));
    }
    if meta.is_dir() {
        let recursive = opt_bool(TOOL, args, "recursive")?;
        let hidden = opt_bool(TOOL, args, "show_hidden")?;
        return list::listing(ctx, &at, recursive, hidden).map(ToolOutput::text);
    }
    // Non-blocking, so a FIFO swapped in after the check above cannot hang the call; it is
    // refused just below like any other special file.
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed());
    let mut file = at
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
    let mut head = Vec::new();
    (&mut file)
        .take(8192)
        .read_to_end(&mut head)
        .map_err(|e| at.err(ctx, e))?;
    match decode::sniff(&head) {
        Kind::Binary { what } => Err(ToolError::model(format!(
            "{TOOL}: `{}` is a binary file ({what}, {}); only text and PNG/JPEG/GIF/WebP pictures can be read",
            at.shown(ctx),
            decode::human_size(meta.len())
        ))),
        Kind::Image { media_type } => {
            if offset.is_some() || limit.is_some() {
                return Err(ToolError::model(format!(
                    "{TOOL}: `{}` is a picture ({media_type}); read it whole, without `offset` or `limit`",
                    at.shown(ctx)
                )));
            }
            if meta.len() > MAX_IMAGE_BYTES as u64 {
                return Err(too_big(ctx, &at, media_type, meta.len()));
            }
            let mut data = head;
            file.read_to_end(&mut data).map_err(|e| at.err(ctx, e))?;
            image(ctx, &at, media_type, data)
        }
        Kind::Text => {
            if meta.len() > MAX_TEXT_BYTES {
                return Err(ToolError::model(format!(
                    "{TOOL}: `{}` is {}, too large to read; use grep to find the lines you need",
                    at.shown(ctx),
                    decode::human_size(meta.len())
                )));
            }
            let mut data = head;
            file.read_to_end(&mut data).map_err(|e| at.err(ctx, e))?;
            let (text, from) = decode::decode_text(&data);
            Ok(ToolOutput::text(numbered(&text, offset, limit, from)))
        }
    }
}

fn too_big(ctx: &ToolContext, at: &Beneath, media_type: &str, len: u64) -> ToolError {
    ToolError::model(format!(
        "{TOOL}: `{}` is a picture ({media_type}) of {}; pictures are shown up to {}",
        at.shown(ctx),
        decode::human_size(len),
        decode::human_size(MAX_IMAGE_BYTES as u64)
    ))
}

fn image(
    ctx: &ToolContext,
    at: &Beneath,
    media_type: &'static str,
    mut data: Vec<u8>,
) -> Result<ToolOutput, ToolError> {
    let mut note = String::new();
    if media_type == "image/gif" {
        let Some((first, frames)) = decode::gif_first_frame(&data) else {
            return Err(ToolError::model(format!(
                "{TOOL}: `{}` is a damaged GIF file",
                at.shown(ctx)
            )));
        };
        if frames > 1 {
            note = format!(", first of {frames} frames");
            data = first;
        }
    }
    let size = imagesize::blob_size(&data).map_err(|_| {
        ToolError::model(format!(
            "{TOOL}: `{}` looks like {media_type} but its header cannot be read",
            at.shown(ctx)
        ))
    })?;
    if size.width > MAX_IMAGE_SIDE || size.height > MAX_IMAGE_SIDE {
        return Err(ToolError::model(format!(
            "{TOOL}: `{}` is a {}x{} picture; pictures are shown up to {MAX_IMAGE_SIDE} pixels a side",
            at.shown(ctx),
            size.width,
            size.height
        )));
    }
    Ok(ToolOutput {
        session_cwd: None,
        leaves_plan_mode: false,
        switch_model: None,
        question: None,
        spawn: None,
        content: vec![
            Content::Text(format!(
                "`{}`: {media_type}, {}x{}{note}",
                at.shown(ctx),
                size.width,
                size.height
            )),
            Content::Image {
                media_type: media_type.to_owned(),
                data,
            },
        ],
    })
}

/// The selected lines, numbered, with a note when only part of the file is shown.
fn numbered(text: &str, offset: Option<usize>, limit: Option<usize>, from: Option<&str>) -> String {
    let total = text.lines().count();
    let first = offset.unwrap_or(1).max(1);
    let mut out = String::new();
    if let Some(from) = from {
        out.push_str(&format!("[converted from {from} to UTF-8]\n"));
    }
    if total == 0 {
        out.push_str("[empty file]");
        return out;
    }
    if first > total {
        out.push_str(&format!(
            "[offset {first} is past the end: the file has {total} lines]"
        ));
        return out;
    }
    let count = limit.unwrap_or(usize::MAX);
    let mut last = first;
    for (index, line) in text.lines().enumerate().skip(first - 1).take(count) {
        last = index + 1;
        out.push_str(&format!("{last:>6}\t{line}\n"));
    }
    if first > 1 || last < total {
        out.push_str(&format!("[lines {first}-{last} of {total}]"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::numbered;

    #[test]
    fn ranges_are_one_based_and_noted() {
        assert_eq!(
            numbered("a\nb\nc\n", None, None, None),
            "     1\ta\n     2\tb\n     3\tc\n"
        );
        assert_eq!(
            numbered("a\nb\nc\n", Some(2), Some(1), None),
            "     2\tb\n[lines 2-2 of 3]"
        );
        assert_eq!(
            numbered("a\n", Some(5), None, None),
            "[offset 5 is past the end: the file has 1 lines]"
        );
    }
}
