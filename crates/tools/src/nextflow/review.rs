//! `review_pipeline`: a deterministic review pack — the pipeline's structure as the Nextflow
//! reader sees it, its params against the schema, the compliance findings, nf-core lint's
//! failures when nf-core is there, and where a reviewer should read first. Read-only: nf-core
//! runs with the roots read-only, and nothing else runs.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use codaris_nextflow::audit;
use codaris_nextflow::nfcore::NfCoreEnv;
use codaris_nextflow::parse::{Pipeline, key_parts, render_outline, render_unparsed};
use codaris_nextflow::rules::Severity;
use serde_json::Value;

use super::args::{optional_string, pipeline_dir};
use super::compliance::{Rules, read_tree};
use super::review_pack::{Cap, Pack, Section, outline_only, under_prefix};
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
    /// The reader's whole outline (optionally of the files under one directory), nothing else.
    Structure,
}

#[async_trait::async_trait]
impl Tool for ReviewPipeline {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::REVIEW_PIPELINE
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let focus = match optional_string(tool, args, "focus")? {
            None => Focus::All,
            Some("security") => Focus::Security,
            Some("lint") => Focus::Lint,
            Some("structure") => Focus::Structure,
            Some(other) => {
                return Err(ToolError::model(format!(
                    "{tool}: `focus` is `security`, `lint` or `structure`, not `{other}`"
                )));
            }
        };
        let under = match (optional_string(tool, args, "under")?, focus) {
            (None, _) => None,
            (Some(under), Focus::Structure) => Some(under_prefix(under)),
            (Some(_), _) => {
                return Err(ToolError::model(format!(
                    "{tool}: `under` narrows the outline; give it with `focus` `structure`"
                )));
            }
        };
        let dir = pipeline_dir(ctx, tool, args)?;
        // The pinned first line.
        let mut pack = Pack::new(format!("review of `{}`\n", dir.display()));
        let pipeline = match focus {
            Focus::All | Focus::Structure => Some(
                Pipeline::load(&dir)
                    .map_err(|error| ToolError::model(format!("{tool}: {error}")))?,
            ),
            Focus::Security | Focus::Lint => None,
        };
        if let (Focus::Structure, Some(pipeline)) = (focus, &pipeline) {
            outline_only(&mut pack, pipeline, under.as_deref());
            return Ok(ToolOutput::text(pack.finish()));
        }
        let rules = self.rules.load(tool)?;
        let only: Option<Vec<String>> = (focus == Focus::Security)
            .then(|| SECURITY_RULES.iter().map(|id| (*id).to_owned()).collect());
        let tree = read_tree(ctx, tool, &dir)?;
        let found = audit::audit(&tree, &rules, only.as_deref())
            .map_err(|error| ToolError::model(format!("{tool}: {error}")))?;
        // Findings first: what a reviewer acts on must survive any budget.
        pack.section(compliance_section(&found));
        if focus != Focus::Security {
            let lint = self.lint_failures(ctx, &dir).await;
            pack.section(Section {
                title: "nf-core lint",
                lines: lint.lines().map(str::to_owned).collect(),
                noun: "lint lines",
                whole: "lint_pipeline gives nf-core lint's whole report".to_owned(),
                cap: Cap {
                    bytes: 8 * 1024,
                    lines: 150,
                },
            });
        }
        if let Some(pipeline) = &pipeline {
            pack.section(params_section(&ctx.fence, &dir, pipeline));
        }
        pack.section(Section {
            title: "read first",
            lines: read_first(&found),
            noun: "files",
            whole: "the compliance findings name every file".to_owned(),
            cap: Cap {
                bytes: 4 * 1024,
                lines: 20,
            },
        });
        if let Some(pipeline) = &pipeline {
            pack.section(structure_section(pipeline, &found));
            let outline: Vec<String> = render_outline(pipeline)
                .lines()
                .map(str::to_owned)
                .collect();
            pack.whole_or_nothing(
                "outline",
                &outline,
                format!(
                    "outline: {} lines ({} KiB), every include, workflow, process, param, profile and config def with its file and line: review_pipeline with focus `structure` (and `under` a directory, for a part)",
                    outline.len(),
                    outline.iter().map(|l| l.len() + 1).sum::<usize>().div_ceil(1024)
                ),
            );
        }
        Ok(ToolOutput::text(pack.finish()))
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
fn read_first(found: &audit::Audit) -> Vec<String> {
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
        .map(|file| file.replace(['\n', '\r'], " "))
        .collect()
}

/// A severity's place in the pack: errors first.
fn rank(severity: Severity) -> u8 {
    match severity {
        Severity::Error => 0,
        Severity::Warning => 1,
        Severity::Info => 2,
    }
}

/// The audit's summary, its findings errors first (each as the audit renders it), then what
/// the audit could not read.
fn compliance_section(found: &audit::Audit) -> Section {
    let mut findings: Vec<_> = found.findings.iter().collect();
    findings.sort_by_key(|f| rank(f.severity));
    let mut lines = vec![found.summary()];
    lines.extend(findings.iter().map(|f| f.render()));
    lines.extend(
        found
            .not_understood
            .iter()
            .chain(&found.skipped)
            .map(|line| format!("note: {line}")),
    );
    Section {
        title: "compliance",
        lines,
        noun: "findings and notes",
        whole: "run_compliance_autofix with report_only true lists every finding".to_owned(),
        cap: Cap {
            bytes: 20 * 1024,
            lines: 400,
        },
    }
}

/// The params against the schema: a count, then those the schema does not document, then
/// the documented ones, then the map params (nf-core's `genomes`).
fn params_section(fence: &Fence, dir: &Path, pipeline: &Pipeline) -> Section {
    let documented = schema_params(fence, dir);
    // nf-schema's `validation.defaultIgnoreParams` (nf-core lists `genomes` there): params the
    // schema deliberately leaves out.
    let ignored: Vec<&str> = match pipeline
        .config
        .get("validation.defaultIgnoreParams")
        .map(|s| &s.value)
    {
        Some(codaris_nextflow::parse::Value::List(items)) => {
            items.iter().filter_map(|v| v.as_str()).collect()
        }
        _ => Vec::new(),
    };
    let status = |name: &str| match &documented {
        Some(names) if names.contains(name) => "in the schema",
        Some(_) if ignored.contains(&name) => {
            "left out of the schema on purpose (validation.defaultIgnoreParams)"
        }
        Some(_) => "NOT in the schema",
        None => "no nextflow_schema.json",
    };
    let mut missing = Vec::new();
    let mut covered = Vec::new();
    for param in pipeline.params() {
        let name = param.key.trim_start_matches("params.");
        let line = format!(
            "{}:{}: params.{name}: {}",
            param.file,
            param.line,
            status(name)
        );
        if status(name) == "NOT in the schema" {
            missing.push(line);
        } else {
            covered.push(line);
        }
    }
    for (name, settings) in pipeline.config.nested_params() {
        let entries: BTreeSet<&str> = settings
            .iter()
            .filter_map(|s| key_parts(&s.key).get(2).copied())
            .collect();
        if let Some(first) = settings.first() {
            let line = format!(
                "{}:{}: params.{name}: a map of {} entries: {}",
                first.file,
                first.line,
                entries.len(),
                status(name)
            );
            if status(name) == "NOT in the schema" {
                missing.push(line);
            } else {
                covered.push(line);
            }
        }
    }
    let summary = match &documented {
        Some(_) => format!(
            "{} params: {} NOT in the schema, {} in it or left out on purpose",
            missing.len() + covered.len(),
            missing.len(),
            covered.len()
        ),
        None => format!("{} params; no readable nextflow_schema.json", covered.len()),
    };
    let mut lines = vec![summary];
    lines.extend(missing);
    lines.extend(covered);
    Section {
        title: "params",
        lines,
        noun: "params",
        whole: "review_pipeline with focus `structure` lists every param with its value; validate_pipeline checks the schema".to_owned(),
        cap: Cap {
            bytes: 10 * 1024,
            lines: 250,
        },
    }
}

/// The structure in counts, what was not read or understood, and the files with findings.
fn structure_section(pipeline: &Pipeline, found: &audit::Audit) -> Section {
    let config = &pipeline.config;
    let mut lines = vec![
        format!(
            "{} .nf files: {} processes, {} workflows, {} includes",
            pipeline.files.len(),
            pipeline.processes().count(),
            pipeline.workflows().count(),
            pipeline.includes().count()
        ),
        format!("by directory: {}", by_directory(pipeline)),
        format!(
            "config: {} files read, {} settings, {} profiles, {} process selectors, {} defs",
            config.files.len(),
            config.settings.len(),
            config.profiles.len(),
            config.selectors.len(),
            config.defs.len()
        ),
    ];
    lines.extend(
        config
            .skipped
            .iter()
            .map(|s| format!("not read: {}: {}", s.file, s.why)),
    );
    let unparsed = pipeline.unparsed();
    lines.push(format!("not understood: {}", unparsed.len()));
    lines.extend(render_unparsed(unparsed).lines().map(str::to_owned));
    // Files with findings, those with the most errors first.
    let mut files: Vec<(&str, [usize; 3])> = Vec::new();
    for f in &found.findings {
        let at = match files.iter().position(|(file, _)| *file == f.file) {
            Some(at) => at,
            None => {
                files.push((&f.file, [0; 3]));
                files.len() - 1
            }
        };
        if let Some((_, counts)) = files.get_mut(at)
            && let Some(n) = counts.get_mut(usize::from(rank(f.severity)))
        {
            *n += 1;
        }
    }
    files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    lines.push(format!("files with findings: {}", files.len()));
    lines.extend(files.iter().map(|(file, [e, w, i])| {
        format!(
            "{}: {e} errors, {w} warnings, {i} info",
            file.replace(['\n', '\r'], " ")
        )
    }));
    Section {
        title: "structure",
        lines,
        noun: "lines of the summary",
        whole: "review_pipeline with focus `structure` gives the whole outline; run_compliance_autofix with report_only true every finding".to_owned(),
        cap: Cap {
            bytes: 8 * 1024,
            lines: 150,
        },
    }
}

/// `.nf` files per directory (`modules/nf-core 120, modules/local 9, workflows 1, main.nf`).
fn by_directory(pipeline: &Pipeline) -> String {
    let mut groups: Vec<(String, usize)> = Vec::new();
    for f in &pipeline.files {
        let parts: Vec<&str> = f.path.split('/').collect();
        let depth = match parts.first() {
            Some(&"modules" | &"subworkflows") => 2,
            _ => 1,
        };
        let group = parts
            .iter()
            .take(depth.min(parts.len().saturating_sub(1)).max(1))
            .copied()
            .collect::<Vec<_>>()
            .join("/");
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, n)) => *n += 1,
            None => groups.push((group, 1)),
        }
    }
    groups
        .iter()
        .map(|(g, n)| format!("{} {n}", g.replace(['\n', '\r'], " ")))
        .collect::<Vec<_>>()
        .join(", ")
}
