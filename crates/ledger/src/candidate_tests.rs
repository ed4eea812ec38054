use super::*;
use codaris_policy::PermissionMode;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The operator's inputs the recorded decisions were made under.
fn recorded_inputs() -> OperatorInputs {
    OperatorInputs {
        allowed_dirs: vec!["/data".to_owned()],
        http_allowlist: vec!["https://api.github.com".to_owned()],
        command_allowlist: vec!["cargo test".to_owned(), "git status".to_owned()],
        push_registries: Vec::new(),
        hooks: vec![guard()],
    }
}

/// A decision as the daemon records it: the session's own root, then the configuration's
/// roots; the standing grants first in the request.
fn record(seq: u64, tool: &str, args: Value, inputs: &OperatorInputs) -> DecisionRecord {
    let mut task = Task::new("/w/proj");
    task.permission_mode = PermissionMode::AcceptEdits;
    task.allowed_roots
        .extend(inputs.allowed_dirs.iter().cloned());
    task.configured_roots = Some(inputs.allowed_dirs.len());
    task.push_registries.clone_from(&inputs.push_registries);
    let request = Request {
        tool: ToolId::parse(tool),
        args,
        task,
        grants: inputs.standing_grants(),
        spec: None,
    };
    let decision = request.evaluate();
    let mut record = DecisionRecord::new("s1", request, decision, 1);
    record.seq = seq;
    record
}

fn history(inputs: &OperatorInputs) -> Vec<DecisionRecord> {
    vec![
        record(1, "run_command", json!({"command": "cargo test"}), inputs),
        record(
            2,
            "run_command",
            json!({"command": "cargo test -p x"}),
            inputs,
        ),
        record(3, "run_command", json!({"command": "git status"}), inputs),
        record(4, "read_file", json!({"path": "/data/a.csv"}), inputs),
        record(5, "read_file", json!({"path": "/w/proj/main.nf"}), inputs),
        record(6, "read_file", json!({"path": "/srv/x/b.csv"}), inputs),
        record(
            7,
            "http_request",
            json!({"url": "https://api.github.com/repos"}),
            inputs,
        ),
    ]
}

#[test]
fn an_identical_candidate_changes_nothing() {
    let records = history(&recorded_inputs());
    let report = replay_under(&records, &[], &Candidate::new(recorded_inputs()));
    assert_eq!((report.decisions, report.changed), (7, 0));
    assert_eq!(
        report.summary(),
        vec!["none of the 7 decisions would change"]
    );
}

#[test]
fn a_narrowed_allowlist_changes_exactly_the_calls_it_covered() {
    let records = history(&recorded_inputs());
    let narrowed = OperatorInputs {
        command_allowlist: vec!["git status".to_owned()],
        ..recorded_inputs()
    };
    let report = replay_under(&records, &[], &Candidate::new(narrowed));
    let seqs: Vec<u64> = report.changes.iter().map(|c| c.seq).collect();
    assert_eq!(seqs, vec![1, 2]);
    let lines: Vec<String> = report.groups.iter().map(ToString::to_string).collect();
    assert_eq!(lines, vec!["allow → ask: 2 run_command calls of cargo"]);
    assert_eq!(
        report.summary().last().map(String::as_str),
        Some("2 of 7 decisions would change")
    );
}

#[test]
fn a_dropped_root_and_origin_are_judged_and_grouped_by_root_and_host() {
    let records = history(&recorded_inputs());
    let candidate = Candidate::new(OperatorInputs {
        allowed_dirs: Vec::new(),
        http_allowlist: Vec::new(),
        ..recorded_inputs()
    });
    let report = replay_under(&records, &[], &candidate);
    let lines: Vec<String> = report.groups.iter().map(ToString::to_string).collect();
    // The session's own root stays: only the configuration's is taken away.
    assert_eq!(
        lines,
        vec![
            "allow → ask: 1 http_request call to api.github.com",
            "allow → deny: 1 read_file call under /data",
        ]
    );
}

#[test]
fn a_widened_root_lets_a_refused_read_through() {
    let records = history(&recorded_inputs());
    let widened = OperatorInputs {
        allowed_dirs: vec!["/data".to_owned(), "/srv".to_owned()],
        ..recorded_inputs()
    };
    let report = replay_under(&records, &[], &Candidate::new(widened));
    assert_eq!(report.changed, 1);
    let change = &report.changes[0];
    assert_eq!(
        (change.seq, change.recorded, change.candidate),
        (6, Verdict::Deny, Verdict::Allow)
    );
    assert_eq!(change.subject, Some(Subject::Root("/srv".to_owned())));
}

#[test]
fn a_record_from_before_configured_roots_only_gains_roots() {
    let mut records = history(&recorded_inputs());
    for record in &mut records {
        record.request.task.configured_roots = None;
    }
    let narrowed = Candidate::new(OperatorInputs {
        allowed_dirs: Vec::new(),
        ..recorded_inputs()
    });
    assert_eq!(replay_under(&records, &[], &narrowed).changed, 0);
    let widened = Candidate::new(OperatorInputs {
        allowed_dirs: vec!["/srv".to_owned()],
        ..recorded_inputs()
    });
    let seqs: Vec<u64> = replay_under(&records, &[], &widened)
        .changes
        .iter()
        .map(|c| c.seq)
        .collect();
    assert_eq!(seqs, vec![6]);
}

