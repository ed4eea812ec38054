//! What a call waiting on a permission card would do, for the person to judge it by: the diff
//! of a file change (worked out by the tool's own planning code, reading only), the command
//! line and the directory of a command, the method, address and payload of an HTTP request.
//!
//! Nothing here goes to the model, and nothing secret goes to the person: header values are
//! never shown, and an address's password and credential-like query values are masked.

use codaris_catalogue::BuiltinTool;
use serde_json::Value;

use crate::context::{ToolContext, normalize};
use crate::files::diff_of;
use crate::tool::ToolError;

/// The longest command line or body start a preview shows; the rest is cut with a note.
const MAX_SHOWN_CHARS: usize = 2000;
/// The body start an HTTP preview shows.
const BODY_PREVIEW_CHARS: usize = 240;
/// The longest piece of a command line in the card's sentence.
const SENTENCE_COMMAND_CHARS: usize = 80;

/// What kind of preview a card carries (`CardPreview.kind` on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviewKind {
    /// A unified diff.
    Diff,
    /// A command line and its directory.
    Command,
    /// An HTTP request.
    Http,
    /// The plan documents a person agrees to when leaving plan mode (`plan_exit`).
    Plan,
    /// A change of the configuration file (`config_commit`, `config_rollback`): its diff,
    /// secrets redacted, and which recorded decisions it would have turned.
    Config,
    /// Nothing could be worked out; the text says why (the call would fail).
    Unavailable,
}

impl PreviewKind {
    /// The wire name: `diff`, `command`, `http`, or empty.
    pub fn as_str(self) -> &'static str {
        match self {
            PreviewKind::Diff => "diff",
            PreviewKind::Command => "command",
            PreviewKind::Http => "http",
            PreviewKind::Plan => "plan",
            PreviewKind::Config => "config",
            PreviewKind::Unavailable => "",
        }
    }
}

/// A call's preview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallPreview {
    pub kind: PreviewKind,
    /// The diff, the command, the request; or why nothing could be worked out.
    pub text: String,
    /// The one file a diff is of, as the tool names it.
    pub path: Option<String>,
    /// What the call does, as a verb phrase for a person: "edit `src/main.rs` (3 lines
    /// changed)", "run `cargo test` in `/w/proj`".
    pub action: String,
}

/// The preview of a call of a tool that changes file contents (`edit`, `write`,
/// `apply_patch`): its diff, or why the call would fail; `None` for another tool. Reads files
/// (a diff's before); call it off the async runtime. Each of those tools answers
/// [`Tool::preview`](crate::tool::Tool::preview) with this.
pub fn file_change(ctx: &ToolContext, tool: BuiltinTool, args: &Value) -> Option<CallPreview> {
    let diff = diff_of(ctx, tool, args)?;
    Some(match diff {
        Ok(diff) => CallPreview {
            kind: PreviewKind::Diff,
            text: diff.diff,
            path: diff.path,
            action: diff.action,
        },
        Err(error) => {
            let name = tool.as_str();
            let named = args.get("path").and_then(Value::as_str);
            let action = match (tool, named) {
                (BuiltinTool::ApplyPatch, _) => "apply a patch".to_owned(),
                (_, Some(path)) => format!("{name} `{path}`"),
                (_, None) => format!("call `{name}`"),
            };
            let reason = reason(&error);
            // Tool errors start with the tool's name, which the card already shows.
            let reason = reason
                .strip_prefix(name)
                .and_then(|rest| rest.strip_prefix(": "))
                .unwrap_or(&reason);
            CallPreview {
                kind: PreviewKind::Unavailable,
                text: format!("the call would fail: {reason}"),
                path: None,
                action,
            }
        }
    })
}

fn reason(error: &ToolError) -> String {
    match error {
        ToolError::Model { message } => message.clone(),
        fatal => fatal.to_string(),
    }
}

/// The command line and the directory it would run in (its `cwd` taken against the session's,
/// as `run_command` takes it): `run_command`'s preview.
pub fn command_preview(ctx: &ToolContext, args: &Value) -> Option<CallPreview> {
    let command = args.get("command").and_then(Value::as_str)?;
    let cwd_arg = args.get("cwd").and_then(Value::as_str).unwrap_or(".");
    let cwd = normalize(&ctx.absolute(cwd_arg))
        .unwrap_or_else(|| ctx.absolute(cwd_arg))
        .display()
        .to_string();
    let background = args.get("background").and_then(Value::as_bool) == Some(true);
    let mut text = format!("$ {}\n", cut_chars(command, MAX_SHOWN_CHARS));
    text.push_str(&format!("in {cwd}"));
    if background {
        text.push_str(" (in the background)");
    }
    text.push('\n');
    let first = command.lines().next().unwrap_or("");
    let mut shown = cut_chars(first, SENTENCE_COMMAND_CHARS);
    if shown.len() < command.trim_end().len() && !shown.ends_with('…') {
        shown.push('…');
    }
    Some(CallPreview {
        kind: PreviewKind::Command,
        text,
        path: None,
        action: format!("run `{shown}` in `{cwd}`"),
    })
}

