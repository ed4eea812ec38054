//! `review_pipeline`: a deterministic review pack — the pipeline's structure as the Nextflow
//! reader sees it, its params against the schema, the compliance findings, nf-core lint's
//! failures when nf-core is there, and where a reviewer should read first. Read-only: nf-core
//! runs with the roots read-only, and nothing else runs.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use codaris_nextflow::audit;
use codaris_nextflow::nfcore::NfCoreEnv;
use codaris_nextflow::parse::{Pipeline, render_outline};
use codaris_nextflow::rules::Severity;
use serde_json::Value;

use super::args::{optional_string, pipeline_dir};
use super::compliance::{Rules, audit_text, read_tree};
use super::runner::PoolRunner;
use crate::context::{Fence, ToolContext};
use crate::files::fence::open;
use crate::shell::ShellPools;
use crate::tool::{Tool, ToolError, ToolOutput};

/// A schema is tens of KiB; past this it is not one.
const MAX_SCHEMA_BYTES: u64 = 4 * 1024 * 1024;

/// The rules a `security` review keeps: what leaks, reaches outside, or runs unpinned code.
const SECURITY_RULES: &[&str] = &[
    "NF-NO-CREDENTIALS",
    "NF-NO-PASSWORD-LITERAL",
    "NF-NO-ABSOLUTE-PATHS",
    "NF-CONTAINER-PINNED",
    "NF-CONDA-PINNED",
    "NF-PLUGIN-PINNED",
    "NF-PROCESS-SOFTWARE",
];

#[derive(Debug)]
pub(super) struct ReviewPipeline {
    pub pools: Arc<ShellPools>,
    pub env: NfCoreEnv,
    pub rules: Rules,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Focus {
    All,
    Security,
    Lint,
}

#[async_trait::async_trait]
impl Tool for ReviewPipeline {
    fn name(&self) -> &'static str {
        codaris_catalogue::REVIEW_PIPELINE.name
    }

    fn description(&self) -> &'static str {
        codaris_catalogue::REVIEW_PIPELINE.description
    }

    fn schema(&self) -> Value {
        codaris_catalogue::REVIEW_PIPELINE.schema()
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let focus = match optional_string(tool, args, "focus")? {
            None => Focus::All,
            Some("security") => Focus::Security,
            Some("lint") => Focus::Lint,
            Some(other) => {
                return Err(ToolError::model(format!(
                    "{tool}: `focus` is `security` or `lint`, not `{other}`"
                )));
            }
        };
        let dir = pipeline_dir(ctx, tool, args)?;
        let mut pack = format!("review of `{}`\n", dir.display());
        if focus == Focus::All {
            pack.push_str(&structure(&ctx.fence, tool, &dir)?);
        }
        let rules = self.rules.load(tool)?;
        let only: Option<Vec<String>> = (focus == Focus::Security)
            .then(|| SECURITY_RULES.iter().map(|id| (*id).to_owned()).collect());
        let tree = read_tree(ctx, tool, &dir)?;
        let found = audit::audit(&tree, &rules, only.as_deref())
            .map_err(|error| ToolError::model(format!("{tool}: {error}")))?;
        pack.push_str("== compliance\n");
        pack.push_str(&audit_text(&found));
        if focus != Focus::Security {
            pack.push_str("== nf-core lint\n");
            pack.push_str(&self.lint_failures(ctx, &dir).await);
        }
        pack.push_str("== read first\n");
        pack.push_str(&read_first(&found));
        Ok(ToolOutput::text(pack))
    }
}

impl ReviewPipeline {
    /// nf-core lint's failures, or why there are none to show (nf-core missing, a fatal run).
    async fn lint_failures(&self, ctx: &ToolContext, dir: &Path) -> String {
        let tool = codaris_catalogue::REVIEW_PIPELINE.name;
        let runner = match self.pools.pool(&ctx.session_id) {
            Ok(pool) => PoolRunner {
                pool,
                roots: ctx.fence.roots().to_vec(),
                workspace: ctx.workspace.clone(),
                writes: false,
                handle: tokio::runtime::Handle::current(),
            },
            Err(error) => return format!("not run: {}\n", error.into_tool_error(tool)),
        };
        let env = self.env.clone();
        let pipeline = dir.to_path_buf();
        let linted = tokio::task::spawn_blocking(move || {
            super::nfcore::lint_copy(&runner, &env, &pipeline, false, Vec::new())
        });
        match linted.await {
            Ok(Ok((text, _))) => {
                let mut text = text
                    .lines()
                    .filter(|line| !line.starts_with("warned:") && !line.starts_with("ignored:"))
                    .collect::<Vec<_>>()
                    .join("\n");
                text.push('\n');
                text
            }
            Ok(Err(error)) => format!("not run: {error}\n"),
            Err(join) => format!("not run: {join}\n"),
        }
    }
}

/// The structure and the params against the schema.
fn structure(fence: &Fence, tool: &'static str, dir: &Path) -> Result<String, ToolError> {
    let pipeline =
        Pipeline::load(dir).map_err(|error| ToolError::model(format!("{tool}: {error}")))?;
    let mut text = String::from("== structure\n");
    text.push_str(&render_outline(&pipeline));
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let documented = schema_params(fence, dir);
    text.push_str("== params\n");
    for param in pipeline.params() {
        let name = param.key.trim_start_matches("params.");
        let covered = match &documented {
            Some(names) if names.contains(name) => "in the schema",
            Some(_) => "NOT in the schema",
            None => "no nextflow_schema.json",
        };
        text.push_str(&format!(
            "{}:{}: params.{name}: {covered}\n",
            param.file, param.line
        ));
    }
    Ok(text)
}

/// The parameter names `nextflow_schema.json` documents (its `properties` and those of each
/// `$defs` group), or `None` without a readable schema (one leading out of the roots or into
/// Codaris's state is not read).
fn schema_params(fence: &Fence, dir: &Path) -> Option<BTreeSet<String>> {
    let text = open::read_text(fence, &dir.join("nextflow_schema.json"), MAX_SCHEMA_BYTES).ok()?;
    let schema: Value = serde_json::from_str(&text).ok()?;
    let mut names = BTreeSet::new();
    let groups = ["$defs", "definitions"]
        .iter()
        .filter_map(|key| schema.get(*key).and_then(Value::as_object))
        .flat_map(|defs| defs.values());
    for properties in std::iter::once(&schema)
        .chain(groups)
        .filter_map(|node| node.get("properties").and_then(Value::as_object))
    {
        names.extend(properties.keys().cloned());
    }
    Some(names)
}

/// The files a reviewer should open first: those with error findings, then with warnings,
/// then the entry points.
fn read_first(found: &audit::Audit) -> String {
    let mut order: Vec<String> = Vec::new();
    for severity in [Severity::Error, Severity::Warning] {
        for finding in found.findings.iter().filter(|f| f.severity == severity) {
            if !order.contains(&finding.file) {
                order.push(finding.file.clone());
            }
        }
    }
    for entry in ["main.nf", "nextflow.config", "nextflow_schema.json"] {
        if !order.iter().any(|f| f == entry) {
            order.push(entry.to_owned());
        }
    }
    order
        .iter()
        .take(12)
        .map(|file| format!("{}\n", file.replace(['\n', '\r'], " ")))
        .collect()
}
