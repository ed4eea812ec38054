//! The built-in documentation's sections as an index of the tool index's own kind
//! (`codaris-index`): ranked as tools are, built once per process on the first search.

use std::collections::HashMap;
use std::sync::LazyLock;

use codaris_index::{Entry, Index, Kind, SearchOutcome, SearchRequest, SearcherPool};

use super::pages::PAGES;
use super::sections::{Section, split};

/// Searchers kept for reuse; more concurrent searches than this make a fresh one.
const POOL_SIZE: usize = 4;

/// Every section of every built-in page, and the index over them.
pub struct DocsIndex {
    sections: Vec<Section>,
    /// A section's name -> its place in `sections`.
    by_name: HashMap<String, usize>,
    index: Index,
    searchers: SearcherPool,
}

impl std::fmt::Debug for DocsIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DocsIndex")
            .field("sections", &self.sections.len())
            .finish_non_exhaustive()
    }
}

static DOCS: LazyLock<DocsIndex> = LazyLock::new(DocsIndex::build);

/// The one index of this process, built on first use.
pub fn docs() -> &'static DocsIndex {
    &DOCS
}

/// Builds the index on a blocking thread if it is not built yet: the first build takes
/// 12–24 ms, too long to hold one of the runtime's few worker threads.
pub async fn ready() {
    static BUILT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if BUILT.load(std::sync::atomic::Ordering::Acquire) {
        return;
    }
    // A failed join only means the build panicked; the next `docs()` would say so again.
    let _ = tokio::task::spawn_blocking(|| {
        LazyLock::force(&DOCS);
    })
    .await;
    BUILT.store(true, std::sync::atomic::Ordering::Release);
}

impl DocsIndex {
    fn build() -> Self {
        let mut sections = Vec::new();
        let mut entries = Vec::new();
        for page in PAGES {
            let split = split(page);
            let title = split.iter().find(|s| s.level == 1).map(|s| s.title.clone());
            entries.extend(split.iter().map(|s| entry_of(s, title.as_deref())));
            sections.extend(split);
        }
        let by_name = sections
            .iter()
            .enumerate()
            .map(|(at, s)| (s.name(), at))
            .collect();
        Self {
            index: Index::build(entries),
            sections,
            by_name,
            searchers: SearcherPool::new(POOL_SIZE),
        }
    }

    /// Every section, pages in the built-in order.
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// The section a search named (`mcp#adding-a-server`), exactly.
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.by_name.get(name).and_then(|&at| self.sections.get(at))
    }

    /// The sections ranked for `query`, best first, at most `limit`.
    pub fn search(&self, query: &str, limit: usize) -> SearchOutcome {
        self.searchers
            .with(|searcher| searcher.search(&self.index, &SearchRequest::new(query).limit(limit)))
    }
}

/// A section as the index ranks it: named as a read takes it, its heading and its page's
/// title (`title`) as the words people look for it by, its text as the description.
fn entry_of(section: &Section, title: Option<&str>) -> Entry {
    let mut entry = Entry::new(section.name(), Kind::Reference, section.text());
    entry.keywords = [Some(section.title.as_str()), title]
        .into_iter()
        .flatten()
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
        .collect();
    entry
}

#[cfg(test)]
mod tests {
    use super::*;

    fn top(query: &str) -> Vec<String> {
        docs()
            .search(query, 5)
            .hits()
            .iter()
            .map(|h| h.name.clone())
            .collect()
    }

    #[test]
    fn adding_an_mcp_server_finds_the_mcp_page_first() {
        let hits = top("add an MCP server");
        assert!(
            hits.first().is_some_and(|h| h.starts_with("mcp#")),
            "{hits:?}"
        );
    }

    #[test]
    fn every_section_is_in_the_index_under_the_name_a_read_takes() {
        let index = docs();
        for section in index.sections() {
            assert!(
                index.index.get(&section.name()).is_some(),
                "{}",
                section.name()
            );
            assert_eq!(index.section(&section.name()), Some(section));
        }
        assert_eq!(index.index.len(), index.sections().len());
    }
}
