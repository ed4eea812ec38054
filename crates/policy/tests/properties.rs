//! Invariants over generated requests: read-only activities never allow a change without a
//! grant, nothing outside the fence is allowed without a grant, the same input decides the same
//! way, and no input makes `evaluate` panic.

use codaris_policy::{
    Access, BUILTIN, Code, Effect, ExternalSpec, PathArg, PathDefault, Request, ToolSpec, Verdict,
    builtin,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::support::{normalise, within};

const CWDS: &[&str] = &["/w/proj", "/w/proj/sub", "/w", "/", "/home/me", "rel", ""];
const ROOTS: &[&str] = &["/w/proj", "/data", "/", "rel", "/w/proj/"];
const COMPONENTS: &[&str] = &[
    "..",
    ".",
    "",
    "w",
    "proj",
    "proj-evil",
    ".git",
    ".GIT",
    "data",
    "data-evil",
    "s",
    "ledger",
    "x",
];

fn path() -> impl Strategy<Value = String> {
    let composed = (
        any::<bool>(),
        prop::collection::vec(prop::sample::select(COMPONENTS), 0..8),
    )
        .prop_map(|(abs, parts)| format!("{}{}", if abs { "/" } else { "" }, parts.join("/")));
    prop_oneof![
        6 => composed,
        1 => Just(String::new()),
        1 => Just("a\0b".to_owned()),
        1 => Just(format!("/w/proj/{}", "d/".repeat(2100))),
        2 => any::<String>(),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
        path().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn external_spec() -> impl Strategy<Value = ExternalSpec> {
    let arg = (
        prop::sample::select(&["file", "path", "out"][..]),
        any::<bool>(),
    )
        .prop_map(|(name, mutate)| {
            let access = if mutate { Access::Mutate } else { Access::Read };
            PathArg::new(name, access, PathDefault::Optional)
        });
    (any::<bool>(), prop::collection::vec(arg, 0..3)).prop_map(|(read_only, paths)| ExternalSpec {
        read_only,
        paths,
        ..ExternalSpec::default()
    })
}

/// A tool name, and the spec a request carries for it (for MCP-looking names).
fn tool() -> impl Strategy<Value = (String, Option<ExternalSpec>)> {
    prop_oneof![
        8 => prop::sample::select(BUILTIN).prop_map(|s| (s.name.to_string(), None)),
        2 => external_spec().prop_map(|s| ("demo__tool".to_owned(), Some(s))),
        1 => "[a-z_]{1,12}".prop_map(|n| (n, None)),
    ]
}

/// Arguments shaped for `spec`: its path arguments (or some of them) plus common extras.
fn args_for(spec: Option<ToolSpec>) -> BoxedStrategy<Value> {
    let names: Vec<String> = spec
        .map(|s| s.paths.iter().map(|p| p.name.to_string()).collect())
        .unwrap_or_default();
    let shaped = (
        prop::collection::vec((any::<bool>(), path()), names.len()),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(move |(values, report_only, list)| {
            let mut object = Map::new();
            for (name, (present, p)) in names.iter().zip(values) {
                if present {
                    let v = if list { json!([p]) } else { json!(p) };
                    object.insert(name.clone(), v);
                }
            }
            object.insert("report_only".into(), json!(report_only));
            object.insert("url".into(), json!("https://example.org/x"));
            Value::Object(object)
        });
    prop_oneof![4 => shaped, 1 => json_value()].boxed()
}

fn task() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(&["agent", "plan", "ask", "review", "research", "audit"][..]),
        prop::sample::select(&["ask", "accept_edits", "bypass"][..]),
        prop::sample::select(CWDS),
        prop::sample::subsequence(ROOTS, 0..3),
        any::<bool>(),
        prop::sample::subsequence(&["/fix", "/remediate", "/autofix", "/audit"][..], 0..2),
        any::<bool>(),
    )
        .prop_map(|(activity, mode, cwd, roots, ws, slash, ext)| {
            json!({"activity": activity, "permission_mode": mode, "cwd": cwd,
                   "allowed_roots": roots, "workspace": if ws { json!("/s/sessions/1") } else { Value::Null },
                   "slash": slash, "protected": ["/s/ledger"], "extension": ext})
        })
}

fn grant() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(
            &[
                "read_outside_fence",
                "mutate_outside_fence",
                "write",
                "run_command",
                "use_tool",
            ][..],
        ),
        prop::sample::select(&["/", "/data", "/w", "/etc", "demo__tool", "relative"][..]),
        prop::sample::select(&["once", "session", "deny"][..]),
    )
        .prop_map(|(c, p, l)| json!({"capability": c, "path": p, "lifetime": l}))
}

/// A whole request; `grants` decides whether any grant is in force.
fn request(grants: bool) -> impl Strategy<Value = Request> {
    let max = if grants { 4 } else { 0 };
    tool()
        .prop_flat_map(move |(name, spec)| {
            let resolved = builtin(&name)
                .cloned()
                .or_else(|| spec.as_ref().map(|s| s.to_tool_spec(&name)));
            (
                Just(name),
                Just(spec),
                args_for(resolved),
                task(),
                prop::collection::vec(grant(), 0..=max),
            )
        })
        .prop_map(|(tool, spec, args, task, grants)| {
            let value =
                json!({"tool": tool, "args": args, "task": task, "grants": grants, "spec": spec});
            Request::from_value(value).expect("generated requests have the contract shape")
        })
}

fn spec_of(req: &Request) -> Option<ToolSpec> {
    builtin(req.tool.as_str())
        .cloned()
        .or_else(|| req.spec.as_ref().map(|s| s.to_tool_spec(req.tool.as_str())))
}

