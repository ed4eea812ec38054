//! What a compaction re-reads from outside the conversation (the plan documents, the
//! planner's checklist, the open background tasks), and the provider of a model
//! `compact_context` names.
//!
//! The files are in the session's workspace, which the model can write: each is opened without
//! following a link, must be a regular file with one link, and is read up to a cap, as project
//! instructions are.

use std::io::Read;
use std::path::Path;

use codaris_agent::ContextSection;
use codaris_tools::shell::{TaskPool, TaskStatus};

use crate::config::Config;
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

/// The configured model `wanted` names: a configured id (`[[models]]`, or the session's own
/// model), the same without its `provider/` prefix, or a part of exactly one of them.
pub(super) fn model_named(
    wanted: &str,
    session_model: Option<&str>,
    config: &Config,
) -> Result<String, String> {
    let mut known: Vec<&str> = config.models.iter().map(|m| m.name.as_str()).collect();
    known.extend(session_model);
    known.sort_unstable();
    known.dedup();
    let bare = |name: &str| name.rsplit('/').next().unwrap_or(name).to_owned();
    if let Some(exact) = known
        .iter()
        .find(|name| **name == wanted || bare(name) == wanted)
    {
        return Ok((*exact).to_owned());
    }
    let lower = wanted.to_ascii_lowercase();
    let parts: Vec<&&str> = known
        .iter()
        .filter(|name| name.to_ascii_lowercase().contains(&lower))
        .collect();
    match parts.as_slice() {
        [one] => Ok((**one).to_owned()),
        [] => Err(format!(
            "no configured model matches `{wanted}`; configured: {}",
            listed(&known)
        )),
        many => Err(format!(
            "`{wanted}` matches {} configured models ({}); name one",
            many.len(),
            listed(&many.iter().map(|n| **n).collect::<Vec<_>>())
        )),
    }
}

fn listed(names: &[&str]) -> String {
    if names.is_empty() {
        return "none".to_owned();
    }
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(models: &[&str]) -> Config {
        let mut config = crate::config::resolve(crate::config::Sources {
            state_dir: "/state".into(),
            home: None,
            file: None,
            config_dir: None,
            env: Default::default(),
            flags: Default::default(),
        })
        .unwrap();
        config.models = models
            .iter()
            .map(|name| crate::config::ModelConfig {
                name: (*name).to_owned(),
                multimodal: false,
            })
            .collect();
        config
    }

    #[test]
    fn a_model_is_named_by_its_id_its_bare_name_or_a_unique_part() {
        let config = config(&["anthropic/claude-haiku-4-5", "gpt-5-mini", "gpt-5"]);
        let named = |w: &str| model_named(w, Some("claude-sonnet-4-5"), &config);
        assert_eq!(named("gpt-5").unwrap(), "gpt-5");
        assert_eq!(
            named("claude-haiku-4-5").unwrap(),
            "anthropic/claude-haiku-4-5"
        );
        assert_eq!(named("haiku").unwrap(), "anthropic/claude-haiku-4-5");
        assert_eq!(named("sonnet").unwrap(), "claude-sonnet-4-5");
        let many = named("claude").unwrap_err();
        assert!(many.contains("matches 2 configured models"), "{many}");
        let none = named("llama").unwrap_err();
        assert!(
            none.starts_with("no configured model matches `llama`"),
            "{none}"
        );
    }

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
