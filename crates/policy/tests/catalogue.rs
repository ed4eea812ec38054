//! What the types cannot prove about the catalogue and the policy's specs: a spec and an entry
//! are found by the same [`BuiltinTool`], so they can never belong to different tools, but the
//! schema an entry shows the model is JSON, so whether it shows every path argument the policy
//! checks (required exactly when the policy requires it) is checked here.

use codaris_policy::{ALWAYS_ON, BuiltinTool, PathDefault, builtin_spec};
use pretty_assertions::assert_eq;
use serde_json::Value;

#[test]
fn schemas_show_every_path_argument_the_policy_checks() {
    for tool in BuiltinTool::ALL {
        let Some(listed) = tool.entry() else { continue };
        let name = listed.name;
        let schema = listed.schema();
        assert_eq!(schema["type"], "object", "{name}");
        let Some(properties) = schema["properties"].as_object() else {
            panic!("{name}: the schema has no properties object");
        };
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for argument in &required {
            assert!(
                properties.contains_key(*argument),
                "{name}: `{argument}` is required but not a property"
            );
        }
        for path in builtin_spec(tool).paths.iter() {
            let argument: &str = &path.name;
            assert!(
                properties.contains_key(argument),
                "{name}: no `{argument}` in the schema"
            );
            assert_eq!(
                required.contains(&argument),
                path.default == PathDefault::Required,
                "{name}: `{argument}` required?"
            );
        }
    }
}

#[test]
fn the_always_on_surface_is_catalogued_and_holds_the_loop_tools() {
    for name in ALWAYS_ON {
        let tool = BuiltinTool::parse(name);
        assert!(tool.and_then(BuiltinTool::entry).is_some(), "{name}");
    }
    for tool in BuiltinTool::ALL.into_iter().filter(|t| t.is_loop_tool()) {
        assert!(ALWAYS_ON.contains(&tool.as_str()), "{tool}");
    }
}

/// `codaris_catalogue::ALL` is an order (the one the daemon registers its tools in), written
/// apart from the table: it must list every catalogued tool once.
#[test]
fn the_registration_order_lists_every_catalogued_tool_once() {
    let mut listed: Vec<BuiltinTool> = codaris_catalogue::ALL.iter().map(|e| e.id).collect();
    listed.sort();
    let catalogued: Vec<BuiltinTool> = BuiltinTool::ALL
        .into_iter()
        .filter(|t| t.entry().is_some())
        .collect();
    assert_eq!(listed, catalogued);
}

/// `switch_model` acts for the person in front of the session: a subagent's task (a child
/// session) is never offered it, and a call it makes anyway is refused as withheld, in every
/// mode; any other task is offered it in agent, plan and ask.
#[test]
fn switch_model_is_withheld_from_a_subagent_and_offered_otherwise() {
    withheld_from_a_subagent_only(
        "switch_model",
        &serde_json::json!({"model": "gpt-5", "scope": "turn"}),
    );
}

/// `question` asks the person in front of the session: a child session has none, so it is
/// withheld from a subagent's task the same way, and offered to any other.
#[test]
fn question_is_withheld_from_a_subagent_and_offered_otherwise() {
    withheld_from_a_subagent_only(
        "question",
        &serde_json::json!({"questions": [{"question": "q", "options": [{"label": "a"}]}]}),
    );
}

fn withheld_from_a_subagent_only(tool: &str, args: &serde_json::Value) {
    use codaris_policy::{Code, HeldBack, Task, Verdict, Withholding, held_back};
    for activity in ["agent", "plan", "ask"] {
        let task = |subagent: bool| serde_json::json!({"cwd": "/w", "activity": activity, "subagent": subagent});
        let decision = crate::support::decide(serde_json::json!({
            "tool": tool, "args": args, "task": task(true)}));
        assert_eq!(decision.verdict, Verdict::Deny, "{activity}");
        assert_eq!(decision.code, Code::ToolWithheld, "{activity}");
        assert!(
            decision.sentence.contains("never offered to a subagent"),
            "{}",
            decision.sentence
        );
        let child: Task = serde_json::from_value(task(true)).unwrap();
        assert_eq!(
            held_back(tool, None, &child),
            Some(HeldBack::Withheld(Withholding::Subagent))
        );
        let parent: Task = serde_json::from_value(task(false)).unwrap();
        assert_eq!(held_back(tool, None, &parent), None, "{activity}");
        let allowed = crate::support::decide(serde_json::json!({
            "tool": tool, "args": args, "task": task(false)}));
        assert_eq!(
            allowed.verdict,
            Verdict::Allow,
            "{activity}: {}",
            allowed.sentence
        );
    }
}

