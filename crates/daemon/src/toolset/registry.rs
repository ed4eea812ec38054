//! The daemon's tool registry: every entry it can offer, which of them are switched off, and the
//! ranked index built from them.
//!
//! The index is immutable. Searches take a snapshot (`Arc<Index>`) and never wait for a change;
//! a change (a tool switched on or off) rebuilds the index whole from the entries and swaps it
//! in. Switched-on/off state is kept through the ledger's tool-state handle, durably, so it
//! survives a restart. Each search borrows a [`Searcher`] (it owns nucleo's scratch memory) from
//! a small pool instead of making one per call.
//!
//! Only entries with a real implementation are registered: the built-in tools the daemon runs
//! (`codaris-tools`), skills and references (read with `read_file`), and the tools of the MCP
//! servers that are ready, replaced whole whenever the MCP registry publishes a new set
//! ([`ToolRegistry::set_mcp`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Instant;

use codaris_index::{
    Entry, Explanation, Index, Kind, KindFilter, SearchOutcome, SearchRequest, Searcher,
    SearcherPool, Server,
};
use codaris_ledger::{Ledger, ToolState};

use crate::error::DaemonError;

/// Searchers kept for reuse; more concurrent searches than this make a fresh one.
const POOL_SIZE: usize = 8;

/// Every tool, skill and reference the daemon offers, and the index over them.
#[derive(Debug)]
pub struct ToolRegistry {
    /// Serialises changes so two toggles never lose one another; searches never take it.
    catalogue: Mutex<Catalogue>,
    current: RwLock<Arc<Index>>,
    searchers: SearcherPool,
    /// Entries in the current index, shared with `Status`.
    indexed: Arc<AtomicU32>,
}

#[derive(Debug)]
struct Catalogue {
    /// The entries as discovered, with their default state.
    entries: Vec<Entry>,
    /// Names switched on or off by the user, overriding the default.
    switched: BTreeMap<String, bool>,
    store: Option<ToolState>,
    /// The MCP servers whose tools are among the entries, with their keywords.
    servers: Vec<Server>,
}

impl Catalogue {
    fn build(&self) -> Index {
        let entries = self
            .entries
            .iter()
            .map(|entry| {
                let mut entry = entry.clone();
                if let Some(&enabled) = self.switched.get(&entry.name) {
                    entry.enabled = enabled;
                }
                entry
            })
            .collect();
        Index::build_with_servers(entries, &self.servers)
    }

    /// Rebuilds and swaps the index after a change of the entries.
    fn swap(&self, registry: &ToolRegistry, why: &str) {
        let started = Instant::now();
        let index = self.build();
        let entries = count(&index);
        *registry
            .current
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(index);
        registry.indexed.store(entries, Ordering::Relaxed);
        tracing::info!(
            entries,
            micros = started.elapsed().as_micros() as u64,
            why,
            "tool index rebuilt and swapped"
        );
    }
}

impl ToolRegistry {
    /// Builds the first index from `entries`, with the switched state kept in `store` (if any).
    pub fn new(entries: Vec<Entry>, store: Option<ToolState>) -> Result<Self, DaemonError> {
        let switched = match &store {
            Some(store) => {
                let (mut switched, corrupt) = store.switched()?;
                for bad in corrupt {
                    // A switch that cannot be read may have been `off`: the safe reading is off.
                    tracing::warn!(%bad, "a tool's switch does not read as on or off; it counts as off");
                    switched.insert(bad.key, false);
                }
                switched
            }
            None => BTreeMap::new(),
        };
        let catalogue = Catalogue {
            entries,
            switched,
            store,
            servers: Vec::new(),
        };
        let started = Instant::now();
        let index = catalogue.build();
        tracing::info!(
            entries = index.len(),
            switched_off = index.entries().iter().filter(|e| !e.enabled).count(),
            micros = started.elapsed().as_micros() as u64,
            "tool index built"
        );
        let indexed = Arc::new(AtomicU32::new(count(&index)));
        Ok(Self {
            catalogue: Mutex::new(catalogue),
            current: RwLock::new(Arc::new(index)),
            searchers: SearcherPool::new(POOL_SIZE),
            indexed,
        })
    }

    /// Builds the index from `entries`, with the switched state kept in `ledger`.
    pub fn open(entries: Vec<Entry>, ledger: &Ledger) -> Result<Self, DaemonError> {
        Self::new(entries, Some(ledger.tool_state()?))
    }

    /// The number of entries in the current index, kept up to date across swaps.
    pub fn indexed(&self) -> Arc<AtomicU32> {
        self.indexed.clone()
    }

    /// The current index. Cheap; a later swap does not change the snapshot.
    pub fn snapshot(&self) -> Arc<Index> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Ranks the current index for `query`.
    pub fn search(&self, query: &str, kind: KindFilter, limit: usize) -> SearchOutcome {
        self.with_searcher(|searcher, index| {
            searcher.search(index, &SearchRequest::new(query).kind(kind).limit(limit))
        })
    }

