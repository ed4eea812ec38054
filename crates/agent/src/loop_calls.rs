//! The loop's own tools, run where they are declared: `search_tools` against the host's index,
//! `request_capability` read here and asked through the host's card call.

use codaris_index::{DEFAULT_LIMIT, KindFilter, SearchOutcome, Withheld, render_withheld};
use codaris_policy::{
    Capability, CapabilityName, HeldBack, OperatingMode, Scope, Task, normalize_absolute,
};
use serde_json::Value;

use crate::host::{CapabilityAnswer, CapabilityRequest, Permit, ToolIndex, ToolRun};
use crate::registry::Registry;
use crate::surface::withholding;

/// Runs a `search_tools` call on its permit: the answer text, and the names it binds.
/// Hits the operating mode of `task` forbids are left out and named.
pub(crate) fn search(
    index: &dyn ToolIndex,
    task: &Task,
    permit: impl Permit,
) -> (ToolRun, Vec<String>) {
    let args = permit.args();
    let Some(query) = args.get("query").and_then(Value::as_str) else {
        return (
            ToolRun::error(
                "search_tools needs `query`: what the tool should do, in a few plain words",
            ),
            Vec::new(),
        );
    };
    let kind = match args
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("any")
        .parse::<KindFilter>()
    {
        Ok(kind) => kind,
        Err(_) => {
            return (
                ToolRun::error("`kind` is one of any, tool, core, mcp, skill, reference"),
                Vec::new(),
            );
        }
    };
    let mut outcome = index.search(query, kind, DEFAULT_LIMIT);
    let registry = index.registry();
    let left_out = leave_out_mode_forbidden(&mut outcome, task, &registry);
    let withheld = withheld_hits(&outcome, task, &registry);
    let bound = outcome
        .bindable()
        .into_iter()
        .filter(|name| !withheld.iter().any(|w| w.name == *name))
        .map(str::to_owned)
        .collect();
    let text = match left_out {
        None => render_withheld(&outcome, &withheld),
        // Every hit was a tool the mode forbids: a "Matches" list binding nothing would read
        // like slash-gated hits, so say plainly why nothing was bound.
        Some((mode, names)) if outcome.hits().is_empty() => format!(
            "No tool matching \"{query}\" is available in `{mode}` mode ({} are not, and a search does not bind them); only the user can switch to agent mode (`/mode agent` in chat).",
            names.join(", "),
            mode = mode.as_str(),
        ),
        Some((mode, names)) => format!(
            "{}\nNot available in `{mode}` mode, so not bound: {} (only the user can switch to agent mode, `/mode agent` in chat).",
            render_withheld(&outcome, &withheld),
            names.join(", "),
            mode = mode.as_str(),
        ),
    };
    (ToolRun::ok(text), bound)
}

/// Removes the hits `task`'s operating mode forbids and returns the mode and their names, if
/// any: the surface would never bind them and dispatch refuses them, so offering them would
/// send the model to call a tool it cannot have (the plan-mode loop of issue 46).
fn leave_out_mode_forbidden(
    outcome: &mut SearchOutcome,
    task: &Task,
    registry: &Registry,
) -> Option<(OperatingMode, Vec<String>)> {
    let SearchOutcome::Hits { hits, .. } = outcome else {
        return None;
    };
    let mut forbidden: Option<(OperatingMode, Vec<String>)> = None;
    hits.retain(|hit| match withholding(&hit.name, task, registry) {
        Some(HeldBack::Mode(mode)) => {
            forbidden
                .get_or_insert_with(|| (mode, Vec::new()))
                .1
                .push(hit.name.clone());
            false
        }
        _ => true,
    });
    forbidden
}

/// The bindable hits the turn will not get (switched off, withheld in an `/audit` turn or an
/// extension workspace): the surface would never send them and dispatch refuses them, so the
/// answer names them with the reason instead of binding them.
fn withheld_hits(outcome: &SearchOutcome, task: &Task, registry: &Registry) -> Vec<Withheld> {
    // Weak hits too: the reason a tool is withheld matters more than that it matched weakly.
    outcome
        .hits()
        .iter()
        .filter(|hit| hit.bindable)
        .filter_map(|hit| match withholding(&hit.name, task, registry) {
            Some(HeldBack::Withheld(why)) => Some(Withheld {
                name: hit.name.clone(),
                reason: why.reason().to_owned(),
            }),
            _ => None,
        })
        .collect()
}