/// A child can neither leave plan mode nor rewrite the configuration: `plan_exit` and every
/// configuration tool are withheld from a subagent's task in the modes that offer them, and
/// stay offered to the parent.
#[test]
fn plan_exit_and_the_configuration_tools_are_never_a_subagents() {
    use codaris_policy::{Code, HeldBack, Task, Verdict, Withholding, held_back};
    let cases = [
        ("plan_exit", "plan", serde_json::json!({})),
        (
            "config_set",
            "agent",
            serde_json::json!({"commands": ["set a.b=1"]}),
        ),
        ("config_commit", "agent", serde_json::json!({})),
        ("config_get", "plan", serde_json::json!({"path": "."})),
    ];
    for (tool, activity, args) in cases {
        let task = |subagent: bool| serde_json::json!({"cwd": "/w", "activity": activity, "subagent": subagent});
        let decision = crate::support::decide(
            serde_json::json!({"tool": tool, "args": args, "task": task(true)}),
        );
        assert_eq!(decision.verdict, Verdict::Deny, "{tool}");
        assert_eq!(
            decision.code,
            Code::ToolWithheld,
            "{tool}: {}",
            decision.sentence
        );
        let child: Task = serde_json::from_value(task(true)).unwrap();
        assert_eq!(
            held_back(tool, None, &child),
            Some(HeldBack::Withheld(Withholding::Subagent)),
            "{tool}"
        );
        let parent: Task = serde_json::from_value(task(false)).unwrap();
        assert_eq!(held_back(tool, None, &parent), None, "{tool}");
    }
}

/// An agent definition only removes names: with `tools`, everything else is withheld but the
/// loop's own tools (a child can still search and ask for a capability); `disallowed_tools`
/// removes what it names, MCP tools included; the refusal says why.
#[test]
fn a_definition_narrows_a_childs_tools_and_keeps_the_loops_own() {
    use codaris_policy::{Code, HeldBack, Narrowed, Task, Verdict, Withholding, held_back};
    let mut task = Task::new("/w");
    task.subagent = true;
    task.narrowed = Some(Narrowed {
        agent: "reviewer".to_owned(),
        tools: Some(vec!["read_file".to_owned(), "grep".to_owned()]),
        disallowed: vec!["grep".to_owned(), "github__create_issue".to_owned()],
    });
    let withheld = Some(HeldBack::Withheld(Withholding::Definition));
    assert_eq!(held_back("read_file", None, &task), None);
    assert_eq!(held_back("search_tools", None, &task), None);
    assert_eq!(held_back("request_capability", None, &task), None);
    assert_eq!(held_back("grep", None, &task), withheld, "disallowed wins");
    assert_eq!(
        held_back("run_command", None, &task),
        withheld,
        "not listed"
    );
    let mcp = codaris_policy::ToolSpec {
        name: "github__create_issue".into(),
        class: codaris_policy::PermissionClass::None,
        effect: codaris_policy::Effect::ReadOnly,
        paths: Vec::new().into(),
        modes: codaris_policy::Modes::ALL,
        slash: &[],
        report_only: None,
        withheld_when: None,
        origin: codaris_policy::Origin::External,
        held: None,
        builtin: None,
    };
    assert_eq!(
        held_back("github__create_issue", Some(&mcp), &task),
        withheld
    );
    let decision = crate::support::decide(serde_json::json!({
        "tool": "run_command", "args": {"command": "ls"},
        "task": serde_json::to_value(&task).unwrap()}));
    assert_eq!(decision.verdict, Verdict::Deny);
    assert_eq!(decision.code, Code::ToolWithheld);
    assert!(
        decision.sentence.contains("definition gives it"),
        "{}",
        decision.sentence
    );
}

