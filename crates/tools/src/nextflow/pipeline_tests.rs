//! `test_pipeline` and `check_test_result`: a pipeline's tests run in the session's sandbox
//! (nf-test, else the `test` profile), their reports and record kept in the pipeline's
//! `.codaris/tests/` (see `codaris_nextflow::testrun`), and read back per test.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use codaris_nextflow::runner::{Exit, Invocation, RunError, Runner as _};
use codaris_nextflow::testrun::{
    self, TESTS_DIR, TestAnswer, TestCommand, TestEnd, TestKind, TestRecord,
};
use serde_json::Value;

use super::args::{optional_string, pipeline_dir};
use super::launch::{LaunchShared, work_dir_of};
use super::runner::PoolRunner;
use super::work_dir::RunWorkDir;
use crate::context::ToolContext;
use crate::preview::{CallPreview, PreviewKind};
use crate::tool::{Tool, ToolError, ToolOutput};

/// How long the tests may run: nf-test suites and test profiles download data and run many
/// processes, so hours, not minutes.
const TEST_TIMEOUT: Duration = Duration::from_secs(4 * 60 * 60);

/// The test tools, on the launch tools' sandboxes, setup and runs.
pub(super) fn tools(launch: &Arc<LaunchShared>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(TestPipeline(launch.clone())),
        Arc::new(CheckTestResult),
    ]
}

/// `<pipeline>/.codaris/tests`, made when missing; refused when any part of it is a symlink
/// or not a directory, so nothing Codaris writes there lands outside the pipeline.
fn tests_dir(tool: &'static str, pipeline: &Path, create: bool) -> Result<PathBuf, ToolError> {
    let mut dir = pipeline.to_path_buf();
    for part in Path::new(TESTS_DIR).components() {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(ToolError::model(format!(
                    "{tool}: `{}` is a symlink; Codaris keeps test results only in a real directory of the pipeline",
                    dir.display()
                )));
            }
            Ok(meta) if !meta.is_dir() => {
                return Err(ToolError::model(format!(
                    "{tool}: `{}` is not a directory",
                    dir.display()
                )));
            }
            Ok(_) => {}
            Err(_) if create => std::fs::create_dir(&dir).map_err(|e| {
                ToolError::model(format!("{tool}: cannot create `{}`: {e}", dir.display()))
            })?,
            Err(_) => {}
        }
    }
    Ok(dir)
}

#[derive(Debug)]
/// Its sandboxes and setup are the launch tools'; it does not start beside a run they
/// started in the same directory (Nextflow locks the launch directory's cache).
struct TestPipeline(Arc<LaunchShared>);

impl TestPipeline {
    /// Every check of a test run and its command: the pipeline as named and found, the
    /// command, and for a test profile's run the work directory its tasks write to (checked
    /// as a launch's is; nf-test gives each test a work directory of its own under the
    /// pipeline's `.nf-test`). `create` makes the reports' directory; a card's check does not.
    fn planned(
        &self,
        ctx: &ToolContext,
        args: &Value,
        create: bool,
        run_name: String,
    ) -> Result<Planned, ToolError> {
        let tool = self.name();
        let shown = optional_string(tool, args, "path")?
            .unwrap_or(".")
            .to_owned();
        let pipeline = pipeline_dir(ctx, tool, args)?;
        let extra = match optional_string(tool, args, "profile")? {
            Some(profile) => self
                .0
                .setup
                .allowed_profiles(profile)
                .map_err(|why| ToolError::model(format!("{tool}: {why}")))?,
            None => Vec::new(),
        };
        if let Some(refusal) = self
            .0
            .launches
            .busy(tool, &pipeline, &pipeline, &ctx.session_id)
        {
            return Err(refusal);
        }
        let kind = TestKind::of(&pipeline);
        let profiles = testrun::test_profiles(&extra);
        let work_dir = match kind {
            TestKind::NfTest => None,
            TestKind::TestProfile => {
                self.0
                    .setup
                    .allowed_profiles(&profiles.join(","))
                    .map_err(|why| ToolError::model(format!("{tool}: {why}")))?;
                Some(work_dir_of(ctx, tool, &pipeline, &pipeline, &profiles)?)
            }
        };
        let dir = tests_dir(tool, &pipeline, create)?;
        let command = match kind {
            TestKind::NfTest => TestCommand::nf_test(&self.0.setup.nf_test, &dir, &extra),
            TestKind::TestProfile => TestCommand::test_profile(
                &self.0.setup.nextflow,
                &pipeline,
                &dir,
                &profiles,
                &run_name,
            ),
        };
        Ok(Planned {
            shown,
            pipeline,
            command,
            work_dir,
        })
    }
}