/// Whether the call would change something, judged from the spec without the crate's rules.
fn mutating(req: &Request) -> bool {
    let (Some(spec), Some(obj)) = (spec_of(req), req.args.as_object()) else {
        return false;
    };
    let report_only = spec
        .report_only
        .is_some_and(|k| obj.get(k) == Some(&Value::Bool(true)));
    if report_only {
        return false;
    }
    let given = |name: &str| match obj.get(name) {
        None | Some(Value::Null) => false,
        Some(Value::Array(a)) => !a.is_empty(),
        Some(_) => true,
    };
    matches!(
        spec.effect,
        Effect::Command | Effect::Config | Effect::Opaque
    ) || spec
        .paths
        .iter()
        .any(|p| p.access == Access::Mutate && (given(&p.name) || p.default == PathDefault::Cwd))
}

/// Paths the call names that lie outside every root and the workspace.
fn outside_paths(req: &Request) -> Vec<String> {
    let (Some(spec), Some(obj)) = (spec_of(req), req.args.as_object()) else {
        return Vec::new();
    };
    let task = &req.task;
    let roots: Vec<String> = task
        .allowed_roots
        .iter()
        .chain(task.workspace.as_ref())
        .filter(|r| r.starts_with('/'))
        .map(|r| normalise(r, "/"))
        .collect();
    let mut raw: Vec<&str> = Vec::new();
    for p in spec.paths.iter() {
        match obj.get(p.name.as_ref()) {
            Some(Value::String(s)) => raw.push(s),
            Some(Value::Array(items)) => raw.extend(items.iter().filter_map(Value::as_str)),
            _ => {}
        }
    }
    raw.into_iter()
        .filter(|p| !p.is_empty() && !p.contains('\0') && p.len() <= 4096)
        .filter(|p| p.starts_with('/') || task.cwd.starts_with('/'))
        .map(|p| normalise(p, &task.cwd))
        .filter(|p| !roots.iter().any(|r| within(p, r)))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn a_read_only_activity_never_allows_a_mutating_call_without_a_grant(req in request(false)) {
        let decision = req.evaluate();
        if req.task.activity.is_read_only() && mutating(&req) {
            prop_assert_ne!(decision.verdict, Verdict::Allow, "{:?}", decision);
        }
    }

    #[test]
    fn a_path_outside_every_root_is_never_allowed_without_a_grant(req in request(false)) {
        let decision = req.evaluate();
        let outside = outside_paths(&req);
        if !outside.is_empty() {
            prop_assert_ne!(decision.verdict, Verdict::Allow, "{:?} {:?}", outside, decision);
        }
    }

    #[test]
    fn the_same_input_always_gets_the_same_decision(req in request(true)) {
        let first = req.evaluate();
        prop_assert_eq!(&req.evaluate(), &first);
        let text = serde_json::to_string(&req).unwrap();
        prop_assert_eq!(&Request::from_json(&text).unwrap().evaluate(), &first);
    }

    #[test]
    fn every_decision_keeps_its_promises(req in request(true)) {
        crate::fuzz_body::run(&serde_json::to_vec(&req).unwrap());
    }

    #[test]
    fn a_deny_grant_never_turns_a_refusal_or_prompt_into_an_allow(req in request(true), g in grant()) {
        let before = req.evaluate();
        let mut more = req.clone();
        let mut deny: codaris_policy::Grant = serde_json::from_value(g).unwrap();
        deny.lifetime = codaris_policy::Lifetime::Deny;
        more.grants.push(deny);
        let after = more.evaluate();
        prop_assert!(after.verdict >= before.verdict, "{:?} -> {:?}", before, after);
    }

    #[test]
    fn a_call_outside_the_mode_allowlist_is_refused_by_the_mode_whatever_is_bound_or_granted(
        req in request(true),
        nothing_bound in any::<bool>(),
    ) {
        let Some(spec) = spec_of(&req) else { return Ok(()) };
        let mode = req.task.activity.operating_mode();
        let mut req = req;
        // The binding must not speak first: a search cannot bind what the mode forbids.
        req.task.bound = Some(if nothing_bound { Vec::new() } else { vec![req.tool.to_string()] });
        let decision = req.evaluate();
        let earlier = [Code::RepeatedSearch, Code::ToolWithheld, Code::DefinitionChanged, Code::SlashRequired];
        if spec.modes.allows(mode) || earlier.contains(&decision.code) {
            return Ok(());
        }
        // A tool that is not built is on no surface and no mode switch brings it: unknown.
        if req.tool.builtin().is_some_and(|b| b.entry().is_none()) {
            prop_assert_eq!(decision.code, Code::UnknownTool);
            return Ok(());
        }
        prop_assert!(
            matches!(decision.code, Code::ModeForbids | Code::ReadOnlyActivity),
            "{:?}", decision
        );
        prop_assert!(decision.used_grants.is_empty(), "{:?}", decision);
        // Something the call would change is named; otherwise nothing is.
        prop_assert_eq!(decision.capability.is_some(), decision.code == Code::ReadOnlyActivity);
    }

    #[test]
    fn evaluate_never_panics_on_any_json(tool in any::<String>(), args in json_value(), task in json_value()) {
        let value = json!({"tool": tool, "args": args, "task": task});
        if let Ok(req) = Request::from_value(value) {
            let _ = req.evaluate();
        }
        let whole = json!({"tool": "write", "args": args, "task": {"cwd": "/w"}});
        let _ = Request::from_value(whole).map(|r| r.evaluate());
    }
}
