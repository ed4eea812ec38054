//! `prepare_samplesheet_gate`: a samplesheet checked against the pipeline's input schema as
//! nf-schema checks it at launch; a pass is kept as the sheet's gate, bound to the SHA-256 of
//! the sheet and of the schema, which the run tools ask for ([`gate_holds`]) before they
//! launch.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use codaris_nextflow::parse::load_config;
use codaris_nextflow::samplesheet::{
    GateRequest, MAX_SCHEMA_BYTES, MAX_SHEET_BYTES, gate_over, sha256_hex,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::args::{input_file, pipeline_dir};
use crate::context::ToolContext;
use crate::files::fence::{open, system};
use crate::tool::{Tool, ToolError, ToolOutput};

/// A passing check of one pipeline's samplesheet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateRecord {
    /// The pipeline's directory and the sheet and schema files, as the gate read them (real
    /// paths, symlinks followed).
    pub pipeline: PathBuf,
    pub samplesheet: PathBuf,
    pub schema: PathBuf,
    pub sheet_sha256: String,
    pub schema_sha256: String,
    pub rows: usize,
    pub session_id: String,
    pub passed_at_ms: u64,
}

/// Where gates are kept: the ledger's store in the daemon.
pub trait GateStore: Send + Sync + std::fmt::Debug {
    fn put(&self, key: &str, gate: &GateRecord) -> Result<(), String>;
    fn get(&self, key: &str) -> Result<Option<GateRecord>, String>;
    fn remove(&self, key: &str) -> Result<(), String>;
}

/// Gates kept for this process only: for a setup without a ledger (tests of the tools alone).
#[derive(Debug, Default)]
pub struct MemoryGates(Mutex<BTreeMap<String, GateRecord>>);

impl GateStore for MemoryGates {
    fn put(&self, key: &str, gate: &GateRecord) -> Result<(), String> {
        self.lock().insert(key.to_owned(), gate.clone());
        Ok(())
    }

    fn get(&self, key: &str) -> Result<Option<GateRecord>, String> {
        Ok(self.lock().get(key).cloned())
    }

    fn remove(&self, key: &str) -> Result<(), String> {
        self.lock().remove(key);
        Ok(())
    }
}

impl MemoryGates {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, GateRecord>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The key of the gate of `sheet` for `pipeline` (both real paths).
pub fn gate_key(pipeline: &Path, sheet: &Path) -> String {
    format!("{}\u{0}{}", pipeline.display(), sheet.display())
}

/// The gate of `sheet` for `pipeline` when it still holds: one passed, and neither the sheet
/// nor the schema it was checked against changed since. Otherwise why not, as a sentence.
pub fn gate_holds(
    store: &dyn GateStore,
    pipeline: &Path,
    sheet: &Path,
) -> Result<GateRecord, String> {
    let (pipeline, sheet) = (real(pipeline), real(sheet));
    let Some(gate) = store.get(&gate_key(&pipeline, &sheet))? else {
        return Err(format!(
            "the samplesheet `{}` has no passing gate for this pipeline; check it with prepare_samplesheet_gate first",
            sheet.display()
        ));
    };
    for (what, path, sha256) in [
        ("samplesheet", &gate.samplesheet, &gate.sheet_sha256),
        ("input schema", &gate.schema, &gate.schema_sha256),
    ] {
        // Opened with no symlink followed: a sheet swapped for a link since is not the sheet
        // that passed.
        let now = system::open_own(path, std::fs::OpenOptions::new().read(true)).and_then(|file| {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(
                &mut std::io::Read::take(file, MAX_SHEET_BYTES + 1),
                &mut bytes,
            )
            .map(|_| sha256_hex(&bytes))
        });
        if now.as_ref().ok() != Some(sha256) {
            return Err(format!(
                "the {what} `{}` changed since its gate passed; check the samplesheet again with prepare_samplesheet_gate",
                path.display()
            ));
        }
    }
    Ok(gate)
}

fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[derive(Debug)]
pub(super) struct PrepareSamplesheetGate {
    pub gates: Arc<dyn GateStore>,
}

#[async_trait::async_trait]
impl Tool for PrepareSamplesheetGate {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::PREPARE_SAMPLESHEET_GATE
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let pipeline = pipeline_dir(ctx, tool, args)?;
        let Some(sheet) = input_file(ctx, tool, args, "samplesheet")? else {
            return Err(ToolError::model(format!(
                "{tool}: `samplesheet` is required"
            )));
        };
        let schema = input_file(ctx, tool, args, "schema")?;
        // nf-schema reads every cell strictly unless the pipeline says `validation.lenientMode`.
        let lenient = load_config(&pipeline, "nextflow.config")
            .ok()
            .and_then(|config| {
                config
                    .get("validation.lenientMode")
                    .and_then(|s| s.value.as_bool())
            })
            .unwrap_or(false);
        // The files a sheet names are looked at only inside the roots: a failed `exists` line
        // must not tell whether a path elsewhere exists.
        let roots = ctx
            .fence
            .roots()
            .iter()
            .map(|root| std::fs::canonicalize(root).unwrap_or_else(|_| root.clone()))
            .collect();
        let mut request = GateRequest::new(&pipeline, &sheet)
            .launch_dir(&pipeline)
            .lenient_types(lenient)
            .confine_to(roots);
        if let Some(schema) = schema {
            request = request.schema(schema);
        }
        // Both read through the fence: the schema's path comes from `nextflow_schema.json`,
        // file content, and may name anything.
        let fence = ctx.fence.clone();
        let report = tokio::task::spawn_blocking(move || {
            let sheet = open::read(&fence, &request.sheet_path(), MAX_SHEET_BYTES)
                .map_err(|e| format!("samplesheet: {e}"))?;
            let schema = open::read(&fence, &request.schema_path(), MAX_SCHEMA_BYTES)
                .map_err(|e| format!("input schema: {e}"))?;
            gate_over(&request, &sheet, &schema).map_err(|e| e.to_string())
        })
        .await
        .map_err(|join| ToolError::Fatal {
            tool,
            source: std::io::Error::other(join.to_string()),
        })?
        .map_err(|error| ToolError::model(format!("{tool}: {error}")))?;
        let key = gate_key(&pipeline, &report.sheet_path);
        let kept = if report.passed() {
            let gate = GateRecord {
                pipeline: pipeline.clone(),
                samplesheet: report.sheet_path.clone(),
                schema: report.schema_path.clone(),
                sheet_sha256: report.sheet_sha256.clone(),
                schema_sha256: report.schema_sha256.clone(),
                rows: report.rows,
                session_id: ctx.session_id.clone(),
                passed_at_ms: now_ms(),
            };
            self.gates.put(&key, &gate)
        } else {
            // The latest check stands: a sheet that fails now has no gate, whatever passed before.
            self.gates.remove(&key)
        };
        kept.map_err(|reason| ToolError::Fatal {
            tool,
            source: std::io::Error::other(format!("recording the gate failed: {reason}")),
        })?;
        Ok(ToolOutput::text(report.render()))
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
