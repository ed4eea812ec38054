//! The registry as the surface sees it: every tool that could be sent to the model (built-in
//! and MCP), whether it is switched on, and which one fetches URLs. Built once when the daemon
//! publishes a tool set, like the index, and read by every round.

use std::collections::HashMap;

use codaris_catalogue::{McpTool, ToolId};
use codaris_index::{Entry, Server};

/// One tool in the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryTool {
    /// The name the model calls it by.
    pub name: String,
    /// The MCP server that owns it, for MCP tools.
    pub server: Option<String>,
    /// False for a tool switched off in the Tools panel: never offered, never bound.
    pub enabled: bool,
    /// It takes a `url` argument: what makes an MCP server's tool its URL fetcher.
    pub takes_url: bool,
}

impl RegistryTool {
    /// An enabled tool with no server.
    pub fn builtin(name: impl Into<String>) -> RegistryTool {
        RegistryTool {
            name: name.into(),
            server: None,
            enabled: true,
            takes_url: false,
        }
    }

    /// An enabled tool of an MCP server, named `<server>__<tool>`.
    pub fn mcp(server: &str, tool: &str) -> RegistryTool {
        RegistryTool {
            name: McpTool::new(server, tool).map_or_else(
                || format!("{server}{}{tool}", codaris_catalogue::SEPARATOR),
                |t| t.called().to_owned(),
            ),
            server: Some(server.to_owned()),
            enabled: true,
            takes_url: false,
        }
    }
}

/// The registry view: tools in registry order, looked up by name.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    tools: Vec<RegistryTool>,
    by_name: HashMap<String, usize>,
    /// Each URL-fetching server's fetcher, in the order the servers were given.
    url_fetchers: Vec<usize>,
    /// The names of the switched-off tools, in registry order: what each round withholds.
    switched_off: Vec<String>,
}

impl Registry {
    /// Builds the view. A repeated name keeps its first place. `servers` give the MCP servers'
    /// own keywords, from which the URL fetcher is chosen: the first server (in the order given)
    /// with a keyword that says `url` (any case, as a whole keyword or one word of it), and of
    /// its enabled tools the first whose own name contains `fetch`, else its first enabled tool.
    pub fn new(tools: impl IntoIterator<Item = RegistryTool>, servers: &[Server]) -> Registry {
        let mut registry = Registry::default();
        for tool in tools {
            if !registry.by_name.contains_key(&tool.name) {
                registry
                    .by_name
                    .insert(tool.name.clone(), registry.tools.len());
                registry.tools.push(tool);
            }
        }
        registry.url_fetchers = servers
            .iter()
            .filter(|s| s.keywords.iter().any(|k| says_url(k)))
            .filter_map(|s| registry.fetcher_of(&s.name))
            .collect();
        registry.switched_off = registry
            .tools
            .iter()
            .filter(|t| !t.enabled)
            .map(|t| t.name.clone())
            .collect();
        registry
    }

    /// Builds the view from the index's entries: core and MCP entries are tools (skills and
    /// references are not), `enabled` carried over.
    pub fn from_entries(entries: &[Entry], servers: &[Server]) -> Registry {
        let tools = entries
            .iter()
            .filter(|e| e.kind.is_tool())
            .map(|e| RegistryTool {
                name: e.name.clone(),
                server: e.server.clone(),
                enabled: e.enabled,
                takes_url: e.args.iter().any(|a| a == "url"),
            });
        Registry::new(tools, servers)
    }

    fn fetcher_of(&self, server: &str) -> Option<usize> {
        let of_server: Vec<usize> = self
            .tools
            .iter()
            .enumerate()
            .filter(|(_, t)| t.enabled && t.server.as_deref() == Some(server))
            .map(|(i, _)| i)
            .collect();
        // The tool's own part of its name: `fetch` of `web__fetch`.
        let local_says_fetch = |i: &usize| match ToolId::parse(&self.tools[*i].name) {
            ToolId::Mcp(tool) => tool.tool().to_ascii_lowercase().contains("fetch"),
            other => other.as_str().to_ascii_lowercase().contains("fetch"),
        };
        // A tool that takes a `url` comes first, one called `…fetch…` among them first.
        let by_name = |i: &&usize| local_says_fetch(i);
        let takes_url = |i: &&usize| self.tools[**i].takes_url;
        of_server
            .iter()
            .filter(takes_url)
            .find(by_name)
            .or_else(|| of_server.iter().find(takes_url))
            .or_else(|| of_server.iter().find(by_name))
            .or(of_server.first())
            .copied()
    }

    /// How many tools the registry holds, switched-off ones included.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when the registry holds no tool.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&RegistryTool> {
        self.by_name.get(name).map(|i| &self.tools[*i])
    }

    /// The tools in registry order.
    pub fn tools(&self) -> &[RegistryTool] {
        &self.tools
    }

    /// The names of the tools switched off, in registry order.
    pub fn switched_off(&self) -> &[String] {
        &self.switched_off
    }

    /// The tool a pasted link forces, if some server fetches URLs.
    pub fn url_fetcher(&self) -> Option<&str> {
        self.url_fetchers
            .first()
            .map(|&i| self.tools[i].name.as_str())
    }

    /// The fetcher of each server whose keywords say `url`: what a pasted link binds.
    pub fn url_fetchers(&self) -> impl Iterator<Item = &str> {
        self.url_fetchers
            .iter()
            .map(|&i| self.tools[i].name.as_str())
    }
}

fn says_url(keyword: &str) -> bool {
    keyword
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| w.eq_ignore_ascii_case("url") || w.eq_ignore_ascii_case("urls"))
}
