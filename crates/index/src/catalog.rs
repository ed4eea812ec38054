//! The JSON-lines formats of `codaris tools search --catalog` and `--queries`: pure types and
//! parsing. Reading the files is the caller's business.
//!
//! Both formats are contracts read by other tools: fields may be added, never renamed or dropped.
//! Unknown fields are ignored so that a newer file still parses.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::entry::{Entry, Kind, KindFilter};
use crate::error::IndexError;

/// One line of a catalogue file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogLine {
    /// The entry's name; MCP tools are `server__tool`.
    pub name: String,
    /// `core`, `mcp`, `skill` or `reference`.
    pub kind: Kind,
    /// The owning MCP server, for MCP tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Extra words people use for it.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// Argument names (optional; taken from `params` when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// The title the server publishes (optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The input parameters with their published descriptions (optional).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<CatalogParam>,
    /// Slash commands that gate it (optional).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slash: Vec<String>,
    /// Whether it is switched on (optional, default true).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub enabled: bool,
    /// For skills and references, the file to read (optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// One input parameter of a catalogue line: its name and what its server says it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogParam {
    /// The parameter's name.
    pub name: String,
    /// Its published description; empty when there is none.
    #[serde(default)]
    pub description: String,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

impl From<CatalogLine> for Entry {
    fn from(line: CatalogLine) -> Entry {
        let args = if line.args.is_empty() {
            line.params.iter().map(|p| p.name.clone()).collect()
        } else {
            line.args
        };
        let arg_descriptions = line
            .params
            .into_iter()
            .map(|p| p.description)
            .filter(|d| !d.trim().is_empty())
            .collect();
        Entry {
            name: line.name,
            kind: line.kind,
            server: line.server.filter(|s| !s.is_empty()),
            description: line.description,
            keywords: line.keywords,
            args,
            title: line.title.filter(|t| !t.trim().is_empty()),
            arg_descriptions,
            slash: line.slash,
            enabled: line.enabled,
            path: line.path,
        }
    }
}

/// One line of a query file. Only `query` is required; `kind` defaults to `any`. The evaluation
/// fields (`style`, `relevant`) are read when present.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryLine {
    /// The words searched for.
    pub query: String,
    /// The kind filter.
    #[serde(default)]
    pub kind: KindFilter,
    /// For evaluation: how the query is phrased (`paraphrase`, `goal`, `keyword`, `typo`,
    /// `exact`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style: Option<String>,
    /// For evaluation: the names that answer it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relevant: Vec<String>,
}

/// Parses a catalogue file's text into entries. Blank lines and lines starting with `#` are
/// skipped; a name may appear once; a server name may not contain `__`.
pub fn parse_catalog(text: &str) -> Result<Vec<Entry>, IndexError> {
    let mut entries = Vec::new();
    let mut first_seen: HashMap<String, usize> = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if skipped(raw) {
            continue;
        }
        let parsed: CatalogLine =
            serde_json::from_str(raw).map_err(|source| IndexError::CatalogLine { line, source })?;
        if parsed.name.trim().is_empty() {
            return Err(IndexError::EmptyName { line });
        }
        if let Some(server) = parsed.server.as_ref().filter(|s| s.contains("__")) {
            return Err(IndexError::ServerName {
                line,
                server: server.clone(),
            });
        }
        if let Some(&first_line) = first_seen.get(&parsed.name) {
            return Err(IndexError::DuplicateName {
                line,
                name: parsed.name,
                first_line,
            });
        }
        first_seen.insert(parsed.name.clone(), line);
        entries.push(Entry::from(parsed));
    }
    Ok(entries)
}

/// Parses a query file's text. Blank lines and lines starting with `#` are skipped.
pub fn parse_queries(text: &str) -> Result<Vec<QueryLine>, IndexError> {
    let mut queries = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        if skipped(raw) {
            continue;
        }
        let parsed: QueryLine =
            serde_json::from_str(raw).map_err(|source| IndexError::QueryLine {
                line: i + 1,
                source,
            })?;
        queries.push(parsed);
    }
    Ok(queries)
}

fn skipped(raw: &str) -> bool {
    let t = raw.trim();
    t.is_empty() || t.starts_with('#')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minimal_line_parses_with_defaults() {
        let entries = parse_catalog(
            "{\"name\": \"fetch__fetch\", \"kind\": \"mcp\", \"server\": \"fetch\", \"description\": \"Fetch a URL\", \"keywords\": [\"url\"], \"extra\": 1}\n",
        );
        let entries = entries.unwrap_or_default();
        assert_eq!(entries.len(), 1);
        assert!(
            entries
                .iter()
                .all(|e| e.enabled && e.server.as_deref() == Some("fetch"))
        );
    }

    #[test]
    fn errors_name_the_line() {
        let text =
            "\n{\"name\": \"a\", \"kind\": \"core\"}\n{\"name\": \"a\", \"kind\": \"core\"}\n";
        assert!(matches!(
            parse_catalog(text),
            Err(IndexError::DuplicateName {
                line: 3,
                first_line: 2,
                ..
            })
        ));
        assert!(matches!(
            parse_catalog("{\"name\": \"a\", \"kind\": \"tool\"}"),
            Err(IndexError::CatalogLine { line: 1, .. })
        ));
        assert!(matches!(
            parse_queries("{\"query\": \"x\"}\n{\"kind\": \"any\"}"),
            Err(IndexError::QueryLine { line: 2, .. })
        ));
    }

    #[test]
    fn query_lines_default_to_any() {
        let q = parse_queries("{\"query\": \"lint\", \"relevant\": [\"lint_pipeline\"]}");
        let q = q.unwrap_or_default();
        assert_eq!(q.first().map(|q| q.kind), Some(KindFilter::Any));
    }
}
