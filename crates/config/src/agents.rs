//! Agent definitions: what a subagent `spawn_agent` starts is told and may use.
//!
//! A definition is a Markdown file with a front matter block, the way Claude Code keeps its
//! subagents, so a team's existing files read the same:
//!
//! ```text
//! ---
//! name: reviewer
//! description: Reviews a change for correctness and says what to fix
//! tools: read_file, grep, glob
//! disallowed_tools: [run_command]
//! model: gpt-5-mini
//! ---
//! You review changes. Read the files named in the task, then report ...
//! ```
//!
//! `tools` and `disallowed_tools` only ever remove tools from the parent's set (the policy
//! applies them, `Task::narrowed`); the body is the child's instructions. Pure: text in,
//! definition out; the daemon finds the files (`<config dir>/agents`, `<project>/.codaris/agents`).

use crate::front_matter;

/// The longest definition file read: anything longer is not a definition someone wrote.
pub const DEFINITION_MAX_BYTES: usize = 64 * 1024;

/// The longest agent name.
pub const NAME_MAX_CHARS: usize = 64;

/// Where a definition came from; a project's wins over the user's, which wins over the
/// built-in one of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AgentSource {
    Builtin,
    User,
    Project,
}

impl AgentSource {
    pub const fn as_str(self) -> &'static str {
        match self {
            AgentSource::Builtin => "builtin",
            AgentSource::User => "user",
            AgentSource::Project => "project",
        }
    }
}

/// One agent definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDefinition {
    /// What `spawn_agent`'s `agent` names it by.
    pub name: String,
    /// One line: what it is for (the model reads it to choose one).
    pub description: String,
    /// What the child is told beyond the task's prompt.
    pub instructions: String,
    /// Only these of the parent's tools; `None`: all of them.
    pub tools: Option<Vec<String>>,
    /// Never these.
    pub disallowed_tools: Vec<String>,
    /// The model the child asks, as `switch_model` names one; `None`: the parent's.
    pub model: Option<String>,
    pub source: AgentSource,
}

/// The built-in definition every daemon has.
pub fn general() -> AgentDefinition {
    AgentDefinition {
        name: "general".to_owned(),
        description: "A general-purpose subagent for a self-contained task: it has the parent's tools (less those a subagent never gets) and reports back".to_owned(),
        instructions: "You are a subagent: another agent gave you one self-contained task. Do it with the tools you have, then answer with a short report of what you did and found; the report is all your parent reads. You cannot ask the person questions.".to_owned(),
        tools: None,
        disallowed_tools: Vec::new(),
        model: None,
        source: AgentSource::Builtin,
    }
}

/// Why a definition file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentDefinitionError {
    #[error("it does not start with a front matter block (`---` on the first line)")]
    NoFrontMatter,
    #[error("its front matter block has no closing `---`")]
    Unterminated,
    #[error("its front matter has no `description:`")]
    NoDescription,
    #[error(
        "`{name}` is not an agent name (1 to {NAME_MAX_CHARS} of a-z, 0-9, `-`, `_`, starting with a letter or digit)"
    )]
    BadName { name: String },
    #[error("`{key}` lists `{item}`, which is not a tool name")]
    BadTool { key: &'static str, item: String },
    #[error("it is {bytes} bytes; a definition is at most {DEFINITION_MAX_BYTES}")]
    TooLong { bytes: usize },
}

