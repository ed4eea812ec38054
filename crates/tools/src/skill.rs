//! `load_skill`: a catalogued skill's full instructions by name, and the files beside it.
//!
//! The name is a key into the skills the daemon catalogued when it started, never part of a
//! path: `../x` or `/etc` is simply a name no skill has. The file is read through a fence whose
//! roots are the skills directories themselves (symlinks in them resolved once, here), so a
//! skill folder or file that is a symlink leading out of its skills directory is refused by the
//! open, not followed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use codaris_catalogue::limits::SKILL_NAME_MAX_CHARS;
use codaris_index::{Entry, Index, Kind, SearchOutcome, SearchRequest, Searcher};
use codaris_nextflow::files::Kind as FileKind;
use serde::Deserialize;
use serde_json::Value;

use crate::context::{Fence, ToolContext, resolve_existing};
use crate::files::fence::open;
use crate::files::human_size;
use crate::tool::{Tool, ToolError, ToolOutput};

const NAME: &str = codaris_catalogue::LOAD_SKILL.name;

/// The largest `SKILL.md` read, in bytes.
const MAX_SKILL_BYTES: u64 = 512 * 1024;
/// How deep the files beside a skill are listed.
const MAX_LIST_DEPTH: usize = 4;
/// The most files beside a skill listed.
const MAX_LISTED: usize = 100;
/// The most directory entries looked at for them: a skill folder holding a whole data set
/// costs a bounded walk, not a read of every name in it.
const MAX_VISITED: usize = 5_000;
/// How many near names an unknown name is answered with.
const CLOSEST: usize = 3;

/// One catalogued skill: its `SKILL.md`, beneath a skills directory as resolved.
#[derive(Debug, Clone)]
struct Skill {
    file: PathBuf,
}

/// Whether the catalogued entry of a name is switched on now (`codaris tools disable` switches
/// a skill off for search and for `load_skill` alike).
pub type SkillSwitch = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// `load_skill` over the skills the daemon catalogued.
pub struct LoadSkill {
    skills: BTreeMap<String, Skill>,
    /// The skills directories, resolved: the only roots a read may reach.
    fence: Fence,
    /// The skills by name and description, for the names nearest an unknown one.
    names: Index,
    /// `None`: every skill is on.
    switch: Option<SkillSwitch>,
}

impl std::fmt::Debug for LoadSkill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadSkill")
            .field("skills", &self.skills)
            .field("fence", &self.fence)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    name: String,
}

impl LoadSkill {
    /// The skills among `entries` (kind `skill`, as the skills scan made them) that lie in one
    /// of `dirs`; one outside every directory is left out.
    pub fn new(dirs: &[PathBuf], entries: &[Entry]) -> Self {
        let roots: Vec<(PathBuf, PathBuf)> = dirs
            .iter()
            .map(|dir| (dir.clone(), resolve_existing(dir)))
            .collect();
        let mut skills = BTreeMap::new();
        let mut listed = Vec::new();
        for entry in entries.iter().filter(|e| e.kind == Kind::Skill) {
            let Some(path) = entry.path.as_deref().map(Path::new) else {
                continue;
            };
            // Where the scan found it, re-rooted on the resolved directory: the fence compares
            // resolved paths, and the file's own links are the open's to judge.
            let Some(file) = roots
                .iter()
                .find_map(|(dir, real)| path.strip_prefix(dir).ok().map(|rest| real.join(rest)))
            else {
                continue;
            };
            skills.insert(entry.name.clone(), Skill { file });
            listed.push(Entry::new(
                entry.name.clone(),
                Kind::Skill,
                entry.description.clone(),
            ));
        }
        Self {
            skills,
            fence: Fence::new(roots.into_iter().map(|(_, real)| real)),
            names: Index::build(listed),
            switch: None,
        }
    }

    /// The same tool, refusing a skill `switch` says is off.
    #[must_use]
    pub fn with_switch(mut self, switch: SkillSwitch) -> Self {
        self.switch = Some(switch);
        self
    }

