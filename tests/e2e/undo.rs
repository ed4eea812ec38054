//! `codaris undo` and chat's `/undo` through the real binaries: a turn of the scripted model
//! that edited, created, moved and deleted files is put back byte for byte (modes too), a
//! dry run only shows the diff, a file changed since refuses the undo, a turn under a later
//! one's changes is refused until the later one is undone, and `codaris audit` replays each
//! undo recorded in the ledger.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Output;

use codaris_test_support::sandbox::{Sandbox, calls_script, json, stderr, stdout};
use serde_json::json as j;

/// Every path beneath `root` with its kind, mode and bytes.
fn tree(root: &Path) -> BTreeMap<PathBuf, (char, u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.is_dir() {
                out.insert(rel, ('d', mode, Vec::new()));
                stack.push(path);
            } else {
                out.insert(rel, ('f', mode, std::fs::read(&path).unwrap()));
            }
        }
    }
    out
}

fn project(sandbox: &Sandbox) -> PathBuf {
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(proj.join("modules/old")).unwrap();
    std::fs::write(proj.join("main.nf"), "workflow {\n  FASTQC()\n}\n").unwrap();
    std::fs::write(proj.join("run.sh"), "#!/bin/sh\nnextflow run .\n").unwrap();
    std::fs::set_permissions(proj.join("run.sh"), std::fs::Permissions::from_mode(0o754)).unwrap();
    std::fs::write(proj.join("modules/old/main.nf"), "process OLD {}\n").unwrap();
    std::fs::write(proj.join("obsolete.config"), "params.x = 1\n").unwrap();
    proj.canonicalize().unwrap()
}

