//! What the daemon adds to a launch on Seqera Platform (`seqera__launch_pipeline`) before its
//! decision: which of its local samplesheets have a gate that holds (the policy's
//! `task.gated_sheets`; the policy itself reads no file), and the digest of the body the
//! built-in server will send, recorded with the decision.

use codaris_ledger::Ledger;
use codaris_policy::{SheetPlace, Task, ToolId, launch_samplesheets};
use codaris_tools::nextflow::{GateStore, gate_holds};
use serde_json::Value;

use super::builtin::{LAUNCH_PIPELINE, SEQERA};
use crate::calls::gates::LedgerGates;

/// Whether `tool` is the built-in server's launch.
pub fn is_launch(tool: &ToolId) -> bool {
    matches!(tool, ToolId::Mcp(t) if t.server() == SEQERA && t.tool() == LAUNCH_PIPELINE)
}

/// The SHA-256 of the body the launch `args` describe, for a launch; `None` for anything else
/// (or arguments the server would refuse, which send nothing).
pub fn body_sha256(tool: &ToolId, args: &Value) -> Option<String> {
    is_launch(tool)
        .then(|| codaris_seqera::launch::launch_body_sha256(args))
        .flatten()
}

/// Why the daemon could not resolve a launch's lookups (its `launchpad_id` or `params_file`),
/// when it could not: no card is worth showing for such a call (the server refuses it).
pub fn unresolved_reason<'a>(tool: &ToolId, args: &'a Value) -> Option<&'a str> {
    if !is_launch(tool) {
        return None;
    }
    args.get(codaris_seqera::launch_resolve::UNRESOLVED)?
        .as_str()
}

/// Puts in `task.gated_sheets` each local samplesheet of a launch whose gate still holds, for
/// any local pipeline it passed for (the launched pipeline is a repository, not a directory
/// here). A ledger that cannot be read vouches for nothing: the sheet is then refused.
pub fn note_gated_sheets(ledger: &Ledger, tool: &ToolId, args: &Value, task: &mut Task) {
    if !is_launch(tool) {
        return;
    }
    let local: Vec<String> = launch_samplesheets(args, &task.cwd)
        .into_iter()
        .filter_map(|sheet| match sheet.place {
            SheetPlace::Local(path) => Some(path),
            SheetPlace::Remote(_) | SheetPlace::Ungateable(_) => None,
        })
        .collect();
    if local.is_empty() {
        return;
    }
    let Ok(gates) = ledger.gates() else { return };
    let Ok(keys) = gates.keys() else { return };
    let store = LedgerGates(gates);
    for path in local {
        // Gates are keyed by real paths: a link is judged by where it leads.
        let Ok(real) = std::fs::canonicalize(&path) else {
            continue;
        };
        let suffix = format!("\u{0}{}", real.display());
        let holds = keys.iter().any(|key| {
            key.strip_suffix(&suffix).is_some_and(|pipeline| {
                gate_holds(&store as &dyn GateStore, pipeline.as_ref(), &real).is_ok()
            })
        });
        if holds && !task.gated_sheets.contains(&path) {
            task.gated_sheets.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use codaris_tools::nextflow::{GateRecord, gate_key};
    use serde_json::json;

    use super::*;

    fn sha256(bytes: &[u8]) -> String {
        use sha2::Digest;
        sha2::Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn launch() -> ToolId {
        ToolId::parse("seqera__launch_pipeline")
    }

    #[test]
    fn a_local_sheet_counts_as_gated_only_while_its_gate_holds() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (pipeline, sheet, schema) = (
            root.join("pipe"),
            root.join("proj/sheet.csv"),
            root.join("pipe/assets/schema_input.json"),
        );
        std::fs::create_dir_all(sheet.parent().unwrap()).unwrap();
        std::fs::create_dir_all(schema.parent().unwrap()).unwrap();
        std::fs::write(&sheet, "sample\ns1\n").unwrap();
        std::fs::write(&schema, "{}").unwrap();
        let ledger = Ledger::open(&root.join("ledger")).unwrap();
        let gate = GateRecord {
            pipeline: pipeline.clone(),
            samplesheet: sheet.clone(),
            schema: schema.clone(),
            sheet_sha256: sha256(b"sample\ns1\n"),
            schema_sha256: sha256(b"{}"),
            rows: 1,
            session_id: "s".into(),
            passed_at_ms: 1,
        };
        ledger
            .gates()
            .unwrap()
            .put(&gate_key(&pipeline, &sheet), &gate)
            .unwrap();
        let args = json!({"pipeline": "p", "workspace_id": 1, "params": {"input": "sheet.csv", "other_samplesheet": "s3://b/s.csv"}});
        let cwd = root.join("proj").display().to_string();
        let mut task = Task::new(cwd.clone());
        note_gated_sheets(&ledger, &launch(), &args, &mut task);
        assert_eq!(task.gated_sheets, [sheet.display().to_string()]);

        // Another tool's arguments are not looked at.
        let mut other = Task::new(cwd.clone());
        note_gated_sheets(
            &ledger,
            &ToolId::parse("seqera__list_runs"),
            &args,
            &mut other,
        );
        assert!(other.gated_sheets.is_empty());

        // A sheet changed since its gate passed is gated no more.
        std::fs::write(&sheet, "sample\ns2\n").unwrap();
        let mut changed = Task::new(cwd);
        note_gated_sheets(&ledger, &launch(), &args, &mut changed);
        assert!(changed.gated_sheets.is_empty());
    }

    #[test]
    fn only_a_launch_gets_a_body_digest() {
        let args = json!({"pipeline": "p", "workspace_id": 1});
        assert_eq!(
            body_sha256(&launch(), &args),
            codaris_seqera::launch::launch_body_sha256(&args)
        );
        assert!(body_sha256(&launch(), &args).is_some());
        assert_eq!(
            body_sha256(&ToolId::parse("seqera__list_runs"), &args),
            None
        );
    }
}
