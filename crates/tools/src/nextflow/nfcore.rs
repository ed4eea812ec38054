//! `clone_nfcore_base`, `lint_pipeline` and `validate_pipeline`: nf-core's own create, lint and
//! schema checks, run in the session's sandbox.

use std::sync::Arc;

use codaris_nextflow::nfcore::{NfCoreEnv, NfCoreError, create, lint, schema};
use serde_json::Value;

use super::NextflowSetup;
use super::args::{
    flag, input_file, new_dir, optional_string, pipeline_dir, required_string, string_list,
};
use super::copy::PipelineCopy;
use super::runner::PoolRunner;
use crate::context::ToolContext;
use crate::shell::ShellPools;
use crate::tool::{Tool, ToolError, ToolOutput};

pub(super) fn tools(pools: &Arc<ShellPools>, setup: &NextflowSetup) -> Vec<Arc<dyn Tool>> {
    let shared = Shared {
        pools: pools.clone(),
        env: setup.nfcore_env(),
    };
    vec![
        Arc::new(CloneNfcoreBase(shared.clone())),
        Arc::new(LintPipeline(shared.clone())),
        Arc::new(ValidatePipeline(shared)),
    ]
}

/// What every nf-core tool runs with.
#[derive(Debug, Clone)]
struct Shared {
    pools: Arc<ShellPools>,
    env: NfCoreEnv,
}

impl Shared {
    /// A runner on the session's pool; `writes`: the roots are writable for the run.
    fn runner(
        &self,
        tool: &'static str,
        ctx: &ToolContext,
        writes: bool,
    ) -> Result<PoolRunner, ToolError> {
        let pool = self
            .pools
            .pool(&ctx.session_id)
            .map_err(|error| error.into_tool_error(tool))?;
        Ok(PoolRunner {
            pool,
            roots: ctx.fence.roots().to_vec(),
            workspace: ctx.workspace.clone(),
            writes,
            handle: tokio::runtime::Handle::current(),
        })
    }
}

/// Runs `work` (which blocks on nf-core) off the async threads; its error is the model's.
async fn blocking<T: Send + 'static>(
    tool: &'static str,
    work: impl FnOnce() -> Result<T, NfCoreError> + Send + 'static,
) -> Result<T, ToolError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(error)) => Err(ToolError::model(format!("{tool}: {error}"))),
        Err(join) => Err(ToolError::Fatal {
            tool,
            source: std::io::Error::other(join.to_string()),
        }),
    }
}

#[derive(Debug)]
struct CloneNfcoreBase(Shared);

#[async_trait::async_trait]
impl Tool for CloneNfcoreBase {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::CLONE_NFCORE_BASE
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let name = required_string(tool, args, "name")?.to_owned();
        let default_dir = format!("nf-core-{name}");
        let outdir = optional_string(tool, args, "outdir")?.unwrap_or(&default_dir);
        let request = create::CreateRequest {
            outdir: new_dir(ctx, tool, outdir)?,
            description: required_string(tool, args, "description")?.to_owned(),
            author: required_string(tool, args, "author")?.to_owned(),
            skip_features: string_list(tool, args, "skip_features")?,
            name,
        };
        let runner = self.0.runner(tool, ctx, true)?;
        let env = self.0.env.clone();
        let report = blocking(tool, move || create::create(&runner, &env, &request)).await?;
        Ok(ToolOutput::text(report.render()))
    }
}

#[derive(Debug)]
struct LintPipeline(Shared);

#[async_trait::async_trait]
impl Tool for LintPipeline {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::LINT_PIPELINE
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let pipeline = pipeline_dir(ctx, tool, args)?;
        let release = flag(tool, args, "release")?;
        let tests = string_list(tool, args, "tests")?;
        let runner = self.0.runner(tool, ctx, false)?;
        let env = self.0.env.clone();
        let text = blocking(tool, move || {
            lint_copy(&runner, &env, &pipeline, release, tests).map(|(text, _)| text)
        })
        .await?;
        Ok(ToolOutput::text(text))
    }
}

/// nf-core's lint of a copy of `pipeline` (see `copy.rs`): the report's text with the copy's
/// path written as the pipeline's, and the report. Blocks.
pub(super) fn lint_copy(
    runner: &PoolRunner,
    env: &NfCoreEnv,
    pipeline: &std::path::Path,
    release: bool,
    tests: Vec<String>,
) -> Result<(String, lint::LintReport), NfCoreError> {
    use codaris_nextflow::runner::Runner as _;
    let copy =
        PipelineCopy::new(pipeline, &runner.scratch()).map_err(|source| NfCoreError::Io {
            action: "copying, to lint it,",
            path: pipeline.to_path_buf(),
            source,
        })?;
    let request = lint::LintRequest {
        pipeline: copy.path.clone(),
        release,
        tests,
    };
    let report = lint::run_lint(runner, env, &request)?;
    Ok((copy.as_original(&report.render(), pipeline), report))
}

#[derive(Debug)]
struct ValidatePipeline(Shared);

#[async_trait::async_trait]
impl Tool for ValidatePipeline {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::VALIDATE_PIPELINE
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let request = schema::ValidateRequest {
            pipeline: pipeline_dir(ctx, tool, args)?,
            params_file: input_file(ctx, tool, args, "params_file")?,
        };
        let runner = self.0.runner(tool, ctx, false)?;
        let env = self.0.env.clone();
        let report = blocking(tool, move || schema::validate(&runner, &env, &request)).await?;
        Ok(ToolOutput::text(report.render()))
    }
}
