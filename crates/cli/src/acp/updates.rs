//! What a turn event of the daemon becomes for the editor: pure functions from the gRPC
//! events to ACP `session/update` payloads, with no I/O, so each mapping is tested alone.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    CompactionStatus, CompactionUpdate, ContentBlock, ContentChunk, Diff, Plan, PlanEntry,
    PlanEntryPriority, PlanEntryStatus, SessionUpdate, StopReason, TextContent, ToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind, UsageUpdate,
};
use codaris_proto::v1;
use serde_json::Value;

/// The tool whose results are the session's checklist: shown as a `plan`, never as a call.
pub const PLANNER: &str = "planner";

/// How long a title may be: one line an editor's tool card shows whole.
const TITLE_MAX: usize = 120;

/// A piece of the model's text.
pub fn text_chunk(text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        text,
    ))))
}

/// What the person typed, for a replayed history.
pub fn user_chunk(text: &str) -> SessionUpdate {
    SessionUpdate::UserMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        text,
    ))))
}

/// The kind an editor files a built-in tool under; MCP tools (`server__tool`) and anything
/// unknown are `other`.
pub fn kind(tool: &str) -> ToolKind {
    match tool {
        "read_file"
        | "print_tree"
        | "codaris_docs_read"
        | "plan_read"
        | "plan_list"
        | "config_get"
        | "load_skill"
        | "check_run_status"
        | "check_test_result"
        | "analyze_run_log"
        | "debug_last_run"
        | "list_compliance_rules" => ToolKind::Read,
        "glob"
        | "grep"
        | "search_tools"
        | "codaris_docs_search"
        | "search_geo_sra"
        | "search_pubmed"
        | "websearch"
        | "web_research" => ToolKind::Search,
        "edit" | "write" | "apply_patch" | "touch" | "mkdir" | "plan_write" | "config_set" => {
            ToolKind::Edit
        }
        "rm" | "rmdir" => ToolKind::Delete,
        "mv" => ToolKind::Move,
        "run_command" | "ssh_run_command" | "background_reap" | "lint_pipeline"
        | "review_pipeline" | "preview_server" | "fetch_test_data" | "clone_nfcore_base" => {
            ToolKind::Execute
        }
        "webfetch" | "http_request" => ToolKind::Fetch,
        "plan_exit" | "switch_model" => ToolKind::SwitchMode,
        "request_capability" | "question" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// The call's one-line title: the daemon's action line when it wrote one (MCP calls), else
/// the tool and its arguments as `codaris run` shows them, cut to one short line.
pub fn title(call: &v1::ToolCall, args: &Value) -> String {
    let line = if call.action.is_empty() {
        format!("{} {}", call.tool, args)
    } else {
        call.action.clone()
    };
    one_line(&line, TITLE_MAX)
}

/// `text` on one line (control characters as spaces), at most `max` characters with `…`.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The files a call names, absolute (relative ones taken from `cwd`), for the editor to
/// follow: `path`, `from`/`to` of a move, `source`/`destination`.
pub fn locations(args: &Value, cwd: &Path) -> Vec<ToolCallLocation> {
    ["path", "from", "to", "source", "destination", "file"]
        .iter()
        .filter_map(|key| args.get(key).and_then(Value::as_str))
        .filter(|path| !path.is_empty())
        .map(|path| {
            let line = args
                .get("offset")
                .or_else(|| args.get("line"))
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| *n > 0);
            ToolCallLocation::new(absolute(path, cwd)).line(line)
        })
        .collect()
}

fn absolute(path: &str, cwd: &Path) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

/// The `tool_call` that announces a call (pending until it is decided).
pub fn tool_call(call: &v1::ToolCall, args: Value, cwd: &Path) -> SessionUpdate {
    SessionUpdate::ToolCall(
        ToolCall::new(call.id.clone(), title(call, &args))
            .kind(kind(&call.tool))
            .status(ToolCallStatus::Pending)
            .locations(locations(&args, cwd))
            .raw_input(args),
    )
}

/// A running call's latest output lines, the whole of what the card shows.
pub fn progress(id: &str, lines: &[String]) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        id.to_owned(),
        ToolCallUpdateFields::new()
            .status(ToolCallStatus::InProgress)
            .content(vec![text_content(&lines.join("\n"))]),
    ))
}

fn text_content(text: &str) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::Text(TextContent::new(text)))
}

