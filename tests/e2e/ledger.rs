//! The ledger through the real daemon and CLI: list, revoke, export, and replay the export
//! offline with the policy linked into `codaris`.

use codaris_ledger::{CardAnswer, CardRecord, DecisionRecord, Ledger};
use codaris_policy::{Activity, Capability, CapabilityName, Grant, Lifetime, Request, Task};
use codaris_test_support::sandbox::{Sandbox, json, stderr, stdout};
use pretty_assertions::assert_eq;
use serde_json::json as j;

/// Records a card, then its answer with the grant it gave (backed by the card), as the
/// daemon's card answer records them.
fn answered(ledger: &Ledger, card: &str, grant: Grant, answer: CardAnswer, at_ms: u64) -> String {
    ledger
        .append_card(&CardRecord::asked(
            card.to_owned(),
            "s000001".to_owned(),
            Some(Capability::new(grant.capability, grant.path.clone())),
            "a card".to_owned(),
            Vec::new(),
            at_ms,
        ))
        .unwrap();
    let mut recorded = ledger
        .answer_card(card, answer, vec![grant], at_ms)
        .unwrap()
        .unwrap();
    recorded.remove(0).id
}

/// Writes grants and decisions as a daemon's dispatcher would, before the daemon starts.
fn seed(sandbox: &Sandbox) -> (String, String) {
    std::fs::create_dir_all(sandbox.state_dir()).unwrap();
    let ledger = Ledger::open(&sandbox.state_dir().join("ledger")).unwrap();
    let session = answered(
        &ledger,
        "c1",
        Grant::new(
            CapabilityName::MutateOutsideFence,
            Some("/tmp/out"),
            Lifetime::Session,
        ),
        CardAnswer::AllowSession,
        1_700_000_000_000,
    );
    let refusal = answered(
        &ledger,
        "c2",
        Grant::new(
            CapabilityName::ReadOutsideFence,
            Some("/etc"),
            Lifetime::Deny,
        ),
        CardAnswer::Deny,
        1_700_000_000_500,
    );
    let mut review = Task::new("/w/proj");
    review.activity = Activity::Review;
    for (tool, args, task) in [
        ("read_file", j!({"path": "main.nf"}), Task::new("/w/proj")),
        ("write", j!({"path": "notes.md", "content": "x"}), review),
        (
            "write",
            j!({"path": "/tmp/out/report.txt", "content": "x"}),
            Task::new("/w/proj"),
        ),
    ] {
        let request = Request {
            tool: codaris_policy::ToolId::parse(tool),
            args,
            task,
            grants: ledger.grant_view("s000001").unwrap().grants,
            spec: None,
        };
        let decision = request.evaluate();
        ledger
            .append_decision(DecisionRecord::new(
                "s000001",
                request,
                decision,
                1_700_000_001_000,
            ))
            .unwrap();
    }
    (session, refusal)
}