/// Reads a `request_capability` call; a malformed one is answered at once, with no card.
pub(crate) fn capability_request(
    call_id: &str,
    args: &Value,
) -> Result<CapabilityRequest, ToolRun> {
    let name = args.get("capability").cloned().unwrap_or(Value::Null);
    let Ok(name) = serde_json::from_value::<CapabilityName>(name) else {
        return Err(ToolRun::error(
            "request_capability needs `capability`: one of read_outside_fence, mutate_outside_fence, write, run_command, change_config, send_http, use_tool (as a refusal names it), or run_program with a command prefix such as `cargo test` as its path",
        ));
    };
    let raw = args.get("path").and_then(Value::as_str);
    let path = match (name.scope(), raw) {
        (Scope::Unscoped, _) => None,
        // Grants compare normalised absolute paths: a card for anything else would grant
        // nothing while seeming to.
        (Scope::Path, Some(raw)) => match normalize_absolute(raw) {
            Some(path) => Some(path.into_owned()),
            None => {
                return Err(ToolRun::error(format!(
                    "`path` must be an absolute path for `{}`, not `{raw}`",
                    name.as_str()
                )));
            }
        },
        (_, Some(raw)) if !raw.trim().is_empty() => Some(raw.to_owned()),
        _ => {
            return Err(ToolRun::error(format!(
                "request_capability for `{}` needs `path`: the path, origin, tool or command prefix the refusal named",
                name.as_str()
            )));
        }
    };
    let reason = args
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or("no reason given")
        .to_owned();
    Ok(CapabilityRequest {
        call_id: call_id.to_owned(),
        capability: Capability::new(name, path),
        reason,
    })
}

