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
