//! The state directory and the paths the daemon finds beyond a call's arguments (`implied`):
//! the attacks of issue 11 as whole decisions.

use codaris_policy::{Code, Decision, Request, Rule, Verdict};
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::support::{decide, normalise};

/// A session whose fence, as an explicit configuration may make it, holds the state directory.
fn task(mode: &str) -> Value {
    json!({"cwd": "/w/proj", "permission_mode": mode, "allowed_roots": ["/w/proj", "/"],
           "workspace": "/s/sessions/1", "state_dir": "/s",
           "protected": ["/s/ledger"], "secret": ["/s/token"]})
}

fn code(tool: &str, args: Value, task: Value) -> Code {
    decide(json!({"tool": tool, "args": args, "task": task})).code
}

#[test]
fn the_ledger_journal_is_refused_as_state_in_accept_edits() {
    let decision = decide(json!({"tool": "write",
        "args": {"path": "/s/ledger.journal", "content": ""}, "task": task("accept_edits")}));
    assert_eq!(
        decision,
        Decision {
            verdict: Verdict::Deny,
            code: Code::ProtectedPath,
            sentence: "path `/s/ledger.journal` is inside Codaris's state directory, which no \
                       tool may read or change (only the session's own workspace is open); ask \
                       the user to make that change themselves"
                .into(),
            capability: None,
            rules: vec![Rule::ProtectedPath],
            used_grants: vec![],
        }
    );
}

#[test]
fn nothing_in_the_state_directory_but_the_own_workspace_is_reachable() {
    for mode in ["ask", "accept_edits", "bypass"] {
        let t = || task(mode);
        for path in [
            "/s/codaris.sock",
            "/s/codarisd.pid",
            "/s/ledger.journal",
            "/s",
        ] {
            assert_eq!(
                code("rm", json!({"path": path}), t()),
                Code::ProtectedPath,
                "{mode} {path}"
            );
        }
        for path in [
            "/s/codarisd.log",
            "/s/sessions/2/notes.md",
            "/s/sessions",
            "/S/Sessions/2/x",
            "/s/sessions/1/../2/x",
            "/s/sessions/10/x",
            "/s/sessions/1-evil/x",
        ] {
            assert_eq!(
                code("read_file", json!({"path": path}), t()),
                Code::ProtectedPath,
                "{mode} {path}"
            );
        }
        // Removing an ancestor removes the state directory with it.
        assert_eq!(
            code("rm", json!({"path": "/s/..", "recursive": true}), t()),
            Code::ProtectedPath
        );
        assert_eq!(
            code(
                "mv",
                json!({"src": "/w/proj/a", "dst": "/s/ledger.journal"}),
                t()
            ),
            Code::ProtectedPath
        );
    }
    let own = decide(json!({"tool": "write",
        "args": {"path": "/s/sessions/1/notes.md", "content": "x"}, "task": task("accept_edits")}));
    assert_eq!(own.code, Code::AllowedByMode, "{own:?}");
    let read = code(
        "read_file",
        json!({"path": "/s/sessions/1/notes.md"}),
        task("ask"),
    );
    assert_eq!(read, Code::AllowedByDefault);
    // A search of an ancestor is allowed; the tools walk past the state directory.
    assert_eq!(
        code("grep", json!({"pattern": "x", "path": "/"}), task("ask")),
        Code::AllowedByDefault
    );
}

#[test]
fn a_workspace_that_is_the_state_directory_opens_nothing() {
    let mut t = task("accept_edits");
    t["workspace"] = json!("/s");
    assert_eq!(
        code("write", json!({"path": "/s/x", "content": ""}), t),
        Code::ProtectedPath
    );
}

#[test]
fn a_recorded_request_without_a_state_directory_decides_as_before() {
    let mut t = task("accept_edits");
    t.as_object_mut().map(|o| o.remove("state_dir"));
    assert_eq!(
        code(
            "write",
            json!({"path": "/s/ledger.journal", "content": ""}),
            t
        ),
        Code::AllowedByMode
    );
    let request = Request::from_value(json!({"tool": "read_file", "args": {"path": "/w/proj/a"},
        "task": {"cwd": "/w/proj", "allowed_roots": ["/w/proj"]}}));
    let text = request.ok().and_then(|r| serde_json::to_string(&r).ok());
    let text = text.unwrap_or_default();
    assert!(
        !text.contains("state_dir") && !text.contains("implied"),
        "{text}"
    );
}

fn patch(targets: &[&str], mode: &str) -> Value {
    let mut t = task(mode);
    t["allowed_roots"] = json!(["/w/proj"]);
    t["implied"] = targets
        .iter()
        .map(|p| json!({"path": p, "by": "patch_target"}))
        .collect();
    json!({"tool": "apply_patch", "args": {"patch": "…"}, "task": t})
}