#[test]
fn a_persons_grant_stays_in_force_under_the_candidate() {
    let inputs = recorded_inputs();
    let mut records = history(&inputs);
    let person =
        Grant::new(CapabilityName::RunProgram, Some("cargo"), Lifetime::Session).with_id("g1");
    for record in &mut records {
        record.request.grants.push(person.clone());
        record.decision = record.request.evaluate();
    }
    let candidate = Candidate::new(OperatorInputs {
        command_allowlist: Vec::new(),
        ..inputs
    });
    let seqs: Vec<u64> = replay_under(&records, &[], &candidate)
        .changes
        .iter()
        .map(|c| c.seq)
        .collect();
    // `cargo …` stays allowed by the person's grant; `git status` loses its entry.
    assert_eq!(seqs, vec![3]);
}

#[test]
fn groups_come_most_frequent_first_and_say_one_call_in_the_singular() {
    let change = |seq, tool: &str, subject: Subject| Change {
        seq,
        session_id: "s".to_owned(),
        tool: tool.to_owned(),
        subject: Some(subject),
        recorded: Verdict::Ask,
        recorded_code: Code::UnknownTool,
        candidate: Verdict::Deny,
        candidate_code: Code::UnknownTool,
        sentence: String::new(),
    };
    let groups = summarize(&[
        change(1, "read_file", Subject::Root("/a".to_owned())),
        change(2, "run_command", Subject::Program("make".to_owned())),
        change(3, "run_command", Subject::Program("make".to_owned())),
    ]);
    let lines: Vec<String> = groups.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        vec![
            "ask → deny: 2 run_command calls of make",
            "ask → deny: 1 read_file call under /a",
        ]
    );
    assert_eq!(groups[0].seqs, vec![2, 3]);
}

#[test]
fn the_shadow_lists_only_recorded_differences() {
    let mut records = history(&recorded_inputs());
    let mut shadowed = records[0].decision.clone();
    shadowed.verdict = Verdict::Ask;
    records[0].shadow = Some(ShadowDecision {
        config: "/etc/strict.toml".to_owned(),
        decision: shadowed,
    });
    let report = shadow_changes(&records, &[]);
    let lines: Vec<String> = report.groups.iter().map(ToString::to_string).collect();
    assert_eq!((report.decisions, report.changed), (7, 1));
    assert_eq!(lines, vec!["allow → ask: 1 run_command call of cargo"]);
}

#[test]
fn the_shadow_decides_a_live_call_with_the_sessions_grants_after_its_own() {
    let inputs = recorded_inputs();
    let live = record(1, "run_command", json!({"command": "cargo test"}), &inputs);
    let strict = Candidate::new(OperatorInputs {
        command_allowlist: Vec::new(),
        ..inputs
    });
    assert_eq!(
        decide_under(&live.request, &[], &strict).verdict,
        Verdict::Ask
    );
    let person = Grant::new(CapabilityName::RunProgram, Some("cargo"), Lifetime::Session);
    assert_eq!(
        decide_under(&live.request, &[person], &strict).verdict,
        Verdict::Allow
    );
}

/// The operator's hook the recorded decisions below were answered by.
fn guard() -> CandidateHook {
    CandidateHook {
        matcher: "read_file".to_owned(),
        command: vec!["/usr/local/bin/guard".to_owned()],
    }
}

/// `record`, answered by [`guard`] as `answer`, with `original` the model's own arguments when
/// the hook rewrote them.
fn hooked(
    args: Value,
    answer: codaris_policy::HookDecision,
    original: Option<Value>,
) -> DecisionRecord {
    let mut record = record(1, "read_file", args, &recorded_inputs());
    record.request.task.hook = Some(codaris_policy::HookOutcome {
        answers: vec![codaris_policy::HookAnswer {
            matcher: guard().matcher,
            command: guard().command,
            decision: answer,
            reason: "the guard says so".to_owned(),
            updated_input: original.is_some(),
        }],
        original_args: original,
        at_card: None,
    });
    record.decision = record.request.evaluate();
    record
}

/// A recorded hook answer stands where the candidate keeps its hook and is dropped where it
/// does not: a call the hook blocked is judged again without it, and a path the hook rewrote is
/// judged as the model sent it. No hook runs.
#[test]
fn recorded_hook_answers_stand_only_where_the_candidate_keeps_their_hook() {
    use codaris_policy::{HookDecision, Verdict};
    let keeps = Candidate::new(recorded_inputs());
    let drops = Candidate::new(OperatorInputs {
        hooks: Vec::new(),
        ..recorded_inputs()
    });
    let blocked = hooked(json!({"path": "/w/proj/main.nf"}), HookDecision::Deny, None);
    assert_eq!(blocked.decision.verdict, Verdict::Deny);
    assert_eq!(
        decide_under(&blocked.request, &[], &keeps).verdict,
        Verdict::Deny
    );
    assert_eq!(
        decide_under(&blocked.request, &[], &drops).verdict,
        Verdict::Allow
    );

    let rewritten = hooked(
        json!({"path": "/w/proj/copy.csv"}),
        HookDecision::None,
        Some(json!({"path": "/srv/x/b.csv"})),
    );
    assert_eq!(rewritten.decision.verdict, Verdict::Allow);
    assert_eq!(
        decide_under(&rewritten.request, &[], &keeps).verdict,
        Verdict::Allow
    );
    assert_ne!(
        decide_under(&rewritten.request, &[], &drops).verdict,
        Verdict::Allow,
        "judged on the model's own path, outside the fence"
    );
    let changes = replay_under(&[blocked, rewritten], &[], &drops);
    assert_eq!(changes.changes.len(), 2, "{changes:?}");
}
