//! `review_pipeline` through the real tool on the largest real pipeline (nf-core/sarek 3.10.0,
//! read in place from tests/fixtures/nextflow/real-pipelines/): the pack fits the default output
//! limit whole, findings come first, every section is there, and what did not fit is named
//! with the call that gets it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codaris_tools::nextflow::{MemoryGates, NextflowSetup, nextflow_tools};
use codaris_tools::shell::{PoolConfig, ShellPools};
use codaris_tools::{Content, Fence, OutputLimits, Tool, ToolContext, ToolOutput, apply_limits};
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn real(name: &str) -> Result<PathBuf, std::io::Error> {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/nextflow/real-pipelines")
        .join(name)
        .canonicalize()
}

fn text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .filter_map(|c| match c {
            Content::Text(text) => Some(text.clone()),
            Content::Image { .. } => None,
        })
        .collect()
}

/// The scratch directory (kept while the test runs), the context and the tool.
type Review = (tempfile::TempDir, ToolContext, Arc<dyn Tool>);

/// The review tool over a fence holding the real pipelines (read-only) and a scratch
/// workspace; nf-core is a path that does not exist, so the lint section says it did not run.
fn review_tool() -> Result<Review, Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let workspace = tmp.path().canonicalize()?;
    let pipelines = real("")?;
    let ctx = ToolContext {
        checkpoint: None,
        session_id: "s".into(),
        cwd: pipelines.clone(),
        fence: Fence::new([pipelines, workspace.clone()]),
        workspace,
        read: Default::default(),
    };
    let (pools, _notices) = ShellPools::new(PoolConfig::default());
    let setup = NextflowSetup {
        nf_core: "/nonexistent/nf-core".into(),
        ..NextflowSetup::default()
    };
    let tool = nextflow_tools(&Arc::new(pools), &setup, Arc::new(MemoryGates::default()))
        .into_iter()
        .find(|t| t.name() == "review_pipeline")
        .ok_or("no review_pipeline tool")?;
    Ok((tmp, ctx, tool))
}

const SECTIONS: &[&str] = &[
    "== compliance",
    "== nf-core lint",
    "== params",
    "== read first",
    "== structure",
    "== left out",
];

#[tokio::test]
async fn the_review_of_sarek_fits_the_output_limit_with_every_section() -> TestResult {
    let (_tmp, ctx, tool) = review_tool()?;
    let sarek = real("sarek-3.10.0")?;
    let output = tool.call(&ctx, &json!({"path": "sarek-3.10.0"})).await?;
    let pack = text(&output);
    // What the model is given is the pack itself: the limiter had nothing to cut.
    let limited = text(&apply_limits(output, OutputLimits::default()));
    assert_eq!(limited, pack, "the output limit cut the pack");

    let lines: Vec<&str> = pack.lines().collect();
    assert_eq!(lines[0], format!("review of `{}`", sarek.display()));
    let at = |header: &str| lines.iter().position(|l| *l == header);
    let positions: Vec<Option<usize>> = SECTIONS.iter().map(|s| at(s)).collect();
    assert!(
        positions.iter().all(Option::is_some),
        "{positions:?}\n{pack}"
    );
    // Findings first, in this order, the structure after them and `left out` last.
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    assert!(lines[1] == "== compliance", "{}", lines[1]);
    assert!(lines[2].contains(" findings ("), "{}", lines[2]);
    assert!(
        lines.iter().any(|l| l.starts_with("not run: ")),
        "the lint section says nf-core did not run"
    );
    // The structure in counts, read whole.
    assert!(pack.contains("\n199 .nf files: 124 processes, "), "{pack}");
    assert!(pack.contains("\nnot understood: 0\n"), "{pack}");
    assert!(
        pack.contains("\nnot read: nf-test.config: nf-test's own configuration"),
        "{pack}"
    );
    // The params against the schema; the genome map is one param, which nf-core leaves out of
    // the schema on purpose.
    assert!(
        pack.contains("\nconf/igenomes.config:15: params.genomes: a map of 42 entries: left out of the schema on purpose (validation.defaultIgnoreParams)\n"),
        "{pack}"
    );
    assert!(
        pack.contains("\nnextflow.config:16: params.step: in the schema\n"),
        "{pack}"
    );
    // Sarek's outline is over 100 KiB: it is left out whole, with how to get it.
    assert!(!lines.contains(&"== outline"));
    let left = &lines[at("== left out").unwrap_or(0)..];
    assert!(
        left.iter()
            .any(|l| l.starts_with("outline: ")
                && l.contains("review_pipeline with focus `structure`")),
        "{left:?}"
    );
    // No section was cut mid-way: each cut one ends with its own count and is in `left out`.
    for line in lines.iter().filter(|l| l.starts_with("… ")) {
        assert!(line.ends_with("not shown (see `== left out`)"), "{line}");
    }
    Ok(())
}

#[tokio::test]
async fn a_small_pipeline_gets_the_whole_pack_with_its_outline() -> TestResult {
    let (_tmp, ctx, tool) = review_tool()?;
    let pack = text(&tool.call(&ctx, &json!({"path": "rnaseq-nf"})).await?);
    for header in SECTIONS.iter().chain(&["== outline"]) {
        assert!(pack.lines().any(|l| l == *header), "{header}\n{pack}");
    }
    assert!(
        pack.ends_with("== left out\nnothing: this is the whole pack\n"),
        "{pack}"
    );
    assert!(pack.contains("main.nf:"), "{pack}");
    Ok(())
}

#[tokio::test]
async fn the_outline_of_sarek_is_had_in_parts_each_within_the_limit() -> TestResult {
    let (_tmp, ctx, tool) = review_tool()?;
    let whole = text(
        &tool
            .call(&ctx, &json!({"path": "sarek-3.10.0", "focus": "structure"}))
            .await?,
    );
    let limited = text(&apply_limits(
        ToolOutput::text(whole.clone()),
        OutputLimits::default(),
    ));
    assert_eq!(limited, whole, "the output limit cut the outline");
    // Too big whole: what did not fit is named with the call for each part, and the rest is
    // there whole (the config's outline among it).
    assert!(
        whole.contains("\n`subworkflows`: ")
            && whole.contains("review_pipeline with focus `structure` and under `subworkflows`"),
        "{whole}"
    );
    assert!(whole.contains("\nnextflow.config:"), "{whole}");
    let part = text(
        &tool
            .call(
                &ctx,
                &json!({"path": "sarek-3.10.0", "focus": "structure", "under": "./modules/local/"}),
            )
            .await?,
    );
    assert!(
        part.contains("\n== outline under `modules/local`\n"),
        "{part}"
    );
    assert!(
        part.lines()
            .skip(2)
            .take_while(|l| !l.starts_with("== "))
            .all(|l| l.starts_with("modules/local/")),
        "{part}"
    );
    let refused = tool
        .call(&ctx, &json!({"path": "sarek-3.10.0", "under": "modules"}))
        .await;
    assert!(refused.is_err());
    Ok(())
}