/// A test run, checked.
struct Planned {
    /// The pipeline as the call named it.
    shown: String,
    pipeline: PathBuf,
    command: TestCommand,
    /// Where a test profile's run writes its tasks; none for nf-test.
    work_dir: Option<RunWorkDir>,
}

#[async_trait::async_trait]
impl Tool for TestPipeline {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::TEST_PIPELINE
    }

    fn card_check(
        &self,
        ctx: &ToolContext,
        args: &Value,
    ) -> Option<Result<CallPreview, ToolError>> {
        let tool = self.name();
        let name = self.0.names.reserve(ctx, tool, args);
        Some(self.planned(ctx, args, false, name).map(|planned| {
            let mut text = format!(
                "$ {}\nin {}\n",
                planned.command.line(),
                planned.pipeline.display()
            );
            if let Some(work_dir) = &planned.work_dir {
                text.push_str(&work_dir.line());
                text.push('\n');
            }
            CallPreview {
                kind: PreviewKind::Command,
                text,
                path: None,
                action: format!(
                    "run the tests of the pipeline `{}`",
                    planned.pipeline.display()
                ),
            }
        }))
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let name = self.0.names.take(ctx, tool, args);
        let Planned {
            shown,
            pipeline,
            command,
            ..
        } = self.planned(ctx, args, true, name)?;
        for stale in command.outputs() {
            let _ = std::fs::remove_file(stale);
        }
        let pool = self
            .0
            .pools
            .pool(&ctx.session_id)
            .map_err(|error| error.into_tool_error(tool))?;
        let runner = PoolRunner::new(
            pool,
            ctx.fence.roots().to_vec(),
            ctx.workspace.clone(),
            true,
        );
        let mut invocation = Invocation::new(&command.program, command.args.clone(), &pipeline)
            .with_timeout(TEST_TIMEOUT);
        for (key, value) in &command.env {
            invocation = invocation.with_env(key, value);
        }
        if let Some(path) = self.0.setup.search_path() {
            invocation = invocation.with_env("PATH", &path);
        }
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let ran = tokio::task::spawn_blocking(move || {
            let outcome = runner.run(&invocation);
            (outcome, command)
        })
        .await;
        let (outcome, command) = ran.map_err(|join| ToolError::Fatal {
            tool,
            source: std::io::Error::other(join.to_string()),
        })?;
        let record = match outcome {
            Ok(done) => TestRecord::new(
                &command,
                started,
                u64::try_from(done.elapsed.as_millis()).unwrap_or(u64::MAX),
                match done.exit {
                    Exit::Code(code) => TestEnd::Exited { code },
                    Exit::Signal(signal) => TestEnd::Signaled { signal },
                },
                &done.stdout.text,
                &done.stderr.text,
            ),
            Err(RunError::TimedOut {
                timeout, stderr, ..
            }) => TestRecord::new(
                &command,
                started,
                u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                TestEnd::TimedOut {
                    seconds: timeout.as_secs(),
                },
                "",
                &stderr.text,
            ),
            Err(other) => return Err(ToolError::model(format!("{tool}: {other}"))),
        };
        // The run could write the pipeline: the directory is checked again before the record
        // is written into it.
        let dir = tests_dir(tool, &pipeline, false)?;
        write_record(tool, &dir, &record)?;
        let answer = testrun::answer(&record, &pipeline);
        Ok(ToolOutput::text(format!(
            "{}\n{}",
            answer.headline(&shown),
            answer.text
        )))
    }
}

/// The record, written beside and renamed over the old one (a rename replaces a planted
/// symlink instead of following it).
fn write_record(tool: &'static str, dir: &Path, record: &TestRecord) -> Result<(), ToolError> {
    let fail = |e: std::io::Error| {
        ToolError::model(format!(
            "{tool}: cannot write the test record in `{}`: {e}",
            dir.display()
        ))
    };
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    std::io::Write::write_all(&mut file, record.to_json().as_bytes()).map_err(fail)?;
    file.persist(dir.join(testrun::RECORD_FILE))
        .map_err(|e| fail(e.error))?;
    Ok(())
}

#[derive(Debug)]
struct CheckTestResult;

#[async_trait::async_trait]
impl Tool for CheckTestResult {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::CHECK_TEST_RESULT
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let pipeline = pipeline_dir(ctx, tool, args)?;
        let dir = tests_dir(tool, &pipeline, false)?;
        let read = tokio::task::spawn_blocking(move || -> Result<TestAnswer, String> {
            let record = testrun::read_record(&dir).map_err(|e| e.to_string())?;
            Ok(testrun::answer(&record, &pipeline))
        })
        .await
        .map_err(|join| ToolError::Fatal {
            tool,
            source: std::io::Error::other(join.to_string()),
        })?;
        match read {
            Ok(answer) => Ok(ToolOutput::text(answer.text)),
            Err(why) => Err(ToolError::model(format!("{tool}: {why}"))),
        }
    }
}
