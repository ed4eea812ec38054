//! What a compaction re-reads from outside the conversation: the plan documents, the
//! planner's checklist, the open background tasks.
//!
//! The files are in the session's workspace, which the model can write: each is opened without
//! following a link, must be a regular file with one link, and is read up to a cap, as project
//! instructions are.

use std::io::Read;
use std::path::Path;

use codaris_agent::ContextSection;
use codaris_tools::shell::{TaskPool, TaskStatus};

use crate::sessions::instructions::open_plain;

/// The most of one file a compaction brings back (the survivors' own budget cuts further).
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// The sections, in the order the model reads them: plan documents, the checklist, the open
/// background tasks. Absent parts give no section.
pub(super) fn sections(workspace: &Path, pool: Option<&TaskPool>) -> Vec<ContextSection> {
    let mut sections: Vec<ContextSection> = codaris_tools::plans::documents(workspace)
        .into_iter()
        .map(|plan| ContextSection {
            title: format!("Plan document `{}` (plan_read reads it)", plan.slug),
            body: plan.content,
        })
        .collect();
    if let Some(checklist) = read_plain(&workspace.join("plan.md")) {
        sections.push(ContextSection {
            title: "The planner's checklist".to_owned(),
            body: checklist,
        });
    }
    if let Some(pool) = pool {
        let open: Vec<String> = pool
            .list()
            .into_iter()
            .filter(|task| task.status == TaskStatus::Running)
            .map(|task| {
                format!(
                    "- `{}` running for {} s: {}",
                    task.task_id,
                    task.elapsed.as_secs(),
                    task.command
                )
            })
            .collect();
        if !open.is_empty() {
            sections.push(ContextSection {
                title: "Open background tasks (background_output reads them)".to_owned(),
                body: open.join("\n"),
            });
        }
    }
    sections
}

/// The text of `path` when it is a plain file, up to [`MAX_FILE_BYTES`].
fn read_plain(path: &Path) -> Option<String> {
    let (file, _) = open_plain(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    (!text.trim().is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_link_is_never_read() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "the key")?;
        let workspace = dir.path().join("ws");
        std::fs::create_dir(&workspace)?;
        std::os::unix::fs::symlink(&secret, workspace.join("plan.md"))?;
        assert!(sections(&workspace, None).is_empty());
        std::fs::remove_file(workspace.join("plan.md"))?;
        std::fs::write(workspace.join("plan.md"), "- [ ] tag the release\n")?;
        let read = sections(&workspace, None);
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].body, "- [ ] tag the release\n");
        Ok(())
    }
}
