//! `worktree_create`: a feature worktree of the session's repository, from origin's default
//! branch, for the session to move into.
//!
//! Worktrees live in `<repo>/.worktrees/<branch>` (slashes become `-`), inside the repository
//! and so inside the fence the session already has; `.worktrees/` is added to the repository's
//! `info/exclude` so the main checkout does not list them as untracked. The tool reports the
//! path and asks for the move in its output's `session_cwd`; the daemon owns sessions and
//! carries it out.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;

use super::args::required_string;
use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};

const NAME: &str = codaris_catalogue::WORKTREE_CREATE.name;
const DIR: &str = ".worktrees";
/// Fetching from a slow remote may take a while; nothing else here should.
const GIT_TIMEOUT: Duration = Duration::from_secs(120);

/// What `create_worktree` made or found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    pub path: PathBuf,
    pub branch: String,
    /// The commit-ish it was created from (`origin/main`); `None` when an existing one was
    /// reused.
    pub base: Option<String>,
}

/// `worktree_create`.
#[derive(Debug, Clone, Copy, Default)]
pub struct WorktreeCreate;

/// Runs git in `dir` without ever prompting; stdout on success, else a model error quoting
/// git's own complaint.
async fn git(dir: &Path, args: &[&str]) -> Result<String, ToolError> {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(GIT_TIMEOUT, command.output())
        .await
        .map_err(|_| {
            ToolError::model(format!(
                "`git {}` took longer than {}s",
                args.join(" "),
                GIT_TIMEOUT.as_secs()
            ))
        })?
        .map_err(|source| ToolError::Fatal { tool: NAME, source })?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned());
    }
    Err(ToolError::model(format!(
        "`git {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr).trim()
    )))
}

/// Creates (or finds) the worktree of `branch` for the repository around `ctx.cwd`.
pub async fn create_worktree(ctx: &ToolContext, branch: &str) -> Result<Worktree, ToolError> {
    if branch.starts_with('-') || branch.trim().is_empty() {
        return Err(ToolError::model(format!(
            "`branch` `{branch}` is not a branch name"
        )));
    }
    git(&ctx.cwd, &["check-ref-format", "--branch", branch])
        .await
        .map_err(|_| ToolError::model(format!("`branch` `{branch}` is not a branch name")))?;
    let top = PathBuf::from(git(&ctx.cwd, &["rev-parse", "--show-toplevel"]).await?);
    if ctx.fence.locate(&top).is_none() {
        return Err(ToolError::model(format!(
            "the repository `{}` is outside the allowed roots",
            top.display()
        )));
    }
    let wanted = format!("branch refs/heads/{branch}");
    let listing = git(&top, &["worktree", "list", "--porcelain"]).await?;
    let existing = listing.split("\n\n").find_map(|block| {
        let mut lines = block.lines();
        let path = lines.next()?.strip_prefix("worktree ")?;
        lines
            .any(|line| line == wanted)
            .then(|| PathBuf::from(path))
    });
    if let Some(path) = existing {
        return Ok(Worktree {
            path,
            branch: branch.to_owned(),
            base: None,
        });
    }
    git(&top, &["fetch", "--quiet", "origin"]).await?;
    let base = match git(
        &top,
        &["symbolic-ref", "--short", "refs/remotes/origin/HEAD"],
    )
    .await
    {
        Ok(base) => base,
        // A clone made before origin/HEAD was recorded: the usual names.
        Err(_) => default_guess(&top).await?,
    };
    let path = top.join(DIR).join(branch.replace('/', "-"));
    let path_arg = path.to_string_lossy().into_owned();
    exclude_dir(&top).await?;
    let local = git(
        &top,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    )
    .await;
    if local.is_ok() {
        git(&top, &["worktree", "add", "--quiet", &path_arg, branch]).await?;
    } else {
        git(
            &top,
            &["worktree", "add", "--quiet", "-b", branch, &path_arg, &base],
        )
        .await?;
    }
    Ok(Worktree {
        path,
        branch: branch.to_owned(),
        base: Some(base),
    })
}

async fn default_guess(top: &Path) -> Result<String, ToolError> {
    for candidate in ["origin/main", "origin/master"] {
        if git(top, &["rev-parse", "--verify", "--quiet", candidate])
            .await
            .is_ok()
        {
            return Ok(candidate.to_owned());
        }
    }
    Err(ToolError::model(
        "origin has no default branch (no origin/HEAD, origin/main or origin/master)",
    ))
}

/// Keeps `.worktrees/` out of the main checkout's untracked files.
async fn exclude_dir(top: &Path) -> Result<(), ToolError> {
    let exclude = git(top, &["rev-parse", "--git-path", "info/exclude"]).await?;
    let exclude = top.join(exclude);
    // Read with no symlink followed; one that cannot be is left as it is.
    let read = exclude.clone();
    let current =
        match tokio::task::spawn_blocking(move || crate::files::fence::system::read_own(&read))
            .await
        {
            Ok(Ok(text)) => text.unwrap_or_default(),
            _ => return Ok(()),
        };
    let line = format!("/{DIR}/");
    if current.lines().any(|existing| existing == line) {
        return Ok(());
    }
    let fatal = |source| ToolError::Fatal { tool: NAME, source };
    if let Some(parent) = exclude.parent() {
        tokio::fs::create_dir_all(parent).await.map_err(fatal)?;
    }
    let separator = if current.is_empty() || current.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    tokio::fs::write(&exclude, format!("{current}{separator}{line}\n"))
        .await
        .map_err(fatal)
}

#[async_trait::async_trait]
impl Tool for WorktreeCreate {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        codaris_catalogue::WORKTREE_CREATE.description
    }

    fn schema(&self) -> Value {
        codaris_catalogue::WORKTREE_CREATE.schema()
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let branch = required_string(args, "branch")?;
        let worktree = create_worktree(ctx, branch).await?;
        // A reused worktree may be a link planted anywhere; move only into the fence.
        let real = std::fs::canonicalize(&worktree.path).unwrap_or_else(|_| worktree.path.clone());
        if ctx.fence.locate(&real).is_none() {
            return Err(ToolError::model(format!(
                "{NAME}: the worktree `{}` lies outside the allowed roots; the session stays where it is",
                real.display()
            )));
        }
        let how = match &worktree.base {
            Some(base) => format!("created from `{base}`"),
            None => "reused".to_owned(),
        };
        Ok(ToolOutput::text(format!(
            "worktree `{}` on branch `{}` ({how}); the session now works there: relative paths and commands start in it",
            real.display(),
            worktree.branch
        ))
        .moving_session_to(real))
    }
}
