//! What a PreToolUse hook's run comes to: its exit status and standard output read the way
//! Claude Code reads its hooks', or, for a hook that failed, why it counts as `deny`.
//!
//! - exit 0 and nothing on standard output: no opinion;
//! - exit 0 and a JSON object: `hookSpecificOutput.permissionDecision` (`allow`, `ask`,
//!   `deny`) with `permissionDecisionReason` and `updatedInput`; else the older top-level
//!   `decision` (`approve`, `block`) with `reason`; `"continue": false` (with `stopReason`)
//!   stops the call; any other field (`suppressOutput`, `systemMessage`, …) is ignored;
//! - exit 2: `deny`, the standard error the reason;
//! - anything else (another status, a signal, output that is not such an object, an unknown
//!   decision): the hook failed, and a failed hook counts as `deny`.

use codaris_policy::HookDecision;
use serde_json::{Map, Value};

/// The most of a hook's standard output or error that is read; more is a failure.
pub const MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// How much of a hook's standard error a failure's reason repeats.
const MAX_STDERR_CHARS: usize = 300;

/// What one hook said about a call.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub decision: HookDecision,
    pub reason: String,
    /// The arguments the hook would have the call run with instead.
    pub updated_input: Option<Map<String, Value>>,
}

impl Answer {
    fn of(decision: HookDecision, reason: impl Into<String>) -> Answer {
        Answer {
            decision,
            reason: reason.into(),
            updated_input: None,
        }
    }
}

/// Why a hook counts as `deny` though it did not answer so.
#[derive(Debug, thiserror::Error)]
pub enum HookFailure {
    #[error("hook `{program}` could not start: {source}")]
    Start {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("hook `{program}` did not answer within {seconds} s and was stopped")]
    TimedOut { program: String, seconds: f64 },
    #[error("hook `{program}` failed ({status}){}", stderr_tail(stderr))]
    Exited {
        program: String,
        /// `exit status 1`, `signal 9`.
        status: String,
        stderr: String,
    },
    #[error("hook `{program}` answered what Codaris cannot read: {why}")]
    Garbage { program: String, why: String },
    #[error("hook `{program}` printed more than {MAX_OUTPUT_BYTES} bytes")]
    TooMuch { program: String },
    #[error("hook `{program}` could not be run: {source}")]
    Io {
        program: String,
        #[source]
        source: std::io::Error,
    },
}

impl HookFailure {
    /// The answer a failure counts as.
    pub fn answer(&self) -> Answer {
        Answer::of(HookDecision::Deny, self.to_string())
    }
}