/// True for a name `spawn_agent`'s `agent` can give.
pub fn is_agent_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name.chars().count() <= NAME_MAX_CHARS
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// Reads a definition file's text; `stem` (the file name without `.md`) names it when its
/// front matter has no `name:`.
pub fn parse_definition(
    stem: &str,
    text: &str,
    source: AgentSource,
) -> Result<AgentDefinition, AgentDefinitionError> {
    if text.len() > DEFINITION_MAX_BYTES {
        return Err(AgentDefinitionError::TooLong { bytes: text.len() });
    }
    if !front_matter::opens(text) {
        return Err(AgentDefinitionError::NoFrontMatter);
    }
    let (block, body) = front_matter::split(text).ok_or(AgentDefinitionError::Unterminated)?;
    let fields = front_matter::fields(block);
    let field = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let text_of = |key: &str| {
        field(key)
            .map(|v| front_matter::unquote(v.text.trim()).trim().to_owned())
            .filter(|t| !t.is_empty())
    };
    let name = text_of("name").unwrap_or_else(|| stem.to_owned());
    if !is_agent_name(&name) {
        return Err(AgentDefinitionError::BadName { name });
    }
    let description = text_of("description").ok_or(AgentDefinitionError::NoDescription)?;
    let list = |key: &'static str| -> Result<Option<Vec<String>>, AgentDefinitionError> {
        let Some(value) = field(key) else {
            return Ok(None);
        };
        let inline = front_matter::unquote(value.text.trim());
        let inline = inline.strip_prefix('[').unwrap_or(inline);
        let inline = inline.strip_suffix(']').unwrap_or(inline);
        let mut items = Vec::new();
        for item in inline
            .split(',')
            .chain(value.items.iter().map(String::as_str))
        {
            let item = front_matter::unquote(item.trim()).trim();
            if item.is_empty() {
                continue;
            }
            let tool_like = item
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            if !tool_like {
                return Err(AgentDefinitionError::BadTool {
                    key,
                    item: item.to_owned(),
                });
            }
            if !items.iter().any(|i| i == item) {
                items.push(item.to_owned());
            }
        }
        Ok(Some(items))
    };
    Ok(AgentDefinition {
        name,
        description: one_line(&description),
        instructions: body.trim().to_owned(),
        tools: list("tools")?,
        disallowed_tools: list("disallowed_tools")?
            .or(list("disallowedTools")?)
            .unwrap_or_default(),
        model: text_of("model").filter(|m| m != "inherit"),
        source,
    })
}

/// The text on one line, control characters dropped, so a listing cannot be rewritten by it.
fn one_line(text: &str) -> String {
    text.split_whitespace()
        .map(|w| w.chars().filter(|c| !c.is_control()).collect::<String>())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_claude_code_style_definition_reads_whole() {
        let text = "---\nname: reviewer\ndescription: >\n  Reviews a change\n  and reports\ntools: read_file, grep\ndisallowed_tools:\n  - run_command\n  - \"write\"\nmodel: gpt-5-mini\ncolor: blue\n---\nYou review changes.\n\nBe brief.\n";
        let parsed = parse_definition("ignored", text, AgentSource::Project).unwrap();
        assert_eq!(
            parsed,
            AgentDefinition {
                name: "reviewer".to_owned(),
                description: "Reviews a change and reports".to_owned(),
                instructions: "You review changes.\n\nBe brief.".to_owned(),
                tools: Some(vec!["read_file".to_owned(), "grep".to_owned()]),
                disallowed_tools: vec!["run_command".to_owned(), "write".to_owned()],
                model: Some("gpt-5-mini".to_owned()),
                source: AgentSource::Project,
            }
        );
    }

    #[test]
    fn the_file_names_it_without_a_name_and_inherit_keeps_the_parents_model() {
        let parsed = parse_definition(
            "checker",
            "---\ndescription: checks\nmodel: inherit\ntools: []\n---\n",
            AgentSource::User,
        )
        .unwrap();
        assert_eq!(parsed.name, "checker");
        assert_eq!(parsed.model, None);
        assert_eq!(
            parsed.tools,
            Some(Vec::new()),
            "an empty list keeps nothing"
        );
        assert_eq!(parsed.instructions, "");
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        let err = |stem: &str, text: &str| {
            parse_definition(stem, text, AgentSource::User)
                .unwrap_err()
                .to_string()
        };
        assert!(err("a", "no front matter").contains("front matter"));
        assert!(err("a", "---\ndescription: x\n").contains("closing"));
        assert!(err("a", "---\nname: a\n---\n").contains("`description:`"));
        assert!(err("a", "---\nname: ../etc\ndescription: x\n---\n").contains("not an agent name"));
        assert!(err("Bad Name", "---\ndescription: x\n---\n").contains("not an agent name"));
        assert!(
            err(
                "a",
                "---\ndescription: x\ntools: read_file; rm -rf /\n---\n"
            )
            .contains("not a tool name")
        );
        let long = format!(
            "---\ndescription: x\n---\n{}",
            "a".repeat(DEFINITION_MAX_BYTES)
        );
        assert!(err("a", &long).contains("at most"));
    }

    #[test]
    fn a_description_is_one_line_whatever_the_file_holds() {
        let parsed = parse_definition(
            "a",
            "---\ndescription: \"two\u{1b}[2J words\"\n---\n",
            AgentSource::User,
        )
        .unwrap();
        assert_eq!(parsed.description, "two[2J words");
    }
}