/// `spawn_agent` is hidden in ask mode, and at `subagents.max_depth` (a session as deep as the
/// limit spawns nothing more), and offered in agent and plan mode otherwise.
#[test]
fn spawn_agent_is_hidden_in_ask_mode_and_at_the_depth_limit() {
    use codaris_policy::{HeldBack, OperatingMode, Task, Withholding, held_back};
    let task = |activity: &str, deep: bool| -> Task {
        serde_json::from_value(serde_json::json!({
            "cwd": "/w", "activity": activity, "subagent": deep, "at_max_depth": deep}))
        .unwrap()
    };
    assert_eq!(held_back("spawn_agent", None, &task("agent", false)), None);
    assert_eq!(held_back("spawn_agent", None, &task("plan", false)), None);
    assert_eq!(
        held_back("spawn_agent", None, &task("ask", false)),
        Some(HeldBack::Mode(OperatingMode::Ask))
    );
    assert_eq!(
        held_back("spawn_agent", None, &task("agent", true)),
        Some(HeldBack::Withheld(Withholding::DepthLimit))
    );
}

/// The memory subagent's tools are its own: a memory task has the six (the last three only when
/// it keeps notes, not in an ask-mode turn's recall-only child) outside every mode's list and
/// nothing else, not even the loop's `search_tools`; any other task, a subagent's too, has none.
#[test]
fn the_memory_tools_are_the_memory_childs_alone() {
    use codaris_policy::{Code, HeldBack, Task, Verdict, Withholding, held_back};
    let reads = [
        "codaris_memory_search",
        "codaris_memory_list",
        "codaris_memory_read",
    ];
    let changes = [
        "codaris_memory_mkdir",
        "codaris_memory_save",
        "codaris_memory_delete",
    ];
    let decide = |tool: &str, task: serde_json::Value| {
        crate::support::decide(serde_json::json!({"tool": tool, "args": {}, "task": task}))
    };
    for activity in ["agent", "plan", "ask"] {
        // A keeping child works in agent activity whatever its parent's turn (the daemon sets
        // it): notes are its own to change, even in a plan-mode turn.
        let keep = serde_json::json!({"cwd": "/w", "subagent": true, "memory": "keep"});
        let recall = serde_json::json!({"cwd": "/w", "activity": activity, "subagent": true, "memory": "recall"});
        let main = serde_json::json!({"cwd": "/w", "activity": activity});
        for tool in reads.iter().chain(&changes) {
            let kept = decide(tool, keep.clone());
            assert_eq!(
                kept.verdict,
                Verdict::Allow,
                "{tool} {activity}: {}",
                kept.sentence
            );
            let never = decide(tool, main.clone());
            assert_eq!(never.code, Code::ToolWithheld, "{tool} {activity}");
            let task: Task = serde_json::from_value(main.clone()).unwrap();
            assert_eq!(
                held_back(tool, None, &task),
                Some(HeldBack::Withheld(Withholding::MemoryChild))
            );
        }
        for tool in reads {
            let read = decide(tool, recall.clone());
            assert_eq!(
                read.verdict,
                Verdict::Allow,
                "{tool} {activity}: {}",
                read.sentence
            );
        }
        for tool in changes {
            let refused = decide(tool, recall.clone());
            assert_eq!(refused.code, Code::ToolWithheld, "{tool} {activity}");
            assert!(
                refused.sentence.contains("only recalls"),
                "{}",
                refused.sentence
            );
        }
        for other in ["read_file", "search_tools", "spawn_agent", "question"] {
            let task: Task = serde_json::from_value(keep.clone()).unwrap();
            assert_eq!(
                held_back(other, None, &task),
                Some(HeldBack::Withheld(Withholding::NotMemory)),
                "{other} {activity}"
            );
            assert_eq!(
                decide(other, keep.clone()).code,
                Code::ToolWithheld,
                "{other}"
            );
        }
    }
}