    /// The answer to `load_skill {name}`.
    pub fn load(&self, name: &str) -> Result<String, ToolError> {
        let name = name.trim();
        let Some(skill) = self.skills.get(name) else {
            return Err(self.unknown(name));
        };
        if self.switch.as_ref().is_some_and(|on| !on(name)) {
            return Err(ToolError::model(format!(
                "{NAME}: the skill `{name}` is switched off; only the user can switch it on"
            )));
        }
        let text = open::read_text(&self.fence, &skill.file, MAX_SKILL_BYTES).map_err(|err| {
            ToolError::model(format!("{NAME}: the skill `{name}` cannot be read: {err}"))
        })?;
        let (files, more) = skill
            .file
            .parent()
            .map(|dir| self.files_beside(dir, &skill.file))
            .unwrap_or_default();
        let mut out = format!(
            "skill `{name}` (`{}`), {} lines",
            skill.file.display(),
            text.lines().count()
        );
        if files.is_empty() {
            out.push_str("; no other files beside it\n");
        } else {
            let _ = writeln!(
                out,
                "; {}{} file{} beside it, to read with read_file:",
                if more { "more than " } else { "" },
                files.len(),
                if files.len() == 1 { "" } else { "s" }
            );
            for (path, len) in &files {
                let _ = writeln!(out, "- {} ({})", path.display(), human_size(*len));
            }
        }
        out.push('\n');
        out.push_str(&text);
        Ok(out)
    }

    /// The regular files under the skill's folder but `SKILL.md`, at most [`MAX_LISTED`] in
    /// name order, and whether there are more (or more than [`MAX_VISITED`] entries to look
    /// at), through the fence: a symlink is neither listed nor followed.
    fn files_beside(&self, dir: &Path, skill_file: &Path) -> (Vec<(PathBuf, u64)>, bool) {
        let mut found = Vec::new();
        let mut pending = vec![(dir.to_path_buf(), 0)];
        let mut visited = 0;
        let mut more = false;
        while let Some((at, depth)) = pending.pop() {
            let Ok(mut entries) = open::list(&self.fence, &at) else {
                continue;
            };
            visited += entries.len();
            if visited > MAX_VISITED {
                more = true;
                break;
            }
            entries.sort_by(|a, b| b.name.cmp(&a.name));
            for entry in entries {
                let path = at.join(&entry.name);
                match entry.stat.kind {
                    FileKind::File if path != skill_file => found.push((path, entry.stat.len)),
                    FileKind::Dir if depth < MAX_LIST_DEPTH => pending.push((path, depth + 1)),
                    _ => {}
                }
            }
        }
        found.sort();
        more |= found.len() > MAX_LISTED;
        found.truncate(MAX_LISTED);
        (found, more)
    }

    /// One line naming the catalogued skills nearest `name`.
    fn unknown(&self, name: &str) -> ToolError {
        let shown: String = name.chars().take(SKILL_NAME_MAX_CHARS).collect();
        if self.skills.is_empty() {
            return ToolError::model(format!(
                "{NAME}: no catalogued skill `{shown}`; no skills are catalogued (see `skills_dirs`)"
            ));
        }
        let mut searcher = Searcher::default();
        let closest: Vec<String> =
            match searcher.search(&self.names, &SearchRequest::new(&shown).limit(CLOSEST)) {
                SearchOutcome::Hits { hits, .. } => hits.into_iter().map(|h| h.name).collect(),
                SearchOutcome::NoHit { closest, .. } => closest,
                SearchOutcome::EmptyQuery | SearchOutcome::TooLong { .. } => Vec::new(),
            };
        let closest: Vec<String> = if closest.is_empty() {
            self.skills.keys().take(CLOSEST).cloned().collect()
        } else {
            closest
        };
        let closest: Vec<String> = closest.iter().map(|n| format!("`{n}`")).collect();
        ToolError::model(format!(
            "{NAME}: no catalogued skill `{shown}`; the closest: {}",
            closest.join(", ")
        ))
    }
}

#[async_trait::async_trait]
impl Tool for LoadSkill {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::LOAD_SKILL
    }

    async fn call(&self, _ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let args =
            Args::deserialize(args).map_err(|err| ToolError::model(format!("{NAME}: {err}")))?;
        self.load(&args.name).map(ToolOutput::text)
    }
}

#[cfg(test)]
#[path = "skill_tests.rs"]
mod tests;
