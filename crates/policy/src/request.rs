//! The JSON contract of `codaris policy eval`: one request in, one decision out.
//!
//! Other tools read this format, so fields are only ever added. A request that does not have
//! the shape below is an error the caller reports; arguments that are not an object are not:
//! `args` may be any JSON value and `evaluate` judges it (`args_not_object`).

use codaris_catalogue::ToolId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::command::CommandLine;
use crate::decision::Decision;
use crate::evaluate::{Call, evaluate_read};
use crate::grant::Grant;
use crate::grant_set::GrantSet;
use crate::spec::ExternalSpec;
use crate::task::{Task, null_as_default};

/// One call to decide, with everything the decision depends on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The tool the model called: on the wire and in the ledger, its name as called.
    pub tool: ToolId,
    /// The arguments exactly as sent: any JSON value; absent reads as `null`.
    #[serde(default)]
    pub args: Value,
    /// The task state of the turn.
    pub task: Task,
    /// The grants in force, in ledger order; indexes in the decision refer to this list.
    #[serde(default, deserialize_with = "null_as_default")]
    pub grants: Vec<Grant>,
    /// The spec of a tool the crate does not know (an MCP tool).
    #[serde(default)]
    pub spec: Option<ExternalSpec>,
}

/// Why a request could not be read. The decision for a readable request is never an error.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The text is not JSON at all.
    #[error("a policy request must be JSON: {source}")]
    Json {
        /// The parser's account, with line and column.
        #[source]
        source: serde_json::Error,
    },
    /// The JSON does not have the request's shape (a missing `tool` or `task`, a field of the
    /// wrong type, a misspelled field).
    #[error("malformed policy request: {source}")]
    Shape {
        /// The deserializer's account, naming the field.
        #[source]
        source: serde_json::Error,
    },
}

impl Request {
    /// Reads a request from a parsed JSON value.
    pub fn from_value(value: Value) -> Result<Request, RequestError> {
        serde_json::from_value(value).map_err(|source| RequestError::Shape { source })
    }

    /// Reads a request from JSON text (one line of a JSON-lines stream, or a whole document).
    pub fn from_json(text: &str) -> Result<Request, RequestError> {
        let value: Value =
            serde_json::from_str(text).map_err(|source| RequestError::Json { source })?;
        Request::from_value(value)
    }

    /// The grants of the request, indexed.
    pub fn grant_set(&self) -> GrantSet {
        GrantSet::from_grants(self.grants.iter().cloned())
    }

    /// Decides the request. Pure: the same request always gets the same decision.
    pub fn evaluate(&self) -> Decision {
        self.evaluate_with(&self.grant_set())
    }

    /// Decides the request with `grants` already built from its grants: for a caller that
    /// decides many requests on the same grants (the daemon, per session), so the set is built
    /// once rather than per call. `grants` must be [`Request::grant_set`] of these grants, in
    /// this order (a decision's `used_grants` indexes them); replay uses [`Request::evaluate`].
    pub fn evaluate_with(&self, grants: &GrantSet) -> Decision {
        self.evaluate_read(grants, None)
    }

    /// [`Request::evaluate_with`] with the call's command line read already (see
    /// [`crate::evaluate_read`]): the same decision.
    pub fn evaluate_read(&self, grants: &GrantSet, read: Option<&CommandLine>) -> Decision {
        let spec = self
            .spec
            .as_ref()
            .map(|s| s.to_tool_spec(self.tool.as_str()));
        let call = Call {
            tool: &self.tool,
            args: &self.args,
            spec: spec.as_ref(),
        };
        evaluate_read(&call, grants, &self.task, read)
    }
}

/// Reads one request from raw bytes and decides it: what `codaris policy eval` does per line,
/// and what the fuzz target feeds arbitrary bytes to.
pub fn evaluate_json(bytes: &[u8]) -> Result<Decision, RequestError> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|source| RequestError::Json { source })?;
    Ok(Request::from_value(value)?.evaluate())
}

#[cfg(test)]
mod tests {
    use super::{Request, RequestError, evaluate_json};
    use crate::code::Code;
    use serde_json::json;

    #[test]
    fn the_contract_example_parses_and_decides() {
        let request = json!({
            "tool": "write",
            "args": {"path": "/etc/passwd", "content": "x"},
            "task": {"activity": "agent", "permission_mode": "ask", "cwd": "/w/proj",
                     "allowed_roots": ["/w/proj"], "workspace": "/s/sessions/1",
                     "bound": ["write", "read_file"], "slash": ["/review"]},
            "grants": [{"capability": "mutate_outside_fence", "path": "/tmp/out", "lifetime": "session"}],
            "spec": null
        });
        let decision = Request::from_value(request).map(|r| r.evaluate());
        assert_eq!(
            decision.map(|d| d.code).ok(),
            Some(Code::MutateOutsideFence)
        );
    }

    #[test]
    fn malformed_requests_are_errors_but_odd_args_are_not() {
        let no_task = Request::from_value(json!({"tool": "write", "args": {}}));
        assert!(matches!(no_task, Err(RequestError::Shape { .. })));
        assert!(matches!(
            evaluate_json(b"{not json"),
            Err(RequestError::Json { .. })
        ));
        let typo = Request::from_value(json!({"tool": "x", "arg": {}, "task": {"cwd": "/"}}));
        let message = typo.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("unknown field `arg`"), "{message}");

        let decision = evaluate_json(
            br#"{"tool": "write", "args": "{\"path\": \"a\"}", "task": {"cwd": "/w"}}"#,
        );
        assert_eq!(decision.map(|d| d.code).ok(), Some(Code::ArgsNotObject));
    }
}