/// The `tool_call_update` that ends a call: `completed` with its output (an edit, a write or
/// a patch as `diff` content, so the editor shows its review), or `failed` with the policy's
/// sentence for a refused call and the tool's own words for one that ran and failed.
pub fn result(result: &v1::ToolResult, args: &Value, cwd: &Path) -> SessionUpdate {
    let decision = result.decision.clone().unwrap_or_default();
    let refused = decision.verdict != i32::from(v1::Verdict::Allow);
    let (status, content) = if result.failed {
        let said = if refused && !decision.sentence.is_empty() {
            decision.sentence.clone()
        } else {
            result.output.clone()
        };
        (ToolCallStatus::Failed, vec![text_content(&said)])
    } else {
        let mut content = diff(&result.tool, args, cwd)
            .into_iter()
            .collect::<Vec<_>>();
        content.push(text_content(&result.output));
        (ToolCallStatus::Completed, content)
    };
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        result.id.clone(),
        ToolCallUpdateFields::new()
            .status(status)
            .content(content)
            .raw_output(Value::String(result.output.clone())),
    ))
}

/// The change a successful edit or write made, as the editor's review diff: `edit` replaces
/// its `oldString` by its `newString`, `write` makes the file `content`. A patch names its
/// files inside its text, which an editor cannot apply as old and new text: it stays text.
fn diff(tool: &str, args: &Value, cwd: &Path) -> Option<ToolCallContent> {
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let path = absolute(text("path")?, cwd);
    match tool {
        "edit" => Some(ToolCallContent::Diff(
            Diff::new(path, text("newString")?).old_text(text("oldString").map(str::to_owned)),
        )),
        "write" => Some(ToolCallContent::Diff(Diff::new(path, text("content")?))),
        _ => None,
    }
}

/// The checklist a `planner` result lists (`0. [~] item`), whole, as the editor's plan.
pub fn plan(listing: &str) -> SessionUpdate {
    let entries = listing
        .lines()
        .filter_map(|line| {
            let (number, rest) = line.split_once(". ")?;
            number.parse::<usize>().ok()?;
            let (status, content) = match rest.get(..4) {
                Some("[ ] ") => (PlanEntryStatus::Pending, &rest[4..]),
                Some("[~] ") => (PlanEntryStatus::InProgress, &rest[4..]),
                Some("[x] ") => (PlanEntryStatus::Completed, &rest[4..]),
                _ => return None,
            };
            Some(PlanEntry::new(content, PlanEntryPriority::Medium, status))
        })
        .collect();
    SessionUpdate::Plan(Plan::new(entries))
}

/// The context window's fill after a model request, as `usage_update`; `None` while the daemon
/// does not know the window (a session with no budget), since the update needs its size.
pub fn usage(usage: &v1::Usage) -> Option<SessionUpdate> {
    (usage.context_window > 0).then(|| {
        SessionUpdate::UsageUpdate(UsageUpdate::new(usage.context_tokens, usage.context_window))
    })
}

/// A compaction the daemon made, as one `compaction_update`: it is reported once it is done,
/// so the first update is also the last (`completed`). Its id is the turn and round it
/// happened in, unique within the session; the summary says what was folded (the summary's
/// own text is the model's, kept in the conversation, not sent on the turn stream).
pub fn compaction(compaction: &v1::Compaction) -> SessionUpdate {
    let said = format!(
        "context compacted ({}): {} events folded, {} → {} tokens",
        compaction.trigger, compaction.folded, compaction.tokens_before, compaction.tokens_after
    );
    SessionUpdate::CompactionUpdate(
        CompactionUpdate::new(
            format!("compaction-{}-{}", compaction.turn, compaction.round),
            CompactionStatus::Completed,
        )
        .summary(vec![ContentBlock::Text(TextContent::new(said))]),
    )
}

/// A compaction of a replayed history (`session/load`), by its place in the history: the
/// history says what was folded, not the turn and round it happened in.
pub fn replayed_compaction(place: usize, said: &str) -> SessionUpdate {
    SessionUpdate::CompactionUpdate(
        CompactionUpdate::new(
            format!("compaction-history-{place}"),
            CompactionStatus::Completed,
        )
        .summary(vec![ContentBlock::Text(TextContent::new(said))]),
    )
}

