//! The index of a session that has its own MCP servers (an editor's): the daemon's entries,
//! switched as they are, joined with its servers' tools, rebuilt only when either changed.
//! Another session never sees them: the daemon's index is left as it is.

use std::sync::{Arc, Mutex, PoisonError};

use codaris_index::{Index, KindFilter, SearchOutcome, SearchRequest, Searcher};

use crate::mcp::session::SessionMcp;
use crate::toolset::registry::ToolRegistry;

/// The daemon's index and the own servers' generation a joined index was built from.
pub struct Joined {
    daemon: Arc<Index>,
    generation: u64,
    index: Arc<Index>,
}

/// The session's index, joined again when the daemon's index or its servers changed.
pub fn joined(
    cache: &Mutex<Option<Joined>>,
    daemon: &Arc<Index>,
    tools: &ToolRegistry,
    own: &SessionMcp,
) -> Arc<Index> {
    // Read before the entries: a change while they are read rebuilds at the next call.
    let generation = own.generation();
    let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(joined) = cache.as_ref()
        && Arc::ptr_eq(&joined.daemon, daemon)
        && joined.generation == generation
    {
        return joined.index.clone();
    }
    let (own_entries, own_servers) = own.entries();
    let mut entries = daemon.entries().to_vec();
    entries.extend(own_entries);
    let mut servers = tools.servers();
    servers.extend(own_servers);
    let index = Arc::new(Index::build_with_servers(entries, &servers));
    *cache = Some(Joined {
        daemon: daemon.clone(),
        generation,
        index: index.clone(),
    });
    index
}

/// Ranks `index` as the daemon's search ranks its own.
pub fn search(index: &Index, query: &str, kind: KindFilter, limit: usize) -> SearchOutcome {
    Searcher::new().search(index, &SearchRequest::new(query).kind(kind).limit(limit))
}
