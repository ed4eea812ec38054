//! The decision record the ledger benches write: a `write` outside the roots, decided with no
//! grants, in `session`.

use codaris_ledger::DecisionRecord;
use codaris_policy::{Request, Task};

pub fn decision_record(session: impl Into<String>) -> DecisionRecord {
    let request = Request {
        tool: codaris_policy::ToolId::parse("write"),
        args: serde_json::json!({"path": "/etc/hosts", "content": "x"}),
        task: Task::new("/w/proj"),
        grants: Vec::new(),
        spec: None,
    };
    let decision = request.evaluate();
    DecisionRecord::new(session.into(), request, decision, 1)
}
