//! A `tools/call` result as the model reads it, from its JSON on the wire (so a newer rmcp's
//! types change nothing here): text blocks in order, `structuredContent` as compact JSON when
//! no text says it already, pictures kept apart (the daemon shows them as `read_file` does),
//! resources and links as one line each, and `isError` kept.

use serde_json::Value;

/// A picture a tool returned: MCP's `ImageContent`, as the server sent it (the agent's `Picture` is
/// what a model is shown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageContent {
    pub mime_type: String,
    /// Base64, as sent.
    pub data: String,
}

/// What the model is shown of one call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rendered {
    pub text: String,
    pub pictures: Vec<ImageContent>,
    /// The server marked the result as a failure (`isError: true`).
    pub is_error: bool,
}

/// Renders a `CallToolResult` given as JSON.
pub fn result(result: &Value) -> Rendered {
    let mut lines: Vec<String> = Vec::new();
    let mut pictures = Vec::new();
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for block in blocks {
        let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
        match text("type") {
            "text" => lines.push(text("text").to_owned()),
            "image" => pictures.push(ImageContent {
                mime_type: text("mimeType").to_owned(),
                data: text("data").to_owned(),
            }),
            "audio" => lines.push(format!(
                "[audio {}, {} bytes of base64 not shown]",
                text("mimeType"),
                text("data").len()
            )),
            "resource_link" => lines.push(format!(
                "resource link: {} <{}>{}",
                text("name"),
                text("uri"),
                block
                    .get("description")
                    .and_then(Value::as_str)
                    .map(|d| format!(" — {d}"))
                    .unwrap_or_default()
            )),
            "resource" => {
                let resource = block.get("resource").unwrap_or(&Value::Null);
                let field = |key: &str| {
                    resource
                        .get(key)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                };
                match resource.get("text").and_then(Value::as_str) {
                    Some(body) => lines.push(format!("resource <{}>:\n{body}", field("uri"))),
                    None => lines.push(format!(
                        "resource <{}> ({}, {} bytes of base64 not shown)",
                        field("uri"),
                        field("mimeType"),
                        field("blob").len()
                    )),
                }
            }
            other => lines.push(format!("[a `{other}` block this client does not show]")),
        }
    }
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        let compact = structured.to_string();
        // Servers usually send the same object as text too; once is enough.
        if !lines.iter().any(|line| same_json(line, structured)) {
            lines.push(compact);
        }
    }
    Rendered {
        text: lines.join("\n"),
        pictures,
        is_error: result
            .get("isError")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    }
}

fn same_json(text: &str, value: &Value) -> bool {
    serde_json::from_str::<Value>(text).is_ok_and(|parsed| &parsed == value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_structured_pictures_and_links_render() {
        let rendered = result(&json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"},
                {"type": "resource", "resource": {"uri": "mem://x", "text": "body"}},
                {"type": "resource", "resource": {"uri": "mem://b", "mimeType": "application/zip", "blob": "UEs="}}
            ],
            "structuredContent": {"temperature": 21}
        }));
        assert_eq!(
            rendered.text,
            "hello\nresource link: a.txt <file:///a.txt>\nresource <mem://x>:\nbody\nresource <mem://b> (application/zip, 4 bytes of base64 not shown)\n{\"temperature\":21}"
        );
        assert_eq!(rendered.pictures.len(), 1);
        assert!(!rendered.is_error);
    }

    #[test]
    fn structured_content_said_as_text_is_not_repeated_and_errors_are_kept() {
        let rendered = result(&json!({
            "content": [{"type": "text", "text": "{\"a\": 1}"}],
            "structuredContent": {"a": 1},
            "isError": true
        }));
        assert_eq!(rendered.text, "{\"a\": 1}");
        assert!(rendered.is_error);
    }
}
