//! Shared fixtures: a registry of every built-in tool and a few MCP servers, turn states and
//! history events.

use codaris_agent::{
    Event, Registry, RegistryTool, Surface, ToolCall, TurnPlan, TurnState, surface,
};
use codaris_index::Server;
use codaris_policy::{BUILTIN, Task, Withholding};

/// The MCP tools of the fixture registry; `demo__off` is switched off.
pub const MCP: [(&str, &str); 5] = [
    ("seqera", "lint_nextflow"),
    ("seqera", "list_runs"),
    ("demo", "echo"),
    ("demo", "off"),
    ("fetch", "fetch"),
];

/// Every built-in tool except the memory subagent's, then the MCP tools.
pub fn registry() -> Registry {
    registry_without(&[])
}

/// The same registry without some names.
pub fn registry_without(absent: &[&str]) -> Registry {
    let builtin = BUILTIN
        .iter()
        .filter(|s| s.withheld_when != Some(Withholding::MemoryChild))
        .map(|s| RegistryTool::builtin(s.name.to_string()));
    let mcp = MCP.iter().map(|(server, tool)| {
        let mut t = RegistryTool::mcp(server, tool);
        t.enabled = *tool != "off";
        t
    });
    let servers = [
        Server {
            name: "seqera".into(),
            keywords: vec!["nextflow".into(), "tower".into()],
        },
        Server {
            name: "fetch".into(),
            keywords: vec!["web page".into(), "URL".into()],
        },
    ];
    Registry::new(
        builtin
            .chain(mcp)
            .filter(|t| !absent.contains(&t.name.as_str())),
        &servers,
    )
}

/// A test host's definition of any tool: always on, any object for arguments.
pub fn any_spec(tool: &str) -> Option<codaris_agent::ToolDefinition> {
    Some(codaris_agent::ToolDefinition {
        name: tool.to_owned(),
        description: format!("the {tool} tool"),
        input_schema: serde_json::json!({"type": "object"}),
        tier: codaris_agent::ToolTier::AlwaysOn,
    })
}

/// What the real policy decides of `call` with no grants in force.
pub fn decide_without_grants(call: &codaris_agent::CallRequest) -> codaris_policy::Decision {
    codaris_policy::evaluate(
        &codaris_policy::Call {
            tool: &call.tool,
            args: &call.args,
            spec: None,
        },
        &codaris_policy::GrantSet::new(),
        &call.task,
    )
}

/// The lean state of a turn whose message is `message`, in a plain agent task.
pub fn state(message: &str) -> TurnState {
    TurnState::new(TurnPlan::from_message(message), Task::new("/w/proj"), true)
}

/// A `search_tools` result binding `names`.
pub fn search(id: &str, names: &[&str]) -> Event {
    Event::ToolResult {
        id: id.into(),
        tool: "search_tools".into(),
        output: format!("Bound for your next step: {}", names.join(", ")),
        bound: names.iter().map(|n| (*n).to_owned()).collect(),
        is_error: false,
        pictures: Vec::new(),
        retired: String::new(),
    }
}

/// The model's answer making one `search_tools` call.
pub fn search_call(id: &str, query: &str) -> Event {
    Event::Assistant {
        text: String::new(),
        calls: vec![ToolCall {
            id: id.into(),
            name: "search_tools".into(),
            arguments: serde_json::json!({ "query": query }),
        }],
    }
}

/// The forced part of a surface.
pub fn forced(s: &Surface) -> Vec<&str> {
    s.tools[s.always_on..s.always_on + s.forced]
        .iter()
        .map(String::as_str)
        .collect()
}

/// The found part of a surface.
pub fn found(s: &Surface) -> Vec<&str> {
    s.tools[s.always_on + s.forced..]
        .iter()
        .map(String::as_str)
        .collect()
}

/// The surface of `message`'s turn after `history` with the full registry.
pub fn surface_of(history: &[Event], message: &str) -> Surface {
    surface(history, &state(message), &registry())
}

/// A test host's permit: the decision and the call it allows.
pub struct TestPermit(pub codaris_policy::Decision, pub codaris_agent::CallRequest);

impl codaris_agent::Permit for TestPermit {
    fn decision(&self) -> &codaris_policy::Decision {
        &self.0
    }

    fn args(&self) -> &serde_json::Value {
        &self.1.args
    }
}