/// `: <the first of stderr>` when the hook said something on its standard error.
fn stderr_tail(stderr: &str) -> String {
    let line = one_line(stderr);
    if line.is_empty() {
        return String::new();
    }
    format!(": {}", shortened(&line))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn shortened(line: &str) -> String {
    match line.char_indices().nth(MAX_STDERR_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// How the hook's process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Code(i32),
    Signal(i32),
}

/// Reads a finished hook: how it `ended`, what it printed on `stdout` and `stderr`.
pub fn read(program: &str, ended: Ended, stdout: &[u8], stderr: &[u8]) -> Answer {
    let stderr = String::from_utf8_lossy(stderr);
    match ended {
        Ended::Code(0) => from_stdout(program, stdout).unwrap_or_else(|failure| failure.answer()),
        // Claude Code's blocking exit: its standard error is the reason the model reads.
        Ended::Code(2) => {
            let reason = one_line(&stderr);
            let reason = if reason.is_empty() {
                format!("hook `{program}` exited with status 2")
            } else {
                reason
            };
            Answer::of(HookDecision::Deny, reason)
        }
        Ended::Code(code) => HookFailure::Exited {
            program: program.to_owned(),
            status: format!("exit status {code}"),
            stderr: stderr.into_owned(),
        }
        .answer(),
        Ended::Signal(signal) => HookFailure::Exited {
            program: program.to_owned(),
            status: format!("signal {signal}"),
            stderr: stderr.into_owned(),
        }
        .answer(),
    }
}

/// The answer in a hook's standard output after exit 0.
fn from_stdout(program: &str, stdout: &[u8]) -> Result<Answer, HookFailure> {
    let garbage = |why: String| HookFailure::Garbage {
        program: program.to_owned(),
        why,
    };
    let text =
        std::str::from_utf8(stdout).map_err(|_| garbage("output that is not UTF-8".to_owned()))?;
    if text.trim().is_empty() {
        return Ok(Answer::of(HookDecision::None, ""));
    }
    let value: Value = serde_json::from_str(text.trim()).map_err(|_| {
        garbage(format!(
            "`{}` is not a JSON object",
            shortened(&one_line(text))
        ))
    })?;
    let Value::Object(object) = value else {
        return Err(garbage("the JSON is not an object".to_owned()));
    };
    let text_of = |object: &Map<String, Value>, field: &str| -> Result<String, HookFailure> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(text)) => Ok(text.clone()),
            Some(_) => Err(garbage(format!("`{field}` is not text"))),
        }
    };
    // `"continue": false` stops Claude Code altogether; here it stops the call.
    if object.get("continue") == Some(&Value::Bool(false)) {
        let reason = text_of(&object, "stopReason")?;
        let reason = if reason.trim().is_empty() {
            format!("hook `{program}` answered `continue: false`")
        } else {
            reason
        };
        return Ok(Answer::of(HookDecision::Deny, reason));
    }
    if let Some(specific) = object.get("hookSpecificOutput").filter(|v| !v.is_null()) {
        let Value::Object(specific) = specific else {
            return Err(garbage("`hookSpecificOutput` is not an object".to_owned()));
        };
        match specific.get("hookEventName") {
            None | Some(Value::Null) => {}
            Some(Value::String(event)) if event == "PreToolUse" => {}
            Some(other) => {
                return Err(garbage(format!(
                    "`hookEventName` is {other}, not \"PreToolUse\""
                )));
            }
        }
        let updated_input = match specific.get("updatedInput") {
            None | Some(Value::Null) => None,
            Some(Value::Object(args)) => Some(args.clone()),
            Some(_) => return Err(garbage("`updatedInput` is not an object".to_owned())),
        };
        let decision = match specific.get("permissionDecision") {
            None | Some(Value::Null) => None,
            Some(Value::String(word)) => Some(match word.as_str() {
                "allow" => HookDecision::Allow,
                "ask" => HookDecision::Ask,
                "deny" => HookDecision::Deny,
                other => {
                    return Err(garbage(format!(
                        "`permissionDecision` `{other}` is not `allow`, `ask` or `deny`"
                    )));
                }
            }),
            Some(_) => return Err(garbage("`permissionDecision` is not text".to_owned())),
        };
        if let Some(decision) = decision {
            return Ok(Answer {
                decision,
                reason: text_of(specific, "permissionDecisionReason")?,
                updated_input,
            });
        }
        if updated_input.is_some() {
            return Ok(Answer {
                decision: HookDecision::None,
                reason: String::new(),
                updated_input,
            });
        }
    }
    // The older top-level fields, which Claude Code still reads for PreToolUse.
    match object.get("decision") {
        None | Some(Value::Null) => Ok(Answer::of(HookDecision::None, "")),
        Some(Value::String(word)) => {
            let decision = match word.as_str() {
                "approve" | "allow" => HookDecision::Allow,
                "block" | "deny" => HookDecision::Deny,
                "ask" => HookDecision::Ask,
                other => {
                    return Err(garbage(format!(
                        "`decision` `{other}` is not `approve` or `block`"
                    )));
                }
            };
            Ok(Answer::of(decision, text_of(&object, "reason")?))
        }
        Some(_) => Err(garbage("`decision` is not text".to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(code: i32, stdout: &str, stderr: &str) -> Answer {
        read(
            "/hooks/h",
            Ended::Code(code),
            stdout.as_bytes(),
            stderr.as_bytes(),
        )
    }

    #[test]
    fn claude_code_s_answers_read_as_theirs() {
        let deny = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny", "permissionDecisionReason": "Destructive command blocked by hook"}});
        assert_eq!(
            answer(0, &deny.to_string(), ""),
            Answer::of(HookDecision::Deny, "Destructive command blocked by hook")
        );
        let rewrite = json!({"hookSpecificOutput": {"permissionDecision": "allow",
            "updatedInput": {"path": "b.rs"}}, "suppressOutput": true});
        let got = answer(0, &rewrite.to_string(), "");
        assert_eq!(got.decision, HookDecision::Allow);
        assert_eq!(
            got.updated_input,
            json!({"path": "b.rs"}).as_object().cloned()
        );
        assert_eq!(answer(0, "", "").decision, HookDecision::None);
        assert_eq!(answer(0, " \n", "").decision, HookDecision::None);
        assert_eq!(answer(0, "{}", "").decision, HookDecision::None);
        // The older fields.
        assert_eq!(
            answer(
                0,
                r#"{"decision": "approve", "reason": "docs are fine"}"#,
                ""
            ),
            Answer::of(HookDecision::Allow, "docs are fine")
        );
        assert_eq!(
            answer(0, r#"{"decision": "block"}"#, "").decision,
            HookDecision::Deny
        );
        let stop = answer(0, r#"{"continue": false, "stopReason": "frozen"}"#, "");
        assert_eq!(stop, Answer::of(HookDecision::Deny, "frozen"));
        // Exit 2: the standard error is the reason.
        assert_eq!(
            answer(2, "ignored", "• Use rg instead of grep\n"),
            Answer::of(HookDecision::Deny, "• Use rg instead of grep")
        );
    }

    #[test]
    fn failures_and_garbage_count_as_deny_with_the_reason() {
        for (code, stdout, stderr, says) in [
            (
                1,
                "",
                "boom\nmore",
                "hook `/hooks/h` failed (exit status 1): boom more",
            ),
            (0, "yes please", "", "is not a JSON object"),
            (0, "[1]", "", "not an object"),
            (
                0,
                r#"{"hookSpecificOutput": {"permissionDecision": "maybe"}}"#,
                "",
                "`maybe`",
            ),
            (
                0,
                r#"{"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "allow"}}"#,
                "",
                "PostToolUse",
            ),
            (
                0,
                r#"{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": "x"}}"#,
                "",
                "`updatedInput`",
            ),
            (0, r#"{"decision": 3}"#, "", "`decision`"),
        ] {
            let got = answer(code, stdout, stderr);
            assert_eq!(got.decision, HookDecision::Deny, "{stdout}");
            assert!(got.reason.contains(says), "{} lacks {says}", got.reason);
            assert!(!got.reason.contains('\n'), "{}", got.reason);
        }
        let killed = read("/hooks/h", Ended::Signal(9), b"", b"");
        assert_eq!(killed.reason, "hook `/hooks/h` failed (signal 9)");
    }
}
