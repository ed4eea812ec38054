//! Adversarial paths, asserted as whole decisions so the sentence and rules are pinned too.

use codaris_policy::{
    Call, Capability, CapabilityName, Code, Decision, Grant, GrantSet, Lifetime, Rule, Task,
    UsedGrant, Verdict, evaluate,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::decide;

fn task() -> Value {
    json!({"cwd": "/w/proj", "allowed_roots": ["/w/proj"], "workspace": "/s/sessions/1",
           "protected": ["/s/ledger"]})
}

fn code_for(tool: &str, path: &str) -> Code {
    decide(json!({"tool": tool, "args": {"path": path}, "task": task()})).code
}

#[test]
fn climbing_out_with_dot_dot_is_refused_with_the_resolved_path() {
    let decision = decide(
        json!({"tool": "write", "args": {"path": "src/../../../etc/passwd"},
                                 "task": task()}),
    );
    let capability = Capability::new(
        CapabilityName::MutateOutsideFence,
        Some("/etc/passwd".into()),
    );
    assert_eq!(
        decision,
        Decision {
            verdict: Verdict::Deny,
            code: Code::MutateOutsideFence,
            sentence: "tool `write` would change `/etc/passwd`, which is outside the allowed \
                       folders; call `request_capability` for `mutate_outside_fence` on \
                       `/etc/passwd` to ask the user"
                .into(),
            capability: Some(capability),
            rules: vec![Rule::Fence],
            used_grants: vec![],
        }
    );
}

#[test]
fn a_double_encoded_object_is_refused_with_how_to_call_again() {
    let decision = decide(json!({"tool": "edit", "args": "{\"path\": \"a\"}", "task": task()}));
    assert_eq!(
        decision,
        Decision {
            verdict: Verdict::Deny,
            code: Code::ArgsNotObject,
            sentence: "the arguments to `edit` are a string, not a JSON object; call `edit` \
                       again with one JSON object of named arguments: pass the object itself, \
                       not the object encoded as a string"
                .into(),
            capability: None,
            rules: vec![Rule::ArgsShape],
            used_grants: vec![],
        }
    );
}

#[test]
fn a_once_grant_is_named_for_consumption() {
    let decision = decide(
        json!({"tool": "write", "args": {"path": "/tmp/out/x"}, "task": task(),
        "grants": [{"capability": "write", "path": "/w", "lifetime": "deny"},
                   {"capability": "mutate_outside_fence", "path": "/tmp/out", "lifetime": "once", "id": "g-42"}]}),
    );
    assert_eq!(
        decision,
        Decision {
            verdict: Verdict::Allow,
            code: Code::AllowedByGrant,
            sentence: "tool `write` is allowed by the user's `once` grant of \
                       `mutate_outside_fence` on `/tmp/out`"
                .into(),
            capability: Some(Capability::new(
                CapabilityName::MutateOutsideFence,
                Some("/tmp/out/x".into())
            )),
            rules: vec![Rule::Fence, Rule::PermissionClass, Rule::Grant],
            used_grants: vec![UsedGrant {
                index: 1,
                id: Some("g-42".into()),
                lifetime: Lifetime::Once
            }],
        }
    );
}

#[test]
fn paths_that_only_look_inside_are_outside() {
    for path in [
        "/w/proj-evil",
        "/w/proj-evil/a",
        "/w/proj/../secret",
        "/w/projx",
        "/w",
        "/",
    ] {
        assert_eq!(
            code_for("read_file", path),
            Code::ReadOutsideFence,
            "{path}"
        );
        // Writing `/` would take the protected ledger with it, which is refused first.
        let change = if path == "/" {
            Code::ProtectedPath
        } else {
            Code::MutateOutsideFence
        };
        assert_eq!(code_for("write", path), change, "{path}");
    }
}

#[test]
fn odd_spellings_of_inside_paths_are_inside() {
    for path in [
        "./",
        ".",
        "",
        "//w//proj//",
        "/w/proj/./a/",
        "/w/proj/a/../b",
        "sub/../../proj/x",
    ] {
        let expected = if path.is_empty() {
            Code::BadPath
        } else {
            Code::AllowedByDefault
        };
        assert_eq!(code_for("read_file", path), expected, "{path:?}");
    }
}

#[test]
fn git_in_any_case_at_any_depth_is_protected_for_changes_only() {
    for path in [
        ".GIT/hooks",
        ".git",
        "a/b/.Git/x",
        "/w/proj/x/.gIT/config",
        ".git/",
    ] {
        assert_eq!(code_for("write", path), Code::ProtectedPath, "{path}");
        assert_eq!(
            code_for("read_file", path),
            Code::AllowedByDefault,
            "{path}"
        );
    }
    for path in [".github/x", ".gitignore", "a.git/x", ".git-rewrite"] {
        assert_eq!(code_for("write", path), Code::NeedsApproval, "{path}");
    }
}

#[test]
fn nul_bytes_and_overlong_paths_are_bad_paths() {
    for path in [
        "a\0",
        "\0",
        "/w/proj/\0/x",
        &"x".repeat(4097),
        &"/w/proj".repeat(600),
    ] {
        assert_eq!(code_for("read_file", path), Code::BadPath);
    }
}

#[test]
fn a_grant_for_data_does_not_cover_data_evil() {
    let with = |path: &str| {
        decide(json!({"tool": "read_file", "args": {"path": path}, "task": task(),
                      "grants": [{"capability": "read_outside_fence", "path": "/data", "lifetime": "session"}]}))
        .code
    };
    assert_eq!(with("/data"), Code::AllowedByGrant);
    assert_eq!(with("/data/"), Code::AllowedByGrant);
    assert_eq!(with("/data/deep/er/x"), Code::AllowedByGrant);
    assert_eq!(with("/data-evil"), Code::ReadOutsideFence);
    assert_eq!(with("/data-evil/x"), Code::ReadOutsideFence);
    assert_eq!(with("/dat"), Code::ReadOutsideFence);
    assert_eq!(with("/data/../etc"), Code::ReadOutsideFence);
}

#[test]
fn a_deep_path_against_ten_thousand_grants_is_decided() {
    let grants = GrantSet::from_grants((0..10_000).map(|i| {
        Grant::new(
            CapabilityName::ReadOutsideFence,
            Some(&format!("/data/{i}")),
            Lifetime::Session,
        )
    }));
    let task = Task::new("/w/proj");
    let deep = format!("/data/9999/{}", "d/".repeat(1500));
    let args = json!({"path": deep});
    let call = Call {
        tool: &codaris_policy::ToolId::parse("read_file"),
        args: &args,
        spec: None,
    };
    let decision = evaluate(&call, &grants, &task);
    assert_eq!(decision.code, Code::AllowedByGrant);
    assert_eq!(decision.used_grants[0].index, 9999);
}
