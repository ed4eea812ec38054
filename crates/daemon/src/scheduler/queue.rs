//! The jobs by when they are next due: the earliest found in O(log n), a job's time changed in
//! O(log n), so the scheduler arms one timer for the earliest and nothing else.

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;

use chrono::{DateTime, Utc};

/// Keys ordered by their due time.
#[derive(Debug)]
pub struct DueQueue<K> {
    by_time: BTreeSet<(DateTime<Utc>, K)>,
    due: HashMap<K, DateTime<Utc>>,
}

impl<K: Ord + Hash + Clone> Default for DueQueue<K> {
    fn default() -> Self {
        DueQueue {
            by_time: BTreeSet::new(),
            due: HashMap::new(),
        }
    }
}

impl<K: Ord + Hash + Clone> DueQueue<K> {
    /// `key` due at `at`; `None` takes it out (paused, deleted, never due again).
    pub fn set(&mut self, key: &K, at: Option<DateTime<Utc>>) {
        if let Some(old) = self.due.remove(key) {
            self.by_time.remove(&(old, key.clone()));
        }
        if let Some(at) = at {
            self.due.insert(key.clone(), at);
            self.by_time.insert((at, key.clone()));
        }
    }

    /// The earliest due key and its time.
    pub fn first(&self) -> Option<(DateTime<Utc>, &K)> {
        self.by_time.first().map(|(at, key)| (*at, key))
    }

    /// When `key` is due.
    pub fn due(&self, key: &K) -> Option<DateTime<Utc>> {
        self.due.get(key).copied()
    }

    /// Takes out every key due at `now` or before, earliest first.
    pub fn pop_due(&mut self, now: DateTime<Utc>) -> Vec<K> {
        let mut popped = Vec::new();
        while let Some((at, _)) = self.by_time.first()
            && *at <= now
        {
            if let Some((_, key)) = self.by_time.pop_first() {
                self.due.remove(&key);
                popped.push(key);
            }
        }
        popped
    }

    pub fn len(&self) -> usize {
        self.due.len()
    }

    pub fn is_empty(&self) -> bool {
        self.due.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_comes_first_and_a_changed_time_moves_its_key() {
        let t0 = Utc::now();
        let at = |m: i64| t0 + chrono::Duration::minutes(m);
        let mut queue = DueQueue::default();
        queue.set(&"b", Some(at(20)));
        queue.set(&"a", Some(at(10)));
        queue.set(&"c", Some(at(30)));
        assert_eq!(queue.first(), Some((at(10), &"a")));
        queue.set(&"a", Some(at(40)));
        assert_eq!(queue.first(), Some((at(20), &"b")));
        queue.set(&"b", None);
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.pop_due(at(35)), vec!["c"]);
        assert_eq!(queue.first(), Some((at(40), &"a")));
        assert!(queue.pop_due(at(39)).is_empty());
    }
}
