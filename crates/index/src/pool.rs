//! Searchers kept for reuse by callers that search from many threads: a [`Searcher`] owns
//! scratch memory sized to the index, so a long-lived caller hands one back after each search
//! instead of growing a new one.

use std::sync::{Mutex, PoisonError};

use crate::search::Searcher;

/// A bounded pool of [`Searcher`]s. More concurrent searches than it keeps each make a fresh one.
#[derive(Debug)]
pub struct SearcherPool {
    kept: Mutex<Vec<Searcher>>,
    max: usize,
}

impl SearcherPool {
    /// A pool that keeps at most `max` searchers between searches.
    pub fn new(max: usize) -> SearcherPool {
        SearcherPool {
            kept: Mutex::new(Vec::new()),
            max,
        }
    }

    /// Runs `f` with a searcher from the pool (or a fresh one), then keeps it if there is room.
    pub fn with<T>(&self, f: impl FnOnce(&mut Searcher) -> T) -> T {
        let mut searcher = self.lock().pop().unwrap_or_default();
        let answer = f(&mut searcher);
        let mut kept = self.lock();
        if kept.len() < self.max {
            kept.push(searcher);
        }
        answer
    }

    /// A panic inside a search leaves the searcher's buffers reset on next use, so a poisoned
    /// lock is still a usable pool.
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Searcher>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{Entry, Kind};
    use crate::index::Index;
    use crate::request::SearchRequest;

    #[test]
    fn a_pool_keeps_at_most_its_size_and_answers_like_a_searcher() {
        let index = Index::build(vec![Entry::new("read_file", Kind::Core, "Read a file.")]);
        let pool = SearcherPool::new(1);
        let names = |pool: &SearcherPool| {
            pool.with(|s| {
                s.search(&index, &SearchRequest::new("read"))
                    .hits()
                    .iter()
                    .map(|h| h.name.clone())
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(names(&pool), ["read_file"]);
        // A search inside a search takes a second searcher; only one is kept afterwards.
        pool.with(|_| pool.with(|_| ()));
        assert_eq!(pool.lock().len(), 1);
        assert_eq!(names(&pool), ["read_file"]);
    }
}