/// Why a turn ended, as the prompt's `stopReason`; `None` for `error`, which is a JSON-RPC
/// error with the daemon's sentence instead.
pub fn stop_reason(reason: &str) -> Option<StopReason> {
    match reason {
        // The scripted model ran out of rounds: its turn is over like any other.
        "end_turn" | "script_exhausted" => Some(StopReason::EndTurn),
        "loop_guard" | "max_rounds" => Some(StopReason::MaxTurnRequests),
        "cancelled" => Some(StopReason::Cancelled),
        "max_tokens" => Some(StopReason::MaxTokens),
        "refusal" => Some(StopReason::Refusal),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn call(tool: &str, action: &str) -> v1::ToolCall {
        v1::ToolCall {
            id: "call_0_0_0".to_owned(),
            tool: tool.to_owned(),
            args: None,
            action: action.to_owned(),
        }
    }

    fn wire(update: &SessionUpdate) -> Value {
        serde_json::to_value(update).unwrap()
    }

    #[test]
    fn an_edit_is_announced_with_its_kind_title_location_and_input() {
        let args = json!({"path": "main.nf", "oldString": "a", "newString": "b"});
        let update = wire(&tool_call(&call("edit", ""), args.clone(), Path::new("/p")));
        assert_eq!(update["sessionUpdate"], "tool_call");
        assert_eq!(update["kind"], "edit");
        // The arguments as `codaris run` shows them (their order is the model's).
        assert_eq!(update["title"], format!("edit {args}"));
        assert_eq!(update["locations"], json!([{"path": "/p/main.nf"}]));
        assert_eq!(update["rawInput"], args);
    }

    #[test]
    fn an_mcp_call_is_titled_by_its_action_on_one_short_line() {
        let title = title(
            &call(
                "pw__browser_navigate",
                "calling `browser_navigate`\non `pw`",
            ),
            &json!({}),
        );
        assert_eq!(title, "calling `browser_navigate` on `pw`");
        let long = super::title(&call("grep", ""), &json!({"pattern": "x".repeat(300)}));
        assert_eq!(long.chars().count(), TITLE_MAX);
        assert!(long.ends_with('…'));
        assert_eq!(kind("pw__browser_navigate"), ToolKind::Other);
    }

    #[test]
    fn a_completed_edit_carries_a_diff_and_a_refusal_the_policys_sentence() {
        let args = json!({"path": "main.nf", "oldString": "old", "newString": "new"});
        let done = v1::ToolResult {
            id: "c1".to_owned(),
            tool: "edit".to_owned(),
            decision: Some(v1::Decision {
                verdict: v1::Verdict::Allow.into(),
                ..v1::Decision::default()
            }),
            output: "edited `main.nf`".to_owned(),
            failed: false,
        };
        let update = wire(&result(&done, &args, Path::new("/p")));
        assert_eq!(update["status"], "completed");
        assert_eq!(
            update["content"][0],
            json!({"type": "diff", "path": "/p/main.nf", "oldText": "old", "newText": "new"})
        );
        let refused = v1::ToolResult {
            decision: Some(v1::Decision {
                verdict: v1::Verdict::Deny.into(),
                sentence: "plan mode does not write files".to_owned(),
                ..v1::Decision::default()
            }),
            output: "refused".to_owned(),
            failed: true,
            ..done
        };
        let update = wire(&result(&refused, &args, Path::new("/p")));
        assert_eq!(update["status"], "failed");
        assert_eq!(
            update["content"],
            json!([{"type": "content", "content": {"type": "text", "text": "plan mode does not write files"}}])
        );
    }

    #[test]
    fn the_planners_listing_is_the_whole_plan() {
        let update = wire(&plan("0. [x] read\n1. [~] edit the module\n2. [ ] test"));
        assert_eq!(
            update["entries"],
            json!([
                {"content": "read", "priority": "medium", "status": "completed"},
                {"content": "edit the module", "priority": "medium", "status": "in_progress"},
                {"content": "test", "priority": "medium", "status": "pending"}
            ])
        );
        assert_eq!(wire(&plan("the checklist is empty"))["entries"], json!([]));
    }

    #[test]
    fn usage_is_the_windows_fill_once_the_window_is_known_and_a_compaction_is_completed() {
        let known = v1::Usage {
            context_tokens: 1_200,
            context_window: 200_000,
            ..v1::Usage::default()
        };
        let update = wire(&usage(&known).unwrap());
        assert_eq!(update["sessionUpdate"], "usage_update");
        assert_eq!(
            (update["used"].clone(), update["size"].clone()),
            (json!(1_200), json!(200_000))
        );
        assert!(usage(&v1::Usage::default()).is_none());
        let folded = v1::Compaction {
            turn: 2,
            round: 3,
            trigger: "tool".to_owned(),
            folded: 7,
            tokens_before: 900,
            tokens_after: 120,
        };
        let update = wire(&compaction(&folded));
        assert_eq!(update["sessionUpdate"], "compaction_update");
        assert_eq!(update["compactionId"], "compaction-2-3");
        assert_eq!(update["status"], "completed");
        assert_eq!(
            update["summary"][0]["text"],
            "context compacted (tool): 7 events folded, 900 → 120 tokens"
        );
    }

    #[test]
    fn each_end_of_a_turn_has_its_stop_reason() {
        assert_eq!(stop_reason("end_turn"), Some(StopReason::EndTurn));
        assert_eq!(stop_reason("loop_guard"), Some(StopReason::MaxTurnRequests));
        assert_eq!(stop_reason("max_rounds"), Some(StopReason::MaxTurnRequests));
        assert_eq!(stop_reason("cancelled"), Some(StopReason::Cancelled));
        assert_eq!(stop_reason("max_tokens"), Some(StopReason::MaxTokens));
        assert_eq!(stop_reason("error"), None);
    }
}
