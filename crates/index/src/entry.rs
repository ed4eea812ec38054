//! What the index holds: one [`Entry`] per tool, skill or reference, and the kind filter a search
//! narrows by.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::IndexError;

/// Where an entry comes from. Core and MCP entries are tools a turn can bind; skills and
/// references are documents the model reads with `read_file`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A tool built into Codaris.
    Core,
    /// A tool of an MCP server, named `<server>__<tool>`.
    Mcp,
    /// An instruction file under `skills/`.
    Skill,
    /// A vendored reference document.
    Reference,
}

impl Kind {
    /// The lowercase word used on the wire and in the model-facing text.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Core => "core",
            Kind::Mcp => "mcp",
            Kind::Skill => "skill",
            Kind::Reference => "reference",
        }
    }

    /// Whether entries of this kind are tools (and so could be bound), rather than documents.
    pub fn is_tool(self) -> bool {
        matches!(self, Kind::Core | Kind::Mcp)
    }

    /// This kind's bit in a document's flags byte (see [`KindFilter::mask`]).
    pub(crate) fn bit(self) -> u8 {
        match self {
            Kind::Core => 1,
            Kind::Mcp => 2,
            Kind::Skill => 4,
            Kind::Reference => 8,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Kind {
    type Err = IndexError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "core" => Ok(Kind::Core),
            "mcp" => Ok(Kind::Mcp),
            "skill" => Ok(Kind::Skill),
            "reference" => Ok(Kind::Reference),
            other => Err(IndexError::UnknownKind {
                kind: other.to_owned(),
            }),
        }
    }
}

/// The `kind` argument of `search_tools`: which entries a search may return.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KindFilter {
    /// Every entry.
    #[default]
    Any,
    /// Core and MCP tools.
    Tool,
    /// Built-in tools only.
    Core,
    /// MCP tools only.
    Mcp,
    /// Skills only.
    Skill,
    /// References only.
    Reference,
}

impl KindFilter {
    /// Whether an entry of `kind` passes this filter.
    pub fn admits(self, kind: Kind) -> bool {
        match self {
            KindFilter::Any => true,
            KindFilter::Tool => kind.is_tool(),
            KindFilter::Core => kind == Kind::Core,
            KindFilter::Mcp => kind == Kind::Mcp,
            KindFilter::Skill => kind == Kind::Skill,
            KindFilter::Reference => kind == Kind::Reference,
        }
    }

    /// The kind bits ([`Kind::bit`]) this filter admits, so a search filters a document by one
    /// byte instead of loading its entry. Agrees with [`KindFilter::admits`] (tested).
    pub(crate) fn mask(self) -> u8 {
        match self {
            KindFilter::Any => 0b1111,
            KindFilter::Tool => Kind::Core.bit() | Kind::Mcp.bit(),
            KindFilter::Core => Kind::Core.bit(),
            KindFilter::Mcp => Kind::Mcp.bit(),
            KindFilter::Skill => Kind::Skill.bit(),
            KindFilter::Reference => Kind::Reference.bit(),
        }
    }

    /// The lowercase word used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            KindFilter::Any => "any",
            KindFilter::Tool => "tool",
            KindFilter::Core => "core",
            KindFilter::Mcp => "mcp",
            KindFilter::Skill => "skill",
            KindFilter::Reference => "reference",
        }
    }
}

impl fmt::Display for KindFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for KindFilter {
    type Err = IndexError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "any" => Ok(KindFilter::Any),
            "tool" => Ok(KindFilter::Tool),
            "core" => Ok(KindFilter::Core),
            "mcp" => Ok(KindFilter::Mcp),
            "skill" => Ok(KindFilter::Skill),
            "reference" => Ok(KindFilter::Reference),
            other => Err(IndexError::UnknownKind {
                kind: other.to_owned(),
            }),
        }
    }
}

/// One thing search can find. The daemon builds these from the built-in tool specs, the MCP
/// registry and the skills folder; the index never looks anything up itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The name the model calls it by: `read_file`, `github__search_issues`, a skill's name.
    pub name: String,
    /// Core, MCP, skill or reference.
    pub kind: Kind,
    /// The MCP server that owns the tool, for MCP entries.
    pub server: Option<String>,
    /// One or more sentences saying what it does; the first line is shown to the model.
    pub description: String,
    /// A few extra words people use for it, ranked like a short second name.
    pub keywords: Vec<String>,
    /// The names of its arguments; they count a little, as a hint of what it acts on.
    pub args: Vec<String>,
    /// The title its server publishes beside the name (MCP `title`), ranked like a keyword.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What its arguments are, as its server describes them (input-schema `description`s), in
    /// no particular order; they count a little, like the argument names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arg_descriptions: Vec<String>,
    /// Slash commands that run this tool. A gated tool is found and described, never bound.
    pub slash: Vec<String>,
    /// A switched-off tool is kept in the index (so `codaris tools list` shows it) but never found.
    pub enabled: bool,
    /// For skills and references: the file to read with `read_file`.
    pub path: Option<String>,
}

impl Entry {
    /// An enabled entry with only a name, a kind and a description; the other fields are empty.
    pub fn new(name: impl Into<String>, kind: Kind, description: impl Into<String>) -> Self {
        Entry {
            name: name.into(),
            kind,
            server: None,
            description: description.into(),
            keywords: Vec::new(),
            args: Vec::new(),
            title: None,
            arg_descriptions: Vec::new(),
            slash: Vec::new(),
            enabled: true,
            path: None,
        }
    }

    /// Whether a search may bind this entry: a tool that no slash command gates.
    pub fn is_bindable(&self) -> bool {
        self.kind.is_tool() && self.slash.is_empty()
    }
}

/// An MCP server's own keywords, which count for every tool of that server (the fetch server's
/// `url` keyword is how "open this link" finds `fetch__fetch`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Server {
    /// The server's name, the part of its tools' names before `__`.
    pub name: String,
    /// Words that describe the whole server.
    pub keywords: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filters_mask_admits_exactly_the_kinds_it_admits() {
        let kinds = [Kind::Core, Kind::Mcp, Kind::Skill, Kind::Reference];
        let filters = [
            KindFilter::Any,
            KindFilter::Tool,
            KindFilter::Core,
            KindFilter::Mcp,
            KindFilter::Skill,
            KindFilter::Reference,
        ];
        for filter in filters {
            for kind in kinds {
                assert_eq!(
                    filter.mask() & kind.bit() != 0,
                    filter.admits(kind),
                    "{filter} {kind}"
                );
            }
        }
    }
}
