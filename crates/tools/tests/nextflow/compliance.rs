//! `run_compliance_autofix` and `apply_remediation_plan` on a copy of a real nf-core pipeline
//! (nf-core/demo 1.0.2): the pipeline's own code is fixed, vendored nf-core code never is.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codaris_tools::nextflow::{MemoryGates, NextflowSetup, nextflow_tools};
use codaris_tools::shell::{PoolConfig, ShellPools};
use codaris_tools::{Fence, Tool, ToolContext, ToolError};
use serde_json::{Value, json};

use super::TestResult;

const VENDORED: [&str; 2] = [
    "modules/nf-core/fastqc/main.nf",
    "subworkflows/nf-core/utils_nfcore_pipeline/main.nf",
];
const OWN: &str = "subworkflows/local/utils_nfcore_demo_pipeline/main.nf";

struct Pipe {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    ctx: ToolContext,
    tools: Vec<Arc<dyn Tool>>,
}

fn copy_dir(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dst)?;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let to = dst.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &to)?;
        } else {
            std::fs::copy(entry.path(), to)?;
        }
    }
    Ok(())
}

/// A copy of nf-core/demo with `Channel.` (fixable) planted in two vendored files and in one
/// of its own, and a process whose `publishDir` has no `mode` (fixable) in the vendored FastQC
/// module's file.
fn pipe() -> Result<Pipe, Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let root = tmp.path().canonicalize()?.join("root");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/nextflow/real-pipelines/demo-1.0.2"),
        &root.join("pipe"),
    )?;
    for rel in VENDORED.iter().chain([&OWN]) {
        let path = root.join("pipe").join(rel);
        let text = std::fs::read_to_string(&path)?;
        std::fs::write(
            &path,
            format!("{text}\ndef seeded_channel() {{ Channel.empty() }}\n"),
        )?;
    }
    // A process of its own in the vendored file: FastQC's publishDir is set by conf/modules.config.
    let fastqc = root.join("pipe").join(VENDORED[0]);
    let text = std::fs::read_to_string(&fastqc)?;
    std::fs::write(
        &fastqc,
        format!(
            "{text}\nprocess SEEDED {{\n    publishDir \"results\"\n\n    script:\n    \"true\"\n}}\n"
        ),
    )?;
    let ctx = ToolContext {
        checkpoint: None,
        session_id: "s".into(),
        cwd: root.clone(),
        fence: Fence::new([root.clone()]),
        workspace: root.clone(),
        read: Default::default(),
    };
    let (pools, _notices) = ShellPools::new(PoolConfig::default());
    let tools = nextflow_tools(
        &Arc::new(pools),
        &NextflowSetup::default(),
        Arc::new(MemoryGates::default()),
    );
    Ok(Pipe {
        _tmp: tmp,
        root,
        ctx,
        tools,
    })
}

impl Pipe {
    async fn call(&self, name: &str, args: Value) -> Result<String, ToolError> {
        let tool = self
            .tools
            .iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| ToolError::model(format!("no tool {name}")))?;
        let output = tool.call(&self.ctx, &args).await?;
        Ok(output
            .content
            .iter()
            .filter_map(|c| match c {
                codaris_tools::Content::Text(text) => Some(text.clone()),
                codaris_tools::Content::Image { .. } => None,
            })
            .collect())
    }

    fn read(&self, rel: &str) -> std::io::Result<String> {
        std::fs::read_to_string(self.root.join("pipe").join(rel))
    }
}

#[tokio::test]
async fn autofix_fixes_the_pipelines_own_code_and_never_vendored_code() -> TestResult {
    let pipe = pipe()?;
    let before: Vec<String> = VENDORED
        .iter()
        .map(|rel| pipe.read(rel))
        .collect::<Result<_, _>>()?;
    let answer = pipe
        .call(
            "run_compliance_autofix",
            json!({"path": "pipe", "report_only": false}),
        )
        .await?;
    assert!(pipe.read(OWN)?.contains("channel.empty()"), "{answer}");
    for (rel, old) in VENDORED.iter().zip(&before) {
        assert_eq!(&pipe.read(rel)?, old, "{rel} was edited:\n{answer}");
        assert!(!answer.contains(&format!("+++ b/{rel}")), "{answer}");
    }
    // What is left in vendored code is an upstream note, not a plan item.
    let note = answer
        .lines()
        .find(|l| {
            l.starts_with("modules/nf-core/fastqc/main.nf:") && l.contains("[NF-PUBLISHDIR-MODE]")
        })
        .unwrap_or_else(|| panic!("{answer}"));
    assert!(
        note.contains("] info: ") && note.contains("fix it upstream"),
        "{note}"
    );
    let plan = pipe.read(".codaris/remediation-plan.json")?;
    assert!(!plan.contains("nf-core/"), "{plan}");
    // Every finding says why, with its rule's doc link, once per rule after the findings.
    let why = answer
        .split_once("\nwhy:\n")
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    assert!(
        why.lines().any(
            |l| l.starts_with("[NF-PUBLISHDIR-MODE] Every `publishDir` sets `mode`")
                && l.ends_with(
                    "(see https://www.nextflow.io/docs/latest/reference/process.html#publishdir)"
                )
        ),
        "{answer}"
    );
    Ok(())
}

#[tokio::test]
async fn a_plan_that_patches_vendored_code_is_refused_and_nothing_changes() -> TestResult {
    let pipe = pipe()?;
    let rel = VENDORED[0];
    let old = pipe.read(rel)?;
    let first = old.lines().next().unwrap_or_default();
    let plan = json!({"items": [{
        "id": "1",
        "rule": "NF-CHANNEL-LOWERCASE",
        "severity": "info",
        "file": rel,
        "line": 1,
        "message": "planted",
        "why": "planted",
        "instruction": "planted",
        "patch": format!("--- a/{rel}\n+++ b/{rel}\n@@ -1,1 +1,2 @@\n+// edited\n {first}\n"),
    }]});
    std::fs::create_dir_all(pipe.root.join("pipe/.codaris"))?;
    std::fs::write(
        pipe.root.join("pipe/.codaris/remediation-plan.json"),
        serde_json::to_vec(&plan)?,
    )?;
    let refused = pipe
        .call("apply_remediation_plan", json!({"path": "pipe"}))
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        refused.contains(&format!("`{rel}`"))
            && refused.contains("vendored")
            && refused.contains("nothing was changed"),
        "{refused}"
    );
    assert_eq!(pipe.read(rel)?, old);
    Ok(())
}
