//! `worktree_create`: a feature worktree of the session's repository, from origin's default
//! branch, for the session to move into.
//!
//! Worktrees live in `<repo>/.worktrees/<branch>` (slashes become `-`), inside the repository
//! and so inside the fence the session already has; `.worktrees/` is added to the repository's
//! `info/exclude` so the main checkout does not list them as untracked. The tool reports the
//! path and asks for the move in its output's `session_cwd`; the daemon owns sessions and
//! carries it out.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::args::required_string;
use super::pools::ShellPools;
use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};

mod git;

use git::{Git, Reach};

const NAME: &str = codaris_catalogue::WORKTREE_CREATE.name;
const DIR: &str = ".worktrees";

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
#[derive(Debug, Clone, Default)]
pub struct WorktreeCreate {
    /// Where git starts as one of the session's processes, in its sandbox (see `git.rs`);
    /// without, git is a plain child of the daemon, its repository's hooks and drivers
    /// switched off all the same.
    pools: Option<Arc<ShellPools>>,
}

impl WorktreeCreate {
    /// Git started in the sessions' sandboxes of `pools`.
    #[must_use]
    pub fn with_pools(mut self, pools: Arc<ShellPools>) -> Self {
        self.pools = Some(pools);
        self
    }
}

/// Creates (or finds) the worktree of `branch` for the repository around `ctx.cwd`.
/// Git runs as one of the session's processes of `pools` when given (see `git.rs`).
pub async fn create_worktree(
    ctx: &ToolContext,
    branch: &str,
    pools: Option<&ShellPools>,
) -> Result<Worktree, ToolError> {
    let pool = pools
        .map(|pools| pools.pool(&ctx.session_id))
        .transpose()
        .map_err(|error| error.into_tool_error(NAME))?;
    let git = Git {
        pool,
        roots: ctx.fence.roots().to_vec(),
    };
    if branch.starts_with('-') || branch.trim().is_empty() {
        return Err(ToolError::model(format!(
            "`branch` `{branch}` is not a branch name"
        )));
    }
    git.run(
        &ctx.cwd,
        &["check-ref-format", "--branch", branch],
        Reach::Repository,
    )
    .await
    .map_err(|_| ToolError::model(format!("`branch` `{branch}` is not a branch name")))?;
    let top = PathBuf::from(
        git.run(
            &ctx.cwd,
            &["rev-parse", "--show-toplevel"],
            Reach::Repository,
        )
        .await?,
    );
    // The worktree is written into the common git dir too (`.git/worktrees/`): both must lie
    // in the fence, where a confined git may write.
    let common = git
        .run(
            &top,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
            Reach::Repository,
        )
        .await?;
    for place in [top.clone(), PathBuf::from(common)] {
        let real = std::fs::canonicalize(&place).unwrap_or(place);
        if ctx.fence.locate(&real).is_none() {
            return Err(ToolError::model(format!(
                "the repository `{}` is outside the allowed roots",
                real.display()
            )));
        }
    }
    let wanted = format!("branch refs/heads/{branch}");
    let listing = git
        .run(
            &top,
            &["worktree", "list", "--porcelain"],
            Reach::Repository,
        )
        .await?;
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
    git.fetch(&top, "origin").await?;
    let base = match git
        .run(
            &top,
            &["symbolic-ref", "--short", "refs/remotes/origin/HEAD"],
            Reach::Repository,
        )
        .await
    {
        Ok(base) => base,
        // A clone made before origin/HEAD was recorded: the usual names.
        Err(_) => default_guess(&git, &top).await?,
    };
    let path = top.join(DIR).join(branch.replace('/', "-"));
    let path_arg = path.to_string_lossy().into_owned();
    exclude_dir(ctx, &git, &top).await?;
    let local = git
        .run(
            &top,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("refs/heads/{branch}"),
            ],
            Reach::Repository,
        )
        .await;
    // Added without a checkout, then filled from inside it: the checkout reads the new
    // worktree's own configuration, which is read and neutralised first (see `git.rs`).
    let add: Vec<&str> = if local.is_ok() {
        vec![
            "worktree",
            "add",
            "--quiet",
            "--no-checkout",
            &path_arg,
            branch,
        ]
    } else {
        vec![
            "worktree",
            "add",
            "--quiet",
            "--no-checkout",
            "-b",
            branch,
            &path_arg,
            &base,
        ]
    };
    git.run(&top, &add, Reach::Repository).await?;
    git.run(&path, &["reset", "--quiet", "--hard"], Reach::Repository)
        .await?;
    Ok(Worktree {
        path,
        branch: branch.to_owned(),
        base: Some(base),
    })
}

async fn default_guess(git: &Git, top: &Path) -> Result<String, ToolError> {
    for candidate in ["origin/main", "origin/master"] {
        if git
            .run(
                top,
                &["rev-parse", "--verify", "--quiet", candidate],
                Reach::Repository,
            )
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

/// Keeps `.worktrees/` out of the main checkout's untracked files. The daemon writes the
/// file itself, so only where it really lies in the fence: not through a link (a command
/// could plant one to have the daemon append to any file).
async fn exclude_dir(ctx: &ToolContext, git: &Git, top: &Path) -> Result<(), ToolError> {
    let exclude = git
        .run(
            top,
            &["rev-parse", "--git-path", "info/exclude"],
            Reach::Repository,
        )
        .await?;
    let exclude = top.join(exclude);
    let outside = || {
        ToolError::model(format!(
            "the repository's `{}` is a link or lies outside the allowed roots",
            exclude.display()
        ))
    };
    if std::fs::symlink_metadata(&exclude).is_ok_and(|meta| meta.file_type().is_symlink()) {
        return Err(outside());
    }
    let parent = exclude.parent().map(crate::context::resolve_existing);
    if parent.is_none_or(|parent| ctx.fence.locate(&parent).is_none()) {
        return Err(outside());
    }
    // Read with no symlink followed anywhere along it (one swapped in since the check is
    // refused too).
    let read = exclude.clone();
    let current =
        match tokio::task::spawn_blocking(move || crate::files::fence::system::read_own(&read))
            .await
        {
            Ok(Ok(text)) => text.unwrap_or_default(),
            _ => return Err(outside()),
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
    let added = format!("{separator}{line}\n");
    // Appended through a descriptor opened with no link followed, so a link swapped in since
    // the read cannot send the line elsewhere.
    let written = tokio::task::spawn_blocking(move || {
        use std::io::Write as _;
        let mut options = std::fs::OpenOptions::new();
        options.append(true).create(true);
        crate::files::fence::system::open_own(&exclude, &mut options)?.write_all(added.as_bytes())
    })
    .await
    .map_err(std::io::Error::other)
    .and_then(|result| result);
    written.map_err(fatal)
}

#[async_trait::async_trait]
impl Tool for WorktreeCreate {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::WORKTREE_CREATE
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let branch = required_string(args, "branch")?;
        let worktree = create_worktree(ctx, branch, self.pools.as_deref()).await?;
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
