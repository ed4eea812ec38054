//! [`Live`]: a value the operator may change while the daemon runs (a committed
//! configuration, `config_commit`), read by every holder at the moment it needs it.

use std::sync::Arc;

use arc_swap::ArcSwap;

/// A shared, swappable value: every clone sees a [`Live::set`] at its next [`Live::get`], and a
/// reader holds the value it got for as long as it needs, whatever is set meanwhile (a call
/// decided under one allowlist runs under it). Reads take no lock.
pub struct Live<T>(Arc<ArcSwap<T>>);

impl<T> Live<T> {
    pub fn new(value: T) -> Self {
        Self(Arc::new(ArcSwap::from_pointee(value)))
    }

    /// The value in force now.
    pub fn get(&self) -> Arc<T> {
        self.0.load_full()
    }

    /// Puts `value` in force for every clone.
    pub fn set(&self, value: T) {
        self.0.store(Arc::new(value));
    }

    /// Whether `other` is a clone of this one (the same shared value).
    pub fn shares(&self, other: &Live<T>) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T> Clone for Live<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T: Default> Default for Live<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

/// Compared by the values in force, as the value itself would be.
impl<T: PartialEq> PartialEq for Live<T> {
    fn eq(&self, other: &Self) -> bool {
        *self.get() == *other.get()
    }
}

impl<T: Eq> Eq for Live<T> {}

impl<T: std::fmt::Debug> std::fmt::Debug for Live<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_clone_sees_a_set_and_a_held_value_stays() {
        let live = Live::new(vec!["test".to_owned()]);
        let clone = live.clone();
        let held = clone.get();
        live.set(vec!["slurm".to_owned()]);
        assert_eq!(*clone.get(), vec!["slurm".to_owned()]);
        assert_eq!(*held, vec!["test".to_owned()]);
        assert!(live.shares(&clone));
        assert!(!live.shares(&Live::new(Vec::new())));
    }
}