/// `codaris ARGS` run in `dir`, so the default session is the one that ran there.
fn cli_in(sandbox: &Sandbox, dir: &Path, args: &[&str]) -> Output {
    sandbox
        .command("codaris")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// The turn of every kind of change, and a command whose own effects an undo leaves alone.
fn every_change() -> Vec<(&'static str, serde_json::Value)> {
    vec![
        (
            "edit",
            j!({"path": "main.nf", "oldString": "FASTQC()", "newString": "MULTIQC()"}),
        ),
        (
            "write",
            j!({"path": "run.sh", "content": "#!/bin/sh\nrm -rf work\n"}),
        ),
        (
            "write",
            j!({"path": "conf/new/base.config", "content": "process.cpus = 2\n"}),
        ),
        ("mv", j!({"src": "modules/old", "dst": "modules/renamed"})),
        ("rm", j!({"path": "obsolete.config"})),
        ("run_command", j!({"command": "echo built"})),
    ]
}

#[test]
fn undo_puts_back_a_turn_that_edited_created_moved_and_deleted_files() {
    let sandbox = Sandbox::new();
    // `mv` and `rm` called at once, without a search binding them first.
    sandbox.write_config("[tools]\nlean_surface = false\n");
    let proj = project(&sandbox);
    let before = tree(&proj);
    let _daemon = sandbox.start_daemon(&[]);
    let run = sandbox.run_script(
        &proj,
        &calls_script(&every_change()),
        &["--permission-mode", "accept-edits", "--approve", "session"],
        "change it all",
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let after = tree(&proj);
    assert_ne!(after, before);
    assert!(
        proj.join("modules/renamed/main.nf").exists() && !proj.join("obsolete.config").exists(),
        "{}",
        stdout(&run)
    );

    // A dry run shows the diff, as a card does, and changes nothing.
    let dry = cli_in(&sandbox, &proj, &["undo", "--dry-run"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    let shown = stdout(&dry);
    assert!(shown.contains("(dry run: nothing changed)"), "{shown}");
    assert!(
        shown.contains("-  MULTIQC()") && shown.contains("+  FASTQC()"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "would recreate {}",
            proj.join("obsolete.config").display()
        )),
        "{shown}"
    );
    assert!(
        shown.contains("turn 1 also ran `echo built`; what it changed is not undone"),
        "{shown}"
    );
    assert_eq!(tree(&proj), after, "the dry run changed the project");

    // The undo itself, on the ended session of that run, picked by its directory.
    let undone = cli_in(&sandbox, &proj, &["undo", "--json"]);
    assert!(undone.status.success(), "{}", stderr(&undone));
    let answer = json(&undone);
    assert_eq!(answer["turn"], 0);
    assert_eq!(answer["turn_for_people"], 1);
    assert!(
        answer["record_id"].as_str().unwrap().starts_with('u'),
        "{answer}"
    );
    assert_eq!(answer["commands"], j!(["`echo built`"]));
    assert_eq!(
        tree(&proj),
        before,
        "the tree is not as it was before the turn"
    );

    // Twice is refused, and changes nothing.
    let again = cli_in(&sandbox, &proj, &["undo", "--turn", "1"]);
    assert_eq!(again.status.code(), Some(1), "{}", stdout(&again));
    assert!(
        stderr(&again).contains("turn 1 was already undone"),
        "{}",
        stderr(&again)
    );
    assert_eq!(tree(&proj), before);

    // Both undos are in the ledger, as decisions of their own, and replay.
    sandbox.stop_daemon();
    let replay = sandbox.cli(&["audit", "replay", "--json"]);
    assert!(
        replay.status.success(),
        "{}{}",
        stdout(&replay),
        stderr(&replay)
    );
    let report = json(&replay);
    assert_eq!(report["undos"], 2, "{report}");
    assert_eq!(report["undo_findings"], j!([]), "{report}");
    let text = sandbox.replay_clean();
    assert!(
        stdout(&text).contains("replayed 2 undos: 2 matched, 0 findings"),
        "{}",
        stdout(&text)
    );
}

#[test]
fn undo_is_refused_naming_a_file_changed_since_and_a_later_turn_comes_first() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    let before = tree(&proj);
    let _daemon = sandbox.start_daemon(&[]);
    // Two turns of one session change the same file.
    let turn = |to: &str| {
        j!({"rounds": [
            {"tool_calls": [{"name": "write", "args": {"path": "main.nf", "content": to}}]},
            {"text": "done"}
        ]})
    };
    let script = j!({"turns": [turn("first\n"), turn("second\n")]});
    let args = sandbox.run_args(&proj, &script, &["--approve", "session"], "one");
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.push("two");
    let run = sandbox.command("codaris").args(&args).output().unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(
        std::fs::read_to_string(proj.join("main.nf")).unwrap(),
        "second\n"
    );

    // Turn 1 lies under turn 2's change of the same file: refused, naming it.
    let under = cli_in(&sandbox, &proj, &["undo", "--turn", "1"]);
    assert_eq!(under.status.code(), Some(1));
    let main = proj.join("main.nf").display().to_string();
    assert!(
        stderr(&under).contains(&format!("`{main}` changed since turn 1 left it")),
        "{}",
        stderr(&under)
    );
    assert_eq!(
        std::fs::read_to_string(proj.join("main.nf")).unwrap(),
        "second\n"
    );

    // The person edits the file after the turn: the undo of turn 2 is refused too.
    std::fs::write(proj.join("main.nf"), "mine\n").unwrap();
    let changed = cli_in(&sandbox, &proj, &["undo", "--json"]);
    assert_eq!(changed.status.code(), Some(1));
    let refusal = json(&changed);
    assert_eq!(refusal["refused"], true);
    assert!(
        refusal["sentence"]
            .as_str()
            .unwrap()
            .contains("changed since turn 2"),
        "{refusal}"
    );
    assert_eq!(
        std::fs::read_to_string(proj.join("main.nf")).unwrap(),
        "mine\n"
    );

    // Put back as turn 2 left it, undo walks back: turn 2, then turn 1.
    std::fs::write(proj.join("main.nf"), "second\n").unwrap();
    for expected in ["first\n", "workflow {\n  FASTQC()\n}\n"] {
        let undone = cli_in(&sandbox, &proj, &["undo"]);
        assert!(undone.status.success(), "{}", stderr(&undone));
        assert_eq!(
            std::fs::read_to_string(proj.join("main.nf")).unwrap(),
            expected
        );
    }
    assert_eq!(tree(&proj), before);
    let none = cli_in(&sandbox, &proj, &["undo"]);
    assert_eq!(none.status.code(), Some(1));
    assert!(
        stderr(&none).contains("has no turn left to undo"),
        "{}",
        stderr(&none)
    );
    sandbox.stop_daemon();
    let replay = json(&sandbox.cli(&["audit", "replay", "--json"]));
    // Two refused and two done; the "nothing left" answer made no decision.
    assert_eq!(replay["undos"], 4, "{replay}");
    assert_eq!(replay["undo_findings"], j!([]), "{replay}");
}

#[test]
fn chat_undo_puts_back_the_last_turn() {
    let sandbox = Sandbox::new();
    let proj = project(&sandbox);
    let before = tree(&proj);
    let _daemon = sandbox.start_daemon(&[]);
    let script = calls_script(&[
        ("write", j!({"path": "notes/new.md", "content": "new\n"})),
        (
            "edit",
            j!({"path": "main.nf", "oldString": "FASTQC()", "newString": "X()"}),
        ),
    ]);
    let path = sandbox.root.path().join("chat.json");
    std::fs::write(&path, script.to_string()).unwrap();
    let mut chat = sandbox
        .command("codaris")
        .args(["chat", "--permission-mode", "accept_edits", "--script"])
        .arg(&path)
        .arg("--cwd")
        .arg(&proj)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    chat.stdin
        .take()
        .unwrap()
        .write_all(b"change things\n/undo --dry-run\n/undo\n/undo\n")
        .unwrap();
    let output = chat.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("would remove"), "{text}");
    assert!(text.contains("turn 1 undone: "), "{text}");
    // The second `/undo` finds nothing left, says so, and the chat goes on to its end.
    assert!(
        stderr(&output).contains("has no turn left to undo")
            || text.contains("has no turn left to undo"),
        "{text}{}",
        stderr(&output)
    );
    assert_eq!(tree(&proj), before);
}
