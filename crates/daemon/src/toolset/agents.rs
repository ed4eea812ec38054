//! Finding the agent definitions a session's `spawn_agent` may name: the built-in `general`,
//! the user's (`<config dir>/agents/*.md`) and the project's (`<cwd>/.codaris/agents/*.md`);
//! a project's definition wins over the user's of the same name, which wins over the built-in.
//!
//! A project's files are the repository's, so what a clone holds cannot make the daemon read
//! beyond it: a definition, the `agents` directory or `.codaris` that is a symbolic link is
//! left out with a problem saying so (a link could name a file the fence keeps from the model,
//! whose text would become a child's instructions), as is a file over
//! [`DEFINITION_MAX_BYTES`] or one that is not a regular file.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use codaris_config::agents::{
    AgentDefinition, AgentSource, DEFINITION_MAX_BYTES, general, parse_definition,
};

/// How many definition files one directory may hold before the rest are left out.
const MAX_FILES: usize = 256;

/// The definitions found, and why any file was left out.
#[derive(Debug, Default)]
pub struct Found {
    /// By name, once each, in name order.
    pub agents: Vec<AgentDefinition>,
    /// `path: reason`, for every file left out.
    pub problems: Vec<String>,
    /// Where each found definition came from (`None`: built in), by name.
    pub paths: Vec<(String, Option<PathBuf>)>,
}

impl Found {
    /// The definition named `name`.
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// The file `name` came from; `None` when built in or unknown.
    pub fn path_of(&self, name: &str) -> Option<&Path> {
        self.paths
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, p)| p.as_deref())
    }
}

/// The built-in definition and the user's in `user_dir`, with no project's.
pub fn find_user(user_dir: Option<&Path>) -> Found {
    let mut found = Found::default();
    put(&mut found, general(), None);
    if let Some(dir) = user_dir {
        read_dir(&mut found, dir, AgentSource::User);
    }
    sorted(found)
}

/// Every definition a session in `cwd` can name, with `user_dir` the user's directory.
pub fn find(user_dir: Option<&Path>, cwd: &Path) -> Found {
    let mut found = find_user(user_dir);
    let project = cwd.join(".codaris");
    // The project's own directories are judged as they are, not through links.
    for part in [&project, &project.join("agents")] {
        match std::fs::symlink_metadata(part) {
            Ok(meta) if meta.file_type().is_symlink() => {
                found.problems.push(format!(
                    "{}: a symbolic link; a project's agent definitions are read only from its own directory",
                    part.display()
                ));
                return sorted(found);
            }
            Ok(_) => {}
            Err(_) => return sorted(found),
        }
    }
    read_dir(&mut found, &project.join("agents"), AgentSource::Project);
    sorted(found)
}

fn sorted(mut found: Found) -> Found {
    found.agents.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// Puts `agent` in, replacing one of the same name from a weaker source.
fn put(found: &mut Found, agent: AgentDefinition, path: Option<PathBuf>) {
    match found.agents.iter().position(|a| a.name == agent.name) {
        Some(at) if found.agents[at].source <= agent.source => {
            found.paths.retain(|(n, _)| *n != agent.name);
            found.paths.push((agent.name.clone(), path));
            found.agents[at] = agent;
        }
        Some(_) => {}
        None => {
            found.paths.push((agent.name.clone(), path));
            found.agents.push(agent);
        }
    }
}

fn read_dir(found: &mut Found, dir: &Path, source: AgentSource) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    files.sort();
    if files.len() > MAX_FILES {
        found.problems.push(format!(
            "{}: {} definitions; only the first {MAX_FILES} are read",
            dir.display(),
            files.len()
        ));
        files.truncate(MAX_FILES);
    }
    for path in files {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let parsed = read_definition(&path)
            .and_then(|text| parse_definition(&stem, &text, source).map_err(|e| e.to_string()));
        match parsed {
            Ok(agent) => put(found, agent, Some(path)),
            Err(reason) => found.problems.push(format!("{}: {reason}", path.display())),
        }
    }
}

/// A definition file's text: a regular file, not a link, at most [`DEFINITION_MAX_BYTES`].
fn read_definition(path: &Path) -> Result<String, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(
            (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK)
                .bits()
                .cast_signed(),
        )
        .open(path)
        .map_err(|err| match err.raw_os_error() {
            Some(code) if code == rustix::io::Errno::LOOP.raw_os_error() => {
                "a symbolic link; agent definitions are read only as regular files".to_owned()
            }
            _ => err.to_string(),
        })?;
    let meta = file.metadata().map_err(|err| err.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".to_owned());
    }
    let mut text = String::new();
    file.take(DEFINITION_MAX_BYTES as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|err| err.to_string())?;
    if text.len() > DEFINITION_MAX_BYTES {
        return Err(format!(
            "over {DEFINITION_MAX_BYTES} bytes; a definition is a page, not a corpus"
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn the_project_wins_over_the_user_who_wins_over_the_builtin() {
        let temp = tempfile::tempdir().unwrap();
        let user = temp.path().join("config/agents");
        let project = temp.path().join("proj");
        write(
            &user.join("general.md"),
            "---\ndescription: mine\n---\nuser general",
        );
        write(
            &user.join("reviewer.md"),
            "---\ndescription: user reviewer\n---\n",
        );
        write(
            &project.join(".codaris/agents/reviewer.md"),
            "---\ndescription: project reviewer\ntools: read_file\n---\nbe strict",
        );
        write(
            &project.join(".codaris/agents/broken.md"),
            "no front matter",
        );
        let found = find(Some(&user), &project);
        let names: Vec<&str> = found.agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["general", "reviewer"]);
        assert_eq!(found.get("general").unwrap().instructions, "user general");
        let reviewer = found.get("reviewer").unwrap();
        assert_eq!(reviewer.description, "project reviewer");
        assert_eq!(reviewer.source, AgentSource::Project);
        assert_eq!(
            found.path_of("reviewer"),
            Some(project.join(".codaris/agents/reviewer.md").as_path())
        );
        assert_eq!(found.problems.len(), 1, "{:?}", found.problems);
        assert!(found.problems[0].contains("broken.md"));
    }

    /// A clone cannot make a secret file a child's instructions: a definition, the agents
    /// directory or `.codaris` that is a link is left out and named.
    #[test]
    fn links_in_a_project_are_left_out() {
        let temp = tempfile::tempdir().unwrap();
        let secret = temp.path().join("secret.md");
        write(&secret, "---\ndescription: secret\n---\nthe private key");
        let project = temp.path().join("proj");
        std::fs::create_dir_all(project.join(".codaris/agents")).unwrap();
        symlink(&secret, project.join(".codaris/agents/evil.md")).unwrap();
        let found = find(None, &project);
        assert!(found.get("evil").is_none());
        assert!(
            found.problems[0].contains("symbolic link"),
            "{:?}",
            found.problems
        );

        let linked_dir = temp.path().join("linked");
        std::fs::create_dir_all(temp.path().join("elsewhere")).unwrap();
        write(
            &temp.path().join("elsewhere/agents/evil.md"),
            "---\ndescription: x\n---\n",
        );
        std::fs::create_dir_all(&linked_dir).unwrap();
        symlink(temp.path().join("elsewhere"), linked_dir.join(".codaris")).unwrap();
        let found = find(None, &linked_dir);
        assert!(found.get("evil").is_none());
        assert!(
            found.problems[0].contains("symbolic link"),
            "{:?}",
            found.problems
        );
        assert_eq!(found.agents.len(), 1, "only the built-in general");
    }
}