/// The method, the address (credentials masked), the headers' names and what the body holds.
pub fn http_preview(args: &Value) -> Option<CallPreview> {
    let url = args.get("url").and_then(Value::as_str)?;
    let method = args
        .get("method")
        .and_then(Value::as_str)
        .map_or_else(|| "GET".to_owned(), str::to_ascii_uppercase);
    let url = masked_url(url);
    let mut text = format!("{method} {url}\n");
    let names = |key: &str| -> Vec<String> {
        args.get(key)
            .and_then(Value::as_object)
            .map(|map| map.keys().cloned().collect())
            .unwrap_or_default()
    };
    let query = names("query");
    if !query.is_empty() {
        text.push_str(&format!("query: {}\n", query.join(", ")));
    }
    let headers = names("headers");
    if !headers.is_empty() {
        text.push_str(&format!(
            "headers: {} (values not shown)\n",
            headers.join(", ")
        ));
    }
    if let Some(body) = body_line(args) {
        text.push_str(&body);
        text.push('\n');
    }
    if let Some(path) = args.get("output_file").and_then(Value::as_str) {
        text.push_str(&format!("saves the answer to `{path}`\n"));
    }
    Some(CallPreview {
        kind: PreviewKind::Http,
        text,
        path: None,
        action: format!("send `{method} {url}`"),
    })
}

/// One line saying what the request's body holds, from whichever body argument it has.
fn body_line(args: &Value) -> Option<String> {
    if let Some(body) = args.get("body").and_then(Value::as_str) {
        return Some(format!(
            "body: {} bytes: {}",
            body.len(),
            one_line(body, BODY_PREVIEW_CHARS)
        ));
    }
    if let Some(encoded) = args.get("body_base64").and_then(Value::as_str) {
        return Some(format!(
            "body: about {} bytes of binary data (base64)",
            encoded.len() / 4 * 3
        ));
    }
    if let Some(path) = args.get("body_file").and_then(Value::as_str) {
        return Some(format!("body: the file `{path}`"));
    }
    if let Some(json) = args.get("json") {
        let text = json.to_string();
        return Some(format!(
            "body: JSON, {} bytes: {}",
            text.len(),
            one_line(&text, BODY_PREVIEW_CHARS)
        ));
    }
    for (key, kind) in [("form", "form"), ("form_data", "multipart form")] {
        if let Some(fields) = args.get(key).and_then(Value::as_object) {
            let files: Vec<&str> = fields
                .values()
                .filter_map(|v| v.get("file").and_then(Value::as_str))
                .collect();
            let mut line = format!(
                "body: {kind} fields {}",
                fields.keys().cloned().collect::<Vec<_>>().join(", ")
            );
            if !files.is_empty() {
                line.push_str(&format!("; uploads {}", files.join(", ")));
            }
            return Some(line);
        }
    }
    None
}

/// The address with its user name and password replaced by `***`, and the value of every query
/// parameter whose name suggests a credential too. Text that is not an address is shown as it
/// was given, cut.
pub fn masked_url(url: &str) -> String {
    let Ok(mut parsed) = reqwest::Url::parse(url) else {
        return cut_chars(url, MAX_SHOWN_CHARS);
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        let _ = parsed.set_username("***");
        let _ = parsed.set_password(None);
    }
    if parsed.query().is_some() {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(name, value)| {
                let value = if looks_like_credential(&name) {
                    "***".to_owned()
                } else {
                    value.into_owned()
                };
                (name.into_owned(), value)
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    cut_chars(parsed.as_str(), MAX_SHOWN_CHARS)
}

/// Whether a parameter's name suggests it carries a credential.
fn looks_like_credential(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "key",
        "token",
        "secret",
        "password",
        "passwd",
        "auth",
        "signature",
        "sig",
        "credential",
        "session",
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// `text` on one line (control characters as spaces), cut to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    cut_chars(&flat, max)
}

/// `text` cut to `max` characters, with `…` when cut.
fn cut_chars(text: &str, max: usize) -> String {
    match crate::web::common::cut_chars(text, max) {
        (kept, Some(_)) => format!("{kept}…"),
        (whole, None) => whole.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_http_preview_shows_header_names_never_their_values_and_masks_credentials() {
        let args = json!({
            "url": "https://alice:hunter2@api.example.org/v1/items?api_key=sk-123&page=2",
            "method": "post",
            "headers": {"Authorization": "Bearer sk-secret-token", "Content-Type": "application/json"},
            "json": {"name": "x"}
        });
        let preview = http_preview(&args).unwrap();
        assert_eq!(preview.kind, PreviewKind::Http);
        for secret in ["hunter2", "alice", "sk-123", "sk-secret-token", "Bearer"] {
            assert!(!preview.text.contains(secret), "{secret}: {}", preview.text);
            assert!(
                !preview.action.contains(secret),
                "{secret}: {}",
                preview.action
            );
        }
        assert!(
            preview
                .text
                .starts_with("POST https://***@api.example.org/v1/items?api_key=***&page=2\n"),
            "{}",
            preview.text
        );
        assert!(
            preview
                .text
                .contains("headers: Authorization, Content-Type (values not shown)")
        );
        assert!(
            preview
                .text
                .contains("body: JSON, 12 bytes: {\"name\":\"x\"}"),
            "{}",
            preview.text
        );
    }

    #[test]
    fn a_long_body_is_cut_and_kept_on_one_line() {
        let body = format!("line one\nline two\n{}", "x".repeat(1000));
        let line = body_line(&json!({"body": body})).unwrap();
        assert!(
            line.starts_with("body: 1018 bytes: line one line two x"),
            "{line}"
        );
        assert!(line.ends_with('…'));
        assert!(!line.contains('\n'));
    }

    #[test]
    fn not_an_address_is_shown_as_given() {
        assert_eq!(masked_url("not a url"), "not a url");
    }
}