    /// Ranks the index like [`Registry::search`] and explains why each hit ranked where it did,
    /// both from one snapshot of the index and one search.
    pub fn search_explained(
        &self,
        query: &str,
        kind: KindFilter,
        limit: usize,
    ) -> (SearchOutcome, Explanation) {
        self.with_searcher(|searcher, index| {
            let request = SearchRequest::new(query).kind(kind).limit(limit);
            let outcome = searcher.search(index, &request);
            let explained = searcher.explain_outcome(index, &request, &outcome);
            (outcome, explained)
        })
    }

    /// Runs `f` with a searcher from the pool and the current index.
    fn with_searcher<T>(&self, f: impl FnOnce(&mut Searcher, &Index) -> T) -> T {
        let index = self.snapshot();
        self.searchers.with(|searcher| f(searcher, &index))
    }

    /// Switches the entry called `name` on or off, records it, rebuilds and swaps the index, and
    /// returns the entry as it now is.
    #[tracing::instrument(skip(self))]
    pub fn set_enabled(&self, name: &str, enabled: bool) -> Result<Entry, DaemonError> {
        let mut catalogue = self
            .catalogue
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(found) = catalogue.entries.iter().find(|e| e.name == name) else {
            return Err(DaemonError::ToolNotFound {
                name: name.to_owned(),
            });
        };
        let mut entry = found.clone();
        entry.enabled = enabled;
        let now = catalogue
            .switched
            .get(name)
            .copied()
            .unwrap_or(found.enabled);
        if now == enabled {
            return Ok(entry);
        }
        // Durable before the index changes: a switch the caller is told of survives a restart.
        if let Some(store) = &catalogue.store {
            store.set(name, enabled)?;
        }
        catalogue.switched.insert(name.to_owned(), enabled);
        catalogue.swap(self, "a tool was switched");
        Ok(entry)
    }

    /// Replaces every MCP entry with `entries` and the MCP servers with `servers`, and swaps
    /// the rebuilt index in; answers whether anything changed (nothing is rebuilt otherwise).
    pub fn set_mcp(&self, entries: Vec<Entry>, servers: Vec<Server>) -> Result<bool, DaemonError> {
        let mut catalogue = self
            .catalogue
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let current: Vec<&Entry> = catalogue
            .entries
            .iter()
            .filter(|e| e.kind == Kind::Mcp)
            .collect();
        if current.len() == entries.len()
            && current.iter().zip(&entries).all(|(a, b)| *a == b)
            && catalogue.servers == servers
        {
            return Ok(false);
        }
        catalogue.entries.retain(|e| e.kind != Kind::Mcp);
        catalogue.entries.extend(entries);
        catalogue.servers = servers;
        catalogue.swap(self, "the MCP servers' tools changed");
        Ok(true)
    }

    /// The MCP servers whose tools are in the index.
    pub fn servers(&self) -> Vec<Server> {
        self.catalogue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .servers
            .clone()
    }
}

fn count(index: &Index) -> u32 {
    u32::try_from(index.len()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use codaris_index::Kind;

    use super::*;

    fn skill(name: &str, description: &str) -> Entry {
        let mut entry = Entry::new(name, Kind::Skill, description);
        entry.path = Some(format!("/skills/{name}/SKILL.md"));
        entry
    }

    fn names(outcome: &SearchOutcome) -> Vec<String> {
        outcome.hits().iter().map(|h| h.name.clone()).collect()
    }

    #[test]
    fn a_switched_off_entry_leaves_search_and_comes_back() -> Result<(), DaemonError> {
        let registry = ToolRegistry::new(
            vec![
                skill("debugging", "Debug a failed Nextflow run"),
                skill("modules", "Write an nf-core module"),
            ],
            None,
        )?;
        let before = registry.snapshot();
        assert_eq!(
            names(&registry.search("debug nextflow run", KindFilter::Skill, 5)),
            ["debugging"]
        );
        let entry = registry.set_enabled("debugging", false)?;
        assert!(!entry.enabled);
        assert!(
            !names(&registry.search("debug nextflow run", KindFilter::Any, 5))
                .contains(&"debugging".to_owned())
        );
        // A snapshot taken before the swap is unchanged; the index still lists the entry.
        assert!(before.get("debugging").is_some_and(|e| e.enabled));
        assert!(
            registry
                .snapshot()
                .get("debugging")
                .is_some_and(|e| !e.enabled)
        );
        assert_eq!(registry.indexed().load(Ordering::Relaxed), 2);
        registry.set_enabled("debugging", true)?;
        assert_eq!(
            names(&registry.search("debug nextflow run", KindFilter::Skill, 5)),
            ["debugging"]
        );
        assert!(matches!(
            registry.set_enabled("nope", true),
            Err(DaemonError::ToolNotFound { .. })
        ));
        Ok(())
    }

    #[test]
    fn switched_state_survives_a_new_registry() -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let path = temp.path().join("ledger");
        let entries = vec![skill("debugging", "Debug a failed Nextflow run")];
        {
            let ledger = Ledger::open(&path)?;
            ToolRegistry::open(entries.clone(), &ledger)?.set_enabled("debugging", false)?;
        }
        let ledger = Ledger::open(&path)?;
        let again = ToolRegistry::open(entries, &ledger)?;
        assert!(
            again
                .snapshot()
                .get("debugging")
                .is_some_and(|e| !e.enabled)
        );
        Ok(())
    }
}
