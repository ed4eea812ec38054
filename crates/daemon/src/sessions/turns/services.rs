//! What every turn of every session uses — the configuration, the ledger, the session store,
//! the tool registry, the built-in tools, the MCP servers, the provider settings — apart from
//! the live sessions, so a turn's host holds these and nothing of the sessions map that starts
//! the turns.

use std::sync::Arc;
use std::time::Duration;

use codaris_ledger::Ledger;

use crate::calls::builtins::Builtins;
use crate::config::Config;
use crate::sessions::store::SessionStore;
use crate::toolset::registry::ToolRegistry;

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("config", &self.config)
            .field("card_timeout", &self.card_timeout)
            .finish_non_exhaustive()
    }
}

/// The services of the turns, shared by every live session.
pub struct Services {
    /// The configuration in force: a committed one replaces it (`config_commit`).
    pub config: codaris_tools::Live<Config>,
    pub ledger: Arc<Ledger>,
    pub sessions: SessionStore,
    pub tools: Arc<ToolRegistry>,
    pub builtins: Builtins,
    /// The MCP servers and their tools.
    pub mcp: Arc<crate::mcp::McpHub>,
    pub card_timeout: Duration,
    /// The provider settings in force: a session's key comes from here when it first runs.
    pub providers: Arc<crate::sessions::providers::LiveProviders>,
    /// The live sessions, as subagents use them; set once the sessions exist.
    pub family: std::sync::OnceLock<Box<dyn super::family::Family>>,
}
