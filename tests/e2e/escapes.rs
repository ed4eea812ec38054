//! The CLI never writes a control character it did not produce (issue 38, item 9): a file name,
//! a server name or an error quoting one, with terminal escapes in it, reaches stdout and
//! stderr as visible text (`\u{1b}`), never as the raw byte a terminal would obey.

use std::process::Output;

use codaris_test_support::sandbox::{Sandbox, stderr, stdout};

/// An OSC sequence that retitles the terminal, a CSI that clears it, and a C1 CSI.
const EVIL: &str = "x\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31m";

/// Neither stream holds ESC, BEL or a C1 control; what the name said is still shown.
fn no_raw_controls(output: &Output, what: &str) {
    for (stream, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "{what}: a raw control character reached {stream}: {text:?}"
        );
    }
    let both = format!("{}{}", stdout(output), stderr(output));
    assert!(both.contains("\\u{1b}]0;owned"), "{what}: {both:?}");
}

#[test]
fn config_check_shows_a_file_names_escapes_as_text() {
    let sandbox = Sandbox::new();
    let bad = sandbox.root.path().join(format!("{EVIL}.toml"));
    std::fs::write(&bad, "[tools]\nlean_surface = \"yes\"\n").unwrap();
    let output = sandbox.cli(&["config", "check", bad.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    no_raw_controls(&output, "config check of a bad file");

    let missing = sandbox.root.path().join(format!("missing{EVIL}.toml"));
    let output = sandbox.cli(&["config", "check", missing.to_str().unwrap()]);
    assert!(!output.status.success());
    no_raw_controls(&output, "config check of a missing file");

    let good = sandbox.root.path().join(format!("good{EVIL}.toml"));
    std::fs::write(&good, "").unwrap();
    let output = sandbox.cli(&["config", "check", "--json", good.to_str().unwrap()]);
    for (stream, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        assert!(
            !bytes.contains(&0x1b),
            "{stream}: {:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn audit_replay_from_shows_a_file_names_escapes_as_text() {
    let sandbox = Sandbox::new();
    let missing = sandbox.root.path().join(format!("gone{EVIL}.jsonl"));
    let output = sandbox.cli(&["audit", "replay", "--from", missing.to_str().unwrap()]);
    assert!(!output.status.success());
    no_raw_controls(&output, "replay of a missing export");

    // An export that reads: the report's first line names the file.
    let export = sandbox.root.path().join(format!("export{EVIL}.jsonl"));
    std::fs::write(
        &export,
        "{\"type\":\"header\",\"format\":\"codaris-ledger-export\",\"schema\":2,\"policy_version\":\"1\"}\n",
    )
    .unwrap();
    let output = sandbox.cli(&["audit", "replay", "--from", export.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    no_raw_controls(&output, "replay of an export");
}

#[test]
fn an_mcp_server_name_or_command_line_with_escapes_is_shown_as_text() {
    let sandbox = Sandbox::new();
    let _daemon = sandbox.start_daemon(&[]);
    let name = format!("srv{EVIL}");
    // Refused or added, whatever the CLI says about the name shows its escapes as text.
    let added = sandbox.cli(&["mcp", "add", &name, "--", "true"]);
    no_raw_controls(&added, "mcp add");
    let listed = sandbox.cli(&["mcp", "list"]);
    for (stream, bytes) in [("stdout", &listed.stdout), ("stderr", &listed.stderr)] {
        assert!(
            !bytes.contains(&0x1b),
            "{stream}: {:?}",
            String::from_utf8_lossy(bytes)
        );
    }
    for command in ["disable", "tools", "remove"] {
        let output = sandbox.cli(&["mcp", command, &name]);
        no_raw_controls(&output, command);
    }

    // A server whose command line carries the escapes: the CLI echoes it when added, and the
    // server's failure is listed.
    let script = format!("echo '{EVIL}' >&2; exit 1");
    let added = sandbox.cli(&["mcp", "add", "bad", "--", "sh", "-c", &script]);
    assert!(added.status.success(), "{}", stderr(&added));
    no_raw_controls(&added, "mcp add of an escaping command line");
    for args in [
        &["mcp", "list"][..],
        &["mcp", "list", "--json"],
        &["mcp", "tools", "bad"],
    ] {
        let output = sandbox.cli(args);
        for (stream, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
            assert!(
                !bytes.contains(&0x1b),
                "{args:?} {stream}: {:?}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
}