#[test]
fn list_revoke_export_and_replay() {
    let sandbox = Sandbox::new();
    let (session_grant, refusal) = seed(&sandbox);
    let daemon = sandbox.start_daemon(&[]);

    let output = sandbox.cli(&["ledger", "grants", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let grants: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(grants.len(), 2);
    assert_eq!(grants[0]["id"], session_grant.as_str());
    assert_eq!(grants[0]["capability"], "mutate_outside_fence");
    assert_eq!(grants[0]["path"], "/tmp/out");
    assert_eq!(grants[0]["lifetime"], "session");
    assert_eq!(grants[1]["lifetime"], "deny");

    let output = sandbox.cli(&["ledger", "decisions"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("write: allow allowed_by_grant"),
        "{text}"
    );
    assert!(text.contains("write: deny read_only_activity"), "{text}");

    let output = sandbox.cli(&["ledger", "revoke", &refusal]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).starts_with(&format!("revoked {refusal}")));
    let output = sandbox.cli(&["ledger", "grants", "--json"]);
    assert_eq!(
        stdout(&output).lines().count(),
        1,
        "a revoked grant is no longer in force"
    );
    let output = sandbox.cli(&["ledger", "revoke", "g404"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("no grant `g404`"),
        "{}",
        stderr(&output)
    );

    let export = sandbox.root.path().join("export.jsonl");
    let output = sandbox.cli(&["ledger", "export", "-o", export.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&export)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "header");
    assert_eq!(lines.iter().filter(|l| l["type"] == "grant").count(), 2);
    assert_eq!(lines.iter().filter(|l| l["type"] == "decision").count(), 3);

    // Offline replay of the export while the daemon still runs.
    let output = sandbox.cli(&["audit", "replay", "--from", export.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    assert!(
        stdout(&output).contains("3 matched, 0 differ"),
        "{}",
        stdout(&output)
    );

    // The state directory's ledger is the daemon's while it runs; after a stop it replays too.
    let output = sandbox.cli(&["audit", "replay"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("in use by a running codarisd"),
        "{}",
        stderr(&output)
    );
    assert!(sandbox.cli(&["daemon", "stop"]).status.success());
    daemon.wait(std::time::Duration::from_secs(10));
    let output = sandbox.cli(&["audit", "replay", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report = json(&output);
    assert_eq!(report["decisions"], 3);
    assert_eq!(report["matched"], 3);
}

/// Issue 11's forged grant through the real binaries: with the daemon stopped, one line
/// appended to `<state>/ledger.journal` grants the session `/`. The restarted daemon reads it
/// (the journal is what the ledger recovers from) but holds it in force nowhere, since no
/// answered card backs it; `codaris audit replay`, from the ledger and from an export alike,
/// reports it unbacked and off the chain and exits 1.
#[test]
fn a_grant_forged_into_the_journal_is_flagged_by_audit_replay() {
    let sandbox = Sandbox::new();
    seed(&sandbox);
    sandbox.replay_clean();

    let forged = "g000000999999";
    let line = j!({"type": "grant", "schema": 1, "id": forged, "session_id": "s000001",
        "grant": {"capability": "mutate_outside_fence", "path": "/", "lifetime": "session",
                  "id": forged},
        "granted_at_ms": 1_700_000_002_000u64, "card_id": null,
        "consumed_at_ms": null, "revoked_at_ms": null});
    let journal = sandbox.state_dir().join("ledger.journal");
    let mut text = std::fs::read_to_string(&journal).unwrap_or_default();
    text.push_str(&format!("{line}\n"));
    std::fs::write(&journal, text).unwrap();

    let daemon = sandbox.start_daemon(&[]);
    // The daemon reads the forged grant, but nothing backs it: it is not in force.
    let output = sandbox.cli(&["ledger", "grants", "--all", "--json"]);
    assert!(stdout(&output).contains(forged), "{}", stdout(&output));
    let output = sandbox.cli(&["ledger", "grants", "--json"]);
    assert!(
        !stdout(&output).contains(forged),
        "a forged grant is listed in force: {}",
        stdout(&output)
    );
    let export = sandbox.root.path().join("export.jsonl");
    let output = sandbox.cli(&["ledger", "export", "-o", export.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let output = sandbox.cli(&["audit", "replay", "--from", export.to_str().unwrap()]);
    assert_flagged(&output, forged);
    assert!(sandbox.cli(&["daemon", "stop"]).status.success());
    daemon.wait(std::time::Duration::from_secs(10));

    let output = sandbox.cli(&["audit", "replay"]);
    assert_flagged(&output, forged);
    let output = sandbox.cli(&["audit", "replay", "--json"]);
    assert_eq!(output.status.code(), Some(1));
    let report = json(&output);
    assert_eq!(
        report["differences"],
        j!([]),
        "the policy itself replays the same"
    );
    assert_eq!(report["unbacked_grants"][0]["grant_id"], forged);
    assert_eq!(report["unbacked_grants"][0]["problem"], "no_backing");
    assert_eq!(report["chain_findings"][0]["key"], forged);
    assert_eq!(report["chain_findings"][0]["problem"], "unlinked");
}

/// One `unbacked:` and one `chain:` line name the forged grant, and the exit code is 1.
fn assert_flagged(output: &std::process::Output, forged: &str) {
    let text = stdout(output);
    assert_eq!(output.status.code(), Some(1), "{text}{}", stderr(output));
    let unbacked: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("unbacked: "))
        .collect();
    let chain: Vec<&str> = text.lines().filter(|l| l.starts_with("chain: ")).collect();
    assert_eq!(unbacked.len(), 1, "{text}");
    assert_eq!(chain.len(), 1, "{text}");
    assert!(
        unbacked[0].contains(forged) && chain[0].contains(forged),
        "{text}"
    );
}

/// Cuts the last `n` records off a ledger's decisions or chain file (each framed by its length,
/// `u32` little-endian, before and after it), as someone with the state directory could.
fn cut_last(path: &std::path::Path, n: usize) {
    let bytes = std::fs::read(path).unwrap();
    let mut end = bytes.len();
    for _ in 0..n {
        let len = u32::from_le_bytes(bytes[end - 4..end].try_into().unwrap()) as usize;
        end -= len + 8;
    }
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.set_len(end as u64).unwrap();
}

/// A daemon that recorded a few decisions and stopped, publishing the chain's head in the
/// configuration directory (the sandbox's root, beside `config.toml`).
fn stopped_after_five_reads() -> Sandbox {
    let sandbox = Sandbox::new();
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("a.txt"), "a").unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    let reads: Vec<(&str, serde_json::Value)> = (0..5)
        .map(|_| ("read_file", j!({"path": "a.txt"})))
        .collect();
    let run = sandbox.run_script(
        &proj,
        &codaris_test_support::sandbox::calls_script(&reads),
        &[],
        "read",
    );
    assert!(run.status.success(), "{}", stderr(&run));
    sandbox.stop_daemon();
    let key = sandbox.root.path().join(codaris_ledger::KEY_FILE);
    assert_eq!(Sandbox::mode(&key) & 0o777, 0o600);
    assert!(sandbox.root.path().join(codaris_ledger::HEAD_FILE).exists());
    let verified = sandbox.cli(&["audit", "verify"]);
    assert!(
        verified.status.success(),
        "{}{}",
        stdout(&verified),
        stderr(&verified)
    );
    sandbox
}

fn beside_ledger(sandbox: &Sandbox, suffix: &str) -> std::path::PathBuf {
    sandbox.state_dir().join(format!("ledger{suffix}"))
}

#[test]
fn a_tail_cut_off_the_chain_and_decisions_is_named_by_audit_verify() {
    let sandbox = stopped_after_five_reads();
    let head: serde_json::Value = serde_json::from_slice(
        &std::fs::read(sandbox.root.path().join(codaris_ledger::HEAD_FILE)).unwrap(),
    )
    .unwrap();
    let last = head["seq"].as_u64().unwrap();
    cut_last(&beside_ledger(&sandbox, ".decisions"), 2);
    cut_last(&beside_ledger(&sandbox, ".chain"), 2);

    let verified = sandbox.cli(&["audit", "verify"]);
    assert_eq!(verified.status.code(), Some(1), "{}", stderr(&verified));
    let expected = format!(
        "links {} to {last} are missing from the chain's end",
        last - 1
    );
    assert!(
        stdout(&verified).contains(&expected),
        "{}",
        stdout(&verified)
    );
    // `audit replay` of the directory says the same.
    let replayed = sandbox.cli(&["audit", "replay", "--json"]);
    assert_eq!(replayed.status.code(), Some(1));
    let report = json(&replayed);
    assert!(
        report["chain_findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["problem"] == "truncated"),
        "{report}"
    );
}

#[test]
fn a_chain_rewritten_without_the_key_is_caught_and_so_is_a_head_forged_for_it() {
    let sandbox = stopped_after_five_reads();
    // The forger replaces the last two decisions with others, and has a copy of codaris
    // extend the chain for them: every link well-formed, the chain whole, no key involved.
    cut_last(&beside_ledger(&sandbox, ".decisions"), 2);
    cut_last(&beside_ledger(&sandbox, ".chain"), 2);
    {
        let ledger = Ledger::open(&sandbox.state_dir().join("ledger")).unwrap();
        for n in 0..2 {
            let request = Request {
                tool: codaris_policy::ToolId::parse("read_file"),
                args: j!({"path": format!("other{n}.txt")}),
                task: Task::new(sandbox.root.path().join("proj").to_str().unwrap()),
                grants: Vec::new(),
                spec: None,
            };
            let decision = request.evaluate();
            ledger
                .append_decision(DecisionRecord::new("s000001", request, decision, 1))
                .unwrap();
        }
        ledger.fold_journal().unwrap();
    }
    // Without the published head the chain verifies: that is the hole.
    let verified = sandbox.cli(&["audit", "verify", "--json"]);
    let report = json(&verified);
    assert_eq!(verified.status.code(), Some(1), "{report}");
    let findings = report["chain_findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{report}");
    assert_eq!(findings[0]["problem"], "head_mismatch", "{report}");

    // A head written to match the forged chain, without the key, does not verify either.
    let chain = codaris_ledger::read_chain_file(&beside_ledger(&sandbox, ".chain")).unwrap();
    let last = chain.last().unwrap().as_ref().unwrap().decode().unwrap();
    std::fs::write(
        sandbox.root.path().join(codaris_ledger::HEAD_FILE),
        j!({"format": "codaris-chain-head-1", "seq": last.seq, "hash": last.hash,
            "mac": "00".repeat(32)})
        .to_string(),
    )
    .unwrap();
    let verified = sandbox.cli(&["audit", "verify"]);
    assert_eq!(verified.status.code(), Some(1));
    assert!(
        stdout(&verified).contains("does not verify with the ledger's key"),
        "{}",
        stdout(&verified)
    );
}

#[test]
fn no_tool_or_command_reads_or_rewrites_the_chain_key_or_head() {
    // The configuration kept inside the project, so the key lies under the session's root.
    let sandbox = Sandbox::new();
    let proj = sandbox.root.path().join("proj");
    let config_dir = proj.join("cfg");
    std::fs::create_dir_all(&config_dir).unwrap();
    let config = config_dir.join("config.toml");
    std::fs::write(&config, "").unwrap();
    let daemon = sandbox.start_daemon_in(
        sandbox.root.path(),
        &[("CODARIS_CONFIG", config.to_str().unwrap())],
        &[],
    );
    let key_path = config_dir.join(codaris_ledger::KEY_FILE);
    let head_path = config_dir.join(codaris_ledger::HEAD_FILE);
    let key = std::fs::read_to_string(&key_path).unwrap();
    let head = std::fs::read_to_string(&head_path).unwrap();
    let script = codaris_test_support::sandbox::calls_script(&[
        ("read_file", j!({"path": "cfg/ledger.key"})),
        (
            "run_command",
            j!({"command": "cat cfg/ledger.key; echo forged > cfg/ledger.head"}),
        ),
    ]);
    let run = sandbox.run_script(&proj, &script, &["--approve", "session"], "steal the key");
    assert!(!stdout(&run).contains(key.trim()), "{}", stdout(&run));
    assert_eq!(std::fs::read_to_string(&key_path).unwrap(), key);
    assert_eq!(std::fs::read_to_string(&head_path).unwrap(), head);
    drop(daemon);
}