#[test]
fn every_file_a_patch_touches_is_held_to_the_protected_path_rule() {
    let decision = decide(patch(
        &["/w/proj/src/a.rs", "/w/proj/.git/config"],
        "bypass",
    ));
    assert_eq!(
        decision,
        Decision {
            verdict: Verdict::Deny,
            code: Code::ProtectedPath,
            sentence: "path `/w/proj/.git/config` is inside a `.git` directory, which no tool \
                       may change; ask the user to make that change themselves"
                .into(),
            capability: None,
            rules: vec![Rule::ProtectedPath],
            used_grants: vec![],
        }
    );
    for target in [
        ".GIT/hooks/pre-commit",
        "/w/proj/vendor/x/.Git/config",
        "/w/proj/src/../.git/hooks/post-checkout",
        "/s/ledger.journal",
        "/s/sessions/2/x",
        "/s/token",
    ] {
        let d = decide(patch(&["src/ok.rs", target], "accept_edits"));
        assert_eq!(d.code, Code::ProtectedPath, "{target}: {d:?}");
    }
    let outside = decide(patch(&["/etc/cron.d/x"], "accept_edits"));
    assert_eq!(outside.code, Code::MutateOutsideFence);
    assert_eq!(
        outside.capability.and_then(|c| c.path).as_deref(),
        Some("/etc/cron.d/x")
    );
    let inside = decide(patch(&["src/a.rs", "/w/proj/README.md"], "accept_edits"));
    assert_eq!(inside.code, Code::AllowedByMode);
    // Under `ask` the card asks for the directory the patch applies in, which covers its files.
    let ask = decide(patch(&["src/a.rs"], "ask"));
    assert_eq!(ask.code, Code::NeedsApproval);
    assert_eq!(
        ask.capability.and_then(|c| c.path).as_deref(),
        Some("/w/proj")
    );
    let nul = decide(patch(&["a\0b"], "accept_edits"));
    assert_eq!(nul.code, Code::BadPath);
    assert!(nul.sentence.contains("`patch`"), "{}", nul.sentence);
}

#[test]
fn a_recursive_removal_holding_a_git_is_refused_naming_it() {
    let mut t = task("bypass");
    t["implied"] = json!([{"path": "/w/proj/vendor/repo/.git", "by": "removed_git"}]);
    let decision = decide(json!({"tool": "rm",
        "args": {"path": "/w/proj/vendor", "recursive": true}, "task": t}));
    assert_eq!(
        decision,
        Decision {
            verdict: Verdict::Deny,
            code: Code::ProtectedPath,
            sentence: "path `/w/proj/vendor` holds the `.git` directory \
                       `/w/proj/vendor/repo/.git`, which no tool may change, so it may not be \
                       removed; ask the user to make that change themselves"
                .into(),
            capability: None,
            rules: vec![Rule::ProtectedPath],
            used_grants: vec![],
        }
    );
    let mut t = task("accept_edits");
    t["implied"] = json!([{"path": "/w/proj/big", "by": "removal_unchecked"}]);
    let d = decide(
        json!({"tool": "rm", "args": {"path": "/w/proj/big", "recursive": true}, "task": t}),
    );
    assert_eq!(d.code, Code::ProtectedPath);
    assert!(
        d.sentence.contains("more entries than Codaris checks"),
        "{}",
        d.sentence
    );
}

const PARTS: &[&str] = &[
    "..",
    ".",
    "",
    "src",
    "proj",
    ".git",
    ".GIT",
    ".Git",
    ".gIt",
    "hooks",
    "config",
    "a.git",
    ".github",
    "s",
    "sessions",
    "1",
    "2",
    "ledger.journal",
];

fn target() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        prop::collection::vec(prop::sample::select(PARTS), 1..7),
    )
        .prop_map(|(abs, parts)| format!("{}{}", if abs { "/w/" } else { "" }, parts.join("/")))
}

fn reaches_git_or_state(path: &str) -> bool {
    let normal = normalise(path, "/w/proj");
    let lower = normal.to_ascii_lowercase();
    let in_state =
        crate::support::within(&lower, "/s") && !crate::support::within(&normal, "/s/sessions/1");
    lower.split('/').any(|c| c == ".git") || in_state
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Whatever a patch names, a target in `.git` (any case, after `..`) or in the state
    /// directory outside the own workspace is never allowed, in any mode.
    #[test]
    fn no_patch_target_in_git_or_state_is_ever_allowed(
        targets in prop::collection::vec(target(), 1..4),
        mode in prop::sample::select(&["ask", "accept_edits", "bypass"][..]),
    ) {
        let names: Vec<&str> = targets.iter().map(String::as_str).collect();
        let mut request = patch(&names, mode);
        request["task"]["allowed_roots"] = json!(["/"]);
        let decision = decide(request);
        if targets.iter().any(|t| reaches_git_or_state(t)) {
            // Refused: as protected, or earlier for a target no system call could take.
            prop_assert_eq!(decision.verdict, Verdict::Deny, "{:?} {:?}", targets, decision);
        }
    }

    /// An `rm` of any target whose tree the daemon found a `.git` in is never allowed.
    #[test]
    fn no_removal_of_a_tree_holding_git_is_ever_allowed(
        path in target(),
        mode in prop::sample::select(&["ask", "accept_edits", "bypass"][..]),
    ) {
        let mut t = task(mode);
        t["implied"] = json!([{"path": format!("{}/.git", normalise(&path, "/w/proj")), "by": "removed_git"}]);
        let decision = decide(json!({"tool": "rm", "args": {"path": path, "recursive": true}, "task": t}));
        prop_assert_eq!(decision.verdict, Verdict::Deny, "{:?}", decision);
    }
}
