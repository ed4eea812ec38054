//! The web tools against fake servers on 127.0.0.1; nothing here reaches the internet.

// Always true here (test crates build with `--test`); it makes clippy count the helpers as
// test code, so `clippy.toml` lets them unwrap as the tests do.
#![cfg(test)]
#![allow(
    clippy::disallowed_methods,
    reason = "tests set up and inspect files directly, outside any fence"
)]

#[path = "web/fake.rs"]
mod fake;
#[path = "web/fence.rs"]
mod fence;
#[path = "web/fetch.rs"]
mod fetch;
#[path = "web/request.rs"]
mod request;
#[path = "web/research.rs"]
mod research;
#[path = "web/search.rs"]
mod search;
#[path = "web/tls.rs"]
mod tls;

use std::path::Path;

use codaris_tools::{Content, Fence, ToolContext, ToolError, ToolOutput};

pub fn ctx(root: &Path) -> ToolContext {
    ToolContext {
        checkpoint: None,
        session_id: "s1".into(),
        cwd: root.to_path_buf(),
        fence: Fence::new([root.to_path_buf()]),
        workspace: root.to_path_buf(),
        read: Default::default(),
    }
}

pub fn text(output: &ToolOutput) -> &str {
    match output.content.first() {
        Some(Content::Text(text)) => text,
        _ => "",
    }
}

/// The sentence a model error carries; any other outcome fails the test with what it was.
pub fn model_error(result: Result<ToolOutput, ToolError>) -> String {
    match result {
        Err(ToolError::Model { message }) => message,
        other => format!("not a model error: {other:?}"),
    }
}
