//! How much heap an index holds: the benchmark checks it against the memory budget, and the
//! daemon may report it.

use crate::entry::Entry;
use crate::index::{Index, Posting};

impl Index {
    /// An estimate of the heap memory the index holds, in bytes.
    pub fn heap_bytes(&self) -> usize {
        let strings = |v: &[String]| v.iter().map(|s| s.capacity() + 24).sum::<usize>();
        let entries: usize = self
            .entries
            .iter()
            .map(|e| {
                std::mem::size_of::<Entry>()
                    + e.name.capacity()
                    + e.description.capacity()
                    + e.server.as_ref().map_or(0, String::capacity)
                    + e.path.as_ref().map_or(0, String::capacity)
                    + strings(&e.keywords)
                    + strings(&e.args)
                    + strings(&e.slash)
            })
            .sum();
        // A hash map slot costs its key and value plus about one control byte.
        let map = |keys: usize, slot: usize, n: usize| keys + n * (slot + 1);
        let names = map(
            self.names.keys().map(String::capacity).sum(),
            24 + 4,
            self.names.capacity(),
        );
        let bare = map(
            self.bare_names
                .iter()
                .map(|(k, v)| k.capacity() + v.capacity() * 4)
                .sum(),
            48,
            self.bare_names.capacity(),
        );
        let keys = map(
            self.name_keys
                .iter()
                .map(|(k, v)| k.capacity() + v.capacity() * 4)
                .sum(),
            48,
            self.name_keys.capacity(),
        );
        let terms = map(
            self.terms.keys().map(String::capacity).sum(),
            28,
            self.terms.capacity(),
        );
        let postings: usize = self
            .postings
            .iter()
            .map(|p| 24 + p.capacity() * std::mem::size_of::<Posting>())
            .sum();
        let synonyms = map(
            self.synonyms
                .iter()
                .map(|(k, v)| k.capacity() + v.capacity() * 4)
                .sum(),
            48,
            self.synonyms.capacity(),
        );
        entries
            + names
            + bare
            + keys
            + terms
            + postings
            + synonyms
            + self.idf.capacity() * 4
            + self.flags.capacity()
            + self.speller.heap_bytes()
    }
}
