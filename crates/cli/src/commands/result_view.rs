//! A tool call's result as people read it in `codaris run` and `codaris chat` (text mode): what
//! the call did, without the policy's decision code when it was allowed (`--verbose` shows it),
//! and for a command its exit status with its last lines of output folded under it. A refusal
//! keeps its code: it names what would be needed. `--json` carries the whole result as it is.

use codaris_proto::v1;

/// The tool whose result is a command's status and output (crates/tools/src/shell/run.rs):
/// `exit code: N` (or `status: …`), notes, then `stdout:` and `stderr:` sections.
pub const COMMAND_TOOL: &str = "run_command";

/// The most output lines shown under a command's result; the ones above are counted.
pub const FOLDED_LINES: usize = 6;

/// The most characters of one output line shown; a longer one ends in `…`.
const LINE_CHARS: usize = 200;

/// The lines a person sees for `result` (the first the call's outcome, then a command's output
/// folded), without a final newline. `verdict` and `code` are the decision's, shown on a
/// successful call only when `verbose`.
pub fn result_text(result: &v1::ToolResult, verdict: &str, code: &str, verbose: bool) -> String {
    let first = result.output.lines().next().unwrap_or("");
    // Tools start their errors with their own name, which the line already shows.
    let said = first
        .strip_prefix(result.tool.as_str())
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(first);
    // A refusal or an error is shown as what it is, not as the decision that let the call run.
    if result.failed && verdict == "deny" {
        return format!("  ✗ {} refused ({code}): {first}", result.tool);
    }
    if result.failed {
        return format!("  ✗ {}: {said}", result.tool);
    }
    let command = result.tool == COMMAND_TOOL;
    let mut out = if verbose {
        format!("  {verdict} {code}: {first}")
    } else if command {
        command_line(first)
    } else if said.is_empty() {
        format!("  ✓ {}", result.tool)
    } else {
        format!("  ✓ {}: {said}", result.tool)
    };
    if command {
        out.push_str(&fold(&result.output));
    }
    out
}

/// `✓ run_command: exit code 0`; a command that failed (`exit code: 2`, `status: killed by
/// signal 9`) is marked `✗`: what it printed says why.
fn command_line(first: &str) -> String {
    if let Some(code) = first.strip_prefix("exit code: ") {
        let mark = if code.trim() == "0" { '✓' } else { '✗' };
        format!("  {mark} {COMMAND_TOOL}: exit code {code}")
    } else if let Some(status) = first.strip_prefix("status: ") {
        format!("  ✗ {COMMAND_TOOL}: {status}")
    } else {
        format!("  ✓ {COMMAND_TOOL}: {first}")
    }
}

/// The output below a command result's first line, as indented lines each after a newline:
/// the last [`FOLDED_LINES`] of it, under `… N more lines` when there were more. The section
/// headers the model reads (`stdout:`, `output so far:`) and `(no output)` are left out;
/// `stderr:` stays, saying which lines are errors.
fn fold(output: &str) -> String {
    let mut lines: Vec<&str> = output
        .lines()
        .skip(1)
        .filter(|l| !matches!(*l, "stdout:" | "output so far:" | "(no output)"))
        .collect();
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let hidden = lines.len().saturating_sub(FOLDED_LINES);
    let mut out = String::new();
    if hidden > 0 {
        let s = if hidden == 1 { "" } else { "s" };
        out.push_str(&format!("\n    … {hidden} more line{s}"));
    }
    for line in &lines[hidden..] {
        out.push_str("\n    ");
        if line.chars().count() > LINE_CHARS {
            out.extend(line.chars().take(LINE_CHARS));
            out.push('…');
        } else {
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn result(tool: &str, failed: bool, output: &str) -> v1::ToolResult {
        v1::ToolResult {
            id: "c1".to_owned(),
            tool: tool.to_owned(),
            decision: None,
            output: output.to_owned(),
            failed,
        }
    }

    #[test]
    fn a_successful_call_says_what_it_did_without_its_code_unless_verbose() {
        let edit = result("edit", false, "edited `a` (1 line changed)\nmore");
        assert_eq!(
            result_text(&edit, "allow", "allowed_by_grant", false),
            "  ✓ edit: edited `a` (1 line changed)"
        );
        assert_eq!(
            result_text(&edit, "allow", "allowed_by_grant", true),
            "  allow allowed_by_grant: edited `a` (1 line changed)"
        );
        assert_eq!(
            result_text(&result("mkdir", false, ""), "allow", "x", false),
            "  ✓ mkdir"
        );
    }

    #[test]
    fn a_refusal_keeps_its_code_and_an_error_reads_as_one() {
        let refused = result("edit", true, "the user refused this call");
        assert_eq!(
            result_text(&refused, "deny", "denied_by_user", false),
            "  ✗ edit refused (denied_by_user): the user refused this call"
        );
        let failed = result("edit", true, "edit: `oldString` is required\nmore");
        assert_eq!(
            result_text(&failed, "allow", "allowed_by_mode", false),
            "  ✗ edit: `oldString` is required"
        );
    }

    #[test]
    fn a_command_shows_its_exit_status_and_its_last_lines_folded() {
        let body: String = (1..=10).map(|n| format!("line {n}\n")).collect();
        let output = format!("exit code: 0\nstdout:\n{body}stderr:\nwarning: old\n");
        let shown = result_text(
            &result(COMMAND_TOOL, false, &output),
            "allow",
            "allowed_by_grant",
            false,
        );
        assert_eq!(
            shown,
            "  ✓ run_command: exit code 0\n    … 6 more lines\n    line 7\n    line 8\n    line 9\n    line 10\n    stderr:\n    warning: old"
        );
        assert!(!shown.contains("allowed_by_grant"));
        let failed = result(COMMAND_TOOL, false, "exit code: 2\nstderr:\nno such file\n");
        assert_eq!(
            result_text(&failed, "allow", "allowed_by_grant", false),
            "  ✗ run_command: exit code 2\n    stderr:\n    no such file"
        );
        let quiet = result(COMMAND_TOOL, false, "exit code: 0\n(no output)\n");
        assert_eq!(
            result_text(&quiet, "allow", "c", false),
            "  ✓ run_command: exit code 0"
        );
        let verbose = result_text(
            &result(COMMAND_TOOL, false, "exit code: 0\nstdout:\ndone\n"),
            "allow",
            "allowed_by_grant",
            true,
        );
        assert_eq!(verbose, "  allow allowed_by_grant: exit code: 0\n    done");
    }

    #[test]
    fn a_long_output_line_is_cut() {
        let long = "x".repeat(LINE_CHARS + 50);
        let shown = fold(&format!("exit code: 0\nstdout:\n{long}\n"));
        assert_eq!(shown, format!("\n    {}…", "x".repeat(LINE_CHARS)));
    }
}
