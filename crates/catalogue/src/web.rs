//! The web tools: searching, reading a page, any HTTP request, and researching a question.

use serde_json::{Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;
use crate::limits::{
    HTTP_REQUEST_MAX_TIMEOUT_SECONDS, WEBFETCH_MAX_CHARS, WEBFETCH_MAX_TIMEOUT_SECONDS,
};

pub const WEBSEARCH: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::Websearch,
    "Search the web with several engines at once and return the merged results (title, \
     address, snippet), with each engine's outcome: results, none found, unrelated results \
     discarded, or turned away by a challenge page. Fails when every engine was turned away. \
     Read a result with webfetch.",
    websearch,
);

fn websearch() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to search for."},
            "page": {"type": "integer", "minimum": 1, "maximum": 10, "description": "Results page, from 1 (default 1)."},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Merged results returned at most (default 10)."},
            "site": {"type": "string", "description": "Only results from this domain, e.g. nf-co.re."}
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

pub const WEBFETCH: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::Webfetch,
    "Download a public web page (HTTP GET) and return its main text as Markdown, with scripts, \
     styles and navigation left out; plain-text and JSON answers come back as they are. \
     Localhost, private, link-local and other non-public addresses are refused, on every \
     redirect too (at most 5 are followed); use http_request for local services, other \
     methods, headers or downloads.",
    webfetch,
);

fn webfetch() -> Value {
    json!({
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "The http:// or https:// address of the page."},
            "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": WEBFETCH_MAX_TIMEOUT_SECONDS,
                "description": "Give up after this many seconds (default 30)."},
            "max_chars": {"type": "integer", "minimum": 1, "maximum": WEBFETCH_MAX_CHARS,
                "description": "Return at most this many characters of Markdown (default 40000)."}
        },
        "required": ["url"],
        "additionalProperties": false
    })
}

pub const HTTP_REQUEST: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::HttpRequest,
    "Send any HTTP or HTTPS request, like curl: APIs, services on localhost, uploads and \
     downloads. Returns the status line, the response headers and the body (text up to \
     256 KiB), or saves the body to output_file. Give at most one of body, body_base64, \
     body_file, json, form, form_data. Redirects are not followed unless follow_redirects \
     is true. For reading a public web page, webfetch is simpler.",
    http_request,
);

fn http_request() -> Value {
    let scalars = json!({"type": ["string", "number", "boolean"]});
    json!({
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "http:// or https:// address."},
            "method": {"type": "string", "description": "GET (default), POST, PUT, PATCH, DELETE, HEAD, OPTIONS or any other token."},
            "query": {"type": "object", "additionalProperties": {"anyOf": [scalars, {"type": "array", "items": scalars}]},
                "description": "Query parameters appended to the URL; an array repeats the name."},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            "body": {"type": "string", "description": "Raw text body."},
            "body_base64": {"type": "string", "description": "Binary body, base64-encoded."},
            "body_file": {"type": "string", "description": "Path of a local file sent as the body."},
            "json": {"description": "Any JSON value, sent with Content-Type: application/json."},
            "form": {"type": "object", "additionalProperties": scalars,
                "description": "Fields sent as application/x-www-form-urlencoded."},
            "form_data": {"type": "object", "description": "multipart/form-data: a string is a text field; {\"file\": path, \"filename\"?, \"content_type\"?} uploads a local file."},
            "output_file": {"type": "string", "description": "Save the response body to this path instead of returning it."},
            "follow_redirects": {"type": "boolean", "description": "Follow up to 10 redirects (default false)."},
            "proxy": {"type": "string", "description": "Proxy URL (http://, https://) for this request."},
            "verify_tls": {"type": "boolean", "description": "Check the server's certificate (default true)."},
            "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": HTTP_REQUEST_MAX_TIMEOUT_SECONDS, "description": "Default 60."},
            "permission_rationale": {"type": "string", "description": "Why this request is needed, shown to the user when asked."}
        },
        "required": ["url"],
        "additionalProperties": false
    })
}

pub const WEB_RESEARCH: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::WebResearch,
    "Research a question in one call: several web searches made from it, the pages most of \
     them agree on read (public pages only, as webfetch reads them), and PubMed too when the \
     question is biomedical. Answers with a brief of claims quoted word for word from the \
     sources, each ending with its source number, then the numbered sources (title, address, \
     the passage each claim rests on), what was skipped and why, and what each engine \
     answered. Nothing is paraphrased: read the sources to judge them. depth: quick (2 \
     queries, 2 pages), standard (3 and 4, the default) or deep (5 and 8).",
    web_research,
);

fn web_research() -> Value {
    json!({
        "type": "object",
        "properties": {
            "question": {"type": "string", "maxLength": 500,
                "description": "The question, in plain words, e.g. \"How does Nextflow resume cached tasks?\"."},
            "depth": {"type": "string", "enum": ["quick", "standard", "deep"],
                "description": "How far to search and read (default standard)."}
        },
        "required": ["question"],
        "additionalProperties": false
    })
}
