//! What `webfetch` and `http_request` share: argument reading, the client's fixed settings,
//! reading a body without letting a server fill memory.

use std::time::Duration;

use reqwest::{Response, Url};
use serde_json::Value;

use super::error::WebError;
use crate::tool::ToolError;

pub const USER_AGENT: &str = concat!("codaris/", env!("CARGO_PKG_VERSION"));

/// A string argument; `Ok(None)` when absent or null.
pub fn opt_str<'a>(args: &'a Value, name: &str) -> Result<Option<&'a str>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(ToolError::model(format!("`{name}` must be a string"))),
    }
}

pub fn opt_bool(args: &Value, name: &str) -> Result<Option<bool>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(flag)) => Ok(Some(*flag)),
        Some(_) => Err(ToolError::model(format!("`{name}` must be true or false"))),
    }
}

/// A positive whole number argument, `default` when absent, refused above `max`.
pub fn count(args: &Value, name: &str, default: u64, max: u64) -> Result<u64, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(value) => match value.as_u64() {
            Some(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(ToolError::model(format!(
                "`{name}` must be a whole number from 1 to {max}"
            ))),
        },
    }
}

/// `timeout_seconds` as a duration and as the number the model gave (for messages).
pub fn timeout(args: &Value, default: u64, max: u64) -> Result<(Duration, u64), ToolError> {
    let seconds = count(args, "timeout_seconds", default, max)?;
    Ok((Duration::from_secs(seconds), seconds))
}

/// The required `url`, http or https only.
pub fn url(args: &Value) -> Result<Url, ToolError> {
    let text = opt_str(args, "url")?.ok_or_else(|| ToolError::model("`url` is required"))?;
    let bad = || WebError::BadUrl {
        url: text.to_owned(),
    };
    let url = Url::parse(text).map_err(|_| bad())?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(bad().into());
    }
    Ok(url)
}

/// The body, at most `limit` bytes of it, and whether more was left unread.
pub async fn read_bounded(
    response: &mut Response,
    limit: usize,
    url: &str,
) -> Result<(Vec<u8>, bool), WebError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| WebError::request(url, &error))?
    {
        let room = limit.saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// The media type of a response without its parameters, lowercased; empty when unsaid.
pub fn media_type(response: &Response) -> String {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .map(|value| value.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// The `charset` parameter of the response's Content-Type, if it names one.
pub fn charset(response: &Response) -> Option<String> {
    let value = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)?
        .to_str()
        .ok()?;
    value.split(';').skip(1).find_map(|param| {
        let (key, label) = param.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| label.trim().trim_matches(['"', '\'']).to_owned())
    })
}

/// A body as text: in the charset the header declared, else the one a `<meta charset>` near the
/// top of an HTML page declares, else UTF-8 (a byte order mark wins over both); bytes that do not
/// decode become U+FFFD rather than failing the call.
pub fn decode(body: &[u8], declared: Option<&str>) -> String {
    let label = declared.map(str::to_owned).or_else(|| meta_charset(body));
    let encoding = label
        .and_then(|label| encoding_rs::Encoding::for_label(label.as_bytes()))
        .unwrap_or(encoding_rs::UTF_8);
    let (text, _, _) = encoding.decode(body);
    text.into_owned()
}

/// `<meta charset="…">` or `<meta http-equiv … content="…; charset=…">` in the first 2 KiB.
fn meta_charset(body: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&body[..body.len().min(2048)]).to_ascii_lowercase();
    let at = head.find("<meta")?;
    let at = at + head[at..].find("charset=")? + "charset=".len();
    let rest = head[at..].trim_start_matches(['"', '\'']);
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.')))
        .unwrap_or(rest.len());
    (end > 0).then(|| rest[..end].to_owned())
}

/// Whether a body of this media type reads as text (an empty type is judged by the bytes).
pub fn is_textual(media_type: &str, body: &[u8]) -> bool {
    if media_type.is_empty() {
        return std::str::from_utf8(&body[..body.len().min(4096)]).is_ok() && !body.contains(&0);
    }
    media_type.starts_with("text/")
        || media_type.ends_with("+json")
        || media_type.ends_with("+xml")
        || matches!(
            media_type,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-www-form-urlencoded"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/x-ndjson"
        )
}

/// `text` cut to at most `max_chars` characters, and the number it had.
pub fn cut_chars(text: &str, max_chars: usize) -> (&str, Option<usize>) {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => (&text[..end], Some(text.chars().count())),
        None => (text, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_decoded_in_their_declared_charset() {
        // "Привет" in windows-1251.
        let cp1251 = [0xcf, 0xf0, 0xe8, 0xe2, 0xe5, 0xf2];
        assert_eq!(decode(&cp1251, Some("windows-1251")), "Привет");
        let page = [
            b"<html><head><meta charset=\"windows-1251\"></head><p>".as_slice(),
            &cp1251,
        ]
        .concat();
        assert!(decode(&page, None).ends_with("<p>Привет"));
        let page = [
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=koi8-r\">".as_slice(),
            &[0xf0, 0xd2],
        ]
        .concat();
        assert!(
            decode(&page, None).ends_with("Пр"),
            "{}",
            decode(&page, None)
        );
        assert_eq!(decode("déjà".as_bytes(), None), "déjà");
        assert_eq!(decode(b"\xff", Some("no-such-charset")), "\u{fffd}");
    }
}