/// What the model is told about its request: what the grants in force say now.
pub(crate) fn capability_reply(request: &CapabilityRequest, answer: CapabilityAnswer) -> ToolRun {
    let name = request.capability.name.as_str();
    let target = request.target();
    match answer {
        CapabilityAnswer::GrantedOnce => {
            ToolRun::ok(format!("granted `{name}`{target} for the next call"))
        }
        CapabilityAnswer::GrantedSession => {
            ToolRun::ok(format!("granted `{name}`{target} for this session"))
        }
        CapabilityAnswer::Refused => ToolRun::error(format!(
            "the person refused `{name}`{target}; do not ask again"
        )),
        CapabilityAnswer::RefusedOnce => ToolRun::error(format!(
            "the person refused `{name}`{target} this time; nothing was granted, do not ask again unless the task changes"
        )),
        CapabilityAnswer::Unanswered => {
            ToolRun::error("nobody answered the card; nothing was granted")
        }
        CapabilityAnswer::NotCovered => ToolRun::error(format!(
            "no grant covers `{name}`{target}; nothing was granted"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_requested_path_is_made_lexically_normal_and_a_relative_one_is_refused() {
        let asked = |args: Value| capability_request("c1", &args);
        let normal =
            asked(json!({"capability": "read_outside_fence", "path": "/etc/./ssl/../hosts"}));
        assert_eq!(
            normal.map(|r| r.capability.path),
            Ok(Some("/etc/hosts".to_owned()))
        );
        let relative = asked(json!({"capability": "read_outside_fence", "path": "etc/hosts"}));
        assert!(relative.is_err_and(|run| run.is_error && run.output.contains("absolute")));
        let unknown = asked(json!({"capability": "root"}));
        assert!(unknown.is_err_and(|run| run.output.contains("needs `capability`")));
        let no_prefix = asked(json!({"capability": "run_program", "path": "  "}));
        assert!(no_prefix.is_err_and(|run| run.output.contains("needs `path`")));
        let unscoped =
            asked(json!({"capability": "change_config", "path": "ignored", "reason": "edit"}));
        assert_eq!(
            unscoped.map(|r| (r.capability.path, r.reason)),
            Ok((None, "edit".to_owned()))
        );
    }
}

#[cfg(test)]
mod search_tests {
    use std::sync::Arc;

    use codaris_index::{Hit, Kind};
    use codaris_policy::Activity;
    use serde_json::json;

    use super::*;
    use crate::registry::RegistryTool;

    /// An index answering every search with its hits, in order.
    struct TwoHits(Arc<Registry>, Vec<&'static str>);

    impl ToolIndex for TwoHits {
        fn registry(&self) -> Arc<Registry> {
            self.0.clone()
        }

        fn search(&self, query: &str, _: KindFilter, _: usize) -> SearchOutcome {
            let hit = |name: &str| Hit {
                name: name.to_owned(),
                kind: Kind::Core,
                score: 1.0,
                words_score: 1.0,
                description: format!("the {name} tool"),
                slash: Vec::new(),
                path: None,
                bindable: true,
                likely: true,
            };
            SearchOutcome::Hits {
                query: query.to_owned(),
                hits: self.1.iter().map(|name| hit(name)).collect(),
            }
        }
    }

    /// An index answering every search with `edit` then `read_file`.
    fn index() -> TwoHits {
        let tools = ["edit", "read_file"].map(RegistryTool::builtin);
        TwoHits(
            Arc::new(Registry::new(tools, &[])),
            vec!["edit", "read_file"],
        )
    }

    /// An index answering every search with `hits`, each registered, those in `off` switched
    /// off.
    fn index_of(hits: &[&'static str], off: &[&str]) -> TwoHits {
        let tools = hits.iter().map(|name| {
            let mut tool = RegistryTool::builtin(*name);
            tool.enabled = !off.contains(name);
            tool
        });
        TwoHits(Arc::new(Registry::new(tools, &[])), hits.to_vec())
    }

    #[test]
    fn a_withheld_tool_is_named_with_its_reason_and_never_bound() {
        // An `/audit` turn withholds review_pipeline; lint_pipeline stays.
        let mut audit = Task::new("/w");
        audit.slash = vec!["/audit".to_owned()];
        let index = index_of(&["review_pipeline", "lint_pipeline"], &[]);
        let (run, bound) = search(
            &index,
            &audit,
            permit(&audit, json!({"query": "review pipeline pack"})),
        );
        assert_eq!(bound, ["lint_pipeline"]);
        assert!(
            run.output
                .contains("Bound for your next step: lint_pipeline\n"),
            "{}",
            run.output
        );
        assert!(
            run.output.ends_with(
                "Withheld from this turn, so not bound: review_pipeline (is withheld in an `/audit` turn; report through the compliance audit instead)"
            ),
            "{}",
            run.output
        );
        // An extension workspace withholds the planner: nothing is bound, and it says why.
        let mut extension = Task::new("/w");
        extension.extension = true;
        let index = index_of(&["planner"], &[]);
        let (run, bound) = search(
            &index,
            &extension,
            permit(&extension, json!({"query": "plan the steps"})),
        );
        assert!(bound.is_empty());
        assert!(run.output.contains("Bound for your next step: none\nWithheld from this turn, so not bound: planner (is withheld in an extension workspace"), "{}", run.output);
        // A switched-off tool.
        let index = index_of(&["webfetch", "read_file"], &["webfetch"]);
        let task = Task::new("/w");
        let (run, bound) = search(
            &index,
            &task,
            permit(&task, json!({"query": "fetch a page"})),
        );
        assert_eq!(bound, ["read_file"]);
        assert!(
            run.output
                .contains("webfetch (is switched off for this task"),
            "{}",
            run.output
        );
        assert!(
            !run.output.contains("Bound for your next step: webfetch"),
            "{}",
            run.output
        );
    }

    /// A permit for a `search_tools` call with `args`, decided in `task`.
    struct Searched(codaris_policy::Decision, Value);

    impl Permit for Searched {
        fn decision(&self) -> &codaris_policy::Decision {
            &self.0
        }

        fn args(&self) -> &Value {
            &self.1
        }
    }

    fn permit(task: &Task, args: Value) -> Searched {
        let decision = codaris_policy::Request {
            tool: codaris_policy::ToolId::parse("search_tools"),
            args: args.clone(),
            task: task.clone(),
            grants: Vec::new(),
            spec: None,
        }
        .evaluate();
        Searched(decision, args)
    }

    #[test]
    fn a_search_in_plan_mode_binds_only_what_the_mode_allows_and_names_the_rest() {
        let mut task = Task::new("/w");
        task.activity = Activity::Plan;
        let (run, bound) = search(
            &index(),
            &task,
            permit(&task, json!({"query": "change a file"})),
        );
        assert_eq!(bound, ["read_file"]);
        assert!(!run.output.contains("- edit"), "{}", run.output);
        assert!(
            run.output.ends_with(
                "Not available in `plan` mode, so not bound: edit (only the user can switch to agent mode, `/mode agent` in chat)."
            ),
            "{}",
            run.output
        );
        // In agent mode both are bound and nothing is added.
        let agent = Task::new("/w");
        let (run, bound) = search(
            &index(),
            &agent,
            permit(&agent, json!({"query": "change a file"})),
        );
        assert_eq!(bound, ["edit", "read_file"]);
        assert!(!run.output.contains("Not available"), "{}", run.output);
    }
}
