//! The ledger view `evaluate` consults: grants indexed once, looked up in time proportional to
//! the length of the path asked about rather than the number of grants.
//!
//! Path-scoped grants live in a trie of path components, so finding every grant that covers
//! `/a/b/c` visits `/`, `/a`, `/a/b` and `/a/b/c` and nothing else. Maps are `BTreeMap`s: a
//! `HashMap`'s random seed would be a system call and its iteration order would vary by run.

use std::collections::BTreeMap;

use crate::capability::{Capability, CapabilityName, HTTP_CARRYING, Scope, http_origin};
use crate::command::{prefix_words, simple_commands, starts_with_words};
use crate::grant::{Grant, Lifetime};
use crate::path::{components, normalize_absolute};

/// What the grants say about one capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cover {
    /// No live grant covers it.
    None,
    /// An allowing grant covers it; the index is the one to cite (and, if `once`, consume).
    Allowed {
        /// Position of the grant in the set.
        index: usize,
    },
    /// A `deny` grant covers it. A refusal outweighs any allowing grant, as verdicts do.
    Denied {
        /// Position of the grant in the set.
        index: usize,
    },
}

/// The grants in force for one session, indexed for [`crate::evaluate`]. Build it once when
/// the session's grants load and keep it; [`GrantSet::insert`] and [`GrantSet::remove`] keep
/// the index current without rebuilding it.
#[derive(Debug, Clone, Default)]
pub struct GrantSet {
    grants: Vec<Grant>,
    live: Vec<bool>,
    tables: [Table; CapabilityName::ALL.len()],
}

#[derive(Debug, Clone, Default)]
struct Table {
    /// Path-scoped grants, by component.
    tree: Node,
    /// Exact-scoped grants by target, and unscoped grants under the empty key.
    exact: BTreeMap<Box<str>, Vec<usize>>,
    /// Command-prefix grants under their program (first word), with their words read once.
    prefixes: BTreeMap<Box<str>, Vec<(usize, Vec<String>)>>,
}

/// What the `run_program` grants say about a whole command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandCover {
    /// Some simple command is not covered, or the line cannot be read word by word.
    None,
    /// Every simple command is covered; the grants relied on, each once, in order of use.
    Allowed {
        /// Positions of the grants in the set.
        indexes: Vec<usize>,
    },
    /// A `deny` grant covers one of its simple commands.
    Denied {
        /// Position of the grant in the set.
        index: usize,
    },
}

#[derive(Debug, Clone, Default)]
struct Node {
    here: Vec<usize>,
    children: BTreeMap<Box<str>, Node>,
}

impl GrantSet {
    /// An empty set.
    pub fn new() -> GrantSet {
        GrantSet::default()
    }

    /// Indexes every grant; indexes in decisions refer to positions in `grants`.
    pub fn from_grants(grants: impl IntoIterator<Item = Grant>) -> GrantSet {
        let mut set = GrantSet::new();
        for grant in grants {
            set.insert(grant);
        }
        set
    }

    /// Adds a grant and returns its index. A path-scoped grant whose path is not absolute (or
    /// holds a NUL byte) is kept for the record but covers nothing: ledger grants are written
    /// from capabilities, which always carry normalised absolute paths.
    pub fn insert(&mut self, grant: Grant) -> usize {
        let index = self.grants.len();
        let table = &mut self.tables[grant.capability.index()];
        let raw = grant.path.as_deref();
        match grant.capability.scope() {
            Scope::Path => {
                if let Some(path) = raw.and_then(normalize_absolute) {
                    let mut node = &mut table.tree;
                    for comp in components(&path) {
                        node = node.children.entry(comp.into()).or_default();
                    }
                    node.here.push(index);
                }
            }
            Scope::Exact => {
                let key = exact_key(grant.capability, raw);
                table.exact.entry(key.into()).or_default().push(index);
            }
            Scope::Unscoped => table.exact.entry("".into()).or_default().push(index),
            Scope::Command => {
                if let Some(words) = raw.and_then(prefix_words)
                    && let Some(program) = words.first()
                {
                    let key: Box<str> = program.as_str().into();
                    table.prefixes.entry(key).or_default().push((index, words));
                }
            }
        }
        self.grants.push(grant);
        self.live.push(true);
        index
    }

    /// Retires a grant (a consumed `once`, a revocation). Indexes of the others do not change.
    pub fn remove(&mut self, index: usize) -> Option<&Grant> {
        match self.live.get_mut(index) {
            Some(live) if *live => {
                *live = false;
                self.grants.get(index)
            }
            _ => None,
        }
    }

    /// The index of the live grant with this ledger id.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.iter()
            .find(|(_, g)| g.id.as_deref() == Some(id))
            .map(|(i, _)| i)
    }

    /// The grant at `index`, live or retired.
    pub fn get(&self, index: usize) -> Option<&Grant> {
        self.grants.get(index)
    }

    /// Live grants with their indexes.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &Grant)> {
        self.grants
            .iter()
            .enumerate()
            .filter(|(i, _)| self.live.get(*i).copied().unwrap_or(false))
    }

    /// Number of live grants.
    pub fn len(&self) -> usize {
        self.live.iter().filter(|l| **l).count()
    }

    /// True when no grant is live.
    pub fn is_empty(&self) -> bool {
        !self.live.iter().any(|l| *l)
    }

    /// What the live grants say about `capability`.
    pub fn covering(&self, capability: &Capability) -> Cover {
        self.lookup(capability.name, capability.path.as_deref())
    }

    /// Like [`GrantSet::covering`] with the parts of a capability. For path-scoped names the
    /// target must already be a normalised absolute path (as `evaluate` produces).
    pub(crate) fn lookup(&self, name: CapabilityName, target: Option<&str>) -> Cover {
        let table = &self.tables[name.index()];
        let mut best = Best::default();
        match name.scope() {
            Scope::Path => {
                let Some(path) = target else {
                    return Cover::None;
                };
                let mut node = &table.tree;
                best.offer_all(&node.here, self);
                for comp in components(path) {
                    match node.children.get(comp) {
                        Some(child) => node = child,
                        None => break,
                    }
                    best.offer_all(&node.here, self);
                }
            }
            Scope::Exact => {
                let key = exact_key(name, target);
                if let Some(list) = table.exact.get(key.as_str()) {
                    best.offer_all(list, self);
                }
            }
            Scope::Unscoped => {
                if let Some(list) = table.exact.get("") {
                    best.offer_all(list, self);
                }
            }
            Scope::Command => {
                return match self.command_cover(target.unwrap_or("")) {
                    CommandCover::None => Cover::None,
                    CommandCover::Denied { index } => Cover::Denied { index },
                    CommandCover::Allowed { indexes } => indexes
                        .first()
                        .map_or(Cover::None, |&index| Cover::Allowed { index }),
                };
            }
        }
        best.cover()
    }

    /// What the `run_program` grants say about `line`: denied when a `deny` grant covers any
    /// of its simple commands, allowed when an allowing grant covers every one of them.
    pub fn command_cover(&self, line: &str) -> CommandCover {
        self.commands_cover(simple_commands(line).as_deref())
    }

    /// [`GrantSet::command_cover`] of a line read already: its simple commands, `None` when it
    /// is unreadable.
    pub fn commands_cover(&self, commands: Option<&[Vec<String>]>) -> CommandCover {
        let Some(commands) = commands else {
            return CommandCover::None;
        };
        let table = &self.tables[CapabilityName::RunProgram.index()];
        let mut indexes = Vec::new();
        let mut uncovered = false;
        for words in commands {
            let mut best = Best::default();
            let candidates = words.first().and_then(|p| table.prefixes.get(p.as_str()));
            for (i, prefix) in candidates.into_iter().flatten() {
                if starts_with_words(words, prefix) {
                    best.offer_all(&[*i], self);
                }
            }
            match best.cover() {
                Cover::Denied { index } => return CommandCover::Denied { index },
                Cover::Allowed { index } if !indexes.contains(&index) => indexes.push(index),
                Cover::Allowed { .. } => {}
                Cover::None => uncovered = true,
            }
        }
        if uncovered {
            CommandCover::None
        } else {
            CommandCover::Allowed { indexes }
        }
    }
}

/// The key an exact-scoped target is filed under; origins are compared in canonical form so a
/// grant for `HTTPS://Example.org/` covers a call to `https://example.org/api`.
fn exact_key(name: CapabilityName, target: Option<&str>) -> String {
    match (name, target) {
        (CapabilityName::SendHttp, Some(target)) => match target.split_once(HTTP_CARRYING) {
            Some((url, extras)) => format!("{}{HTTP_CARRYING}{extras}", http_origin(url)),
            None => http_origin(target),
        },
        (_, Some(t)) => t.to_owned(),
        (_, None) => String::new(),
    }
}

/// The most decisive grant seen so far: any `deny`, else a `session` grant (so a `once` grant
/// is not spent when a lasting one also covers the call), else a `once`; ties go to the lowest
/// index so the answer never depends on insertion history.
#[derive(Default)]
struct Best {
    deny: Option<usize>,
    session: Option<usize>,
    once: Option<usize>,
}

impl Best {
    fn offer_all(&mut self, indexes: &[usize], set: &GrantSet) {
        for &i in indexes {
            if !set.live.get(i).copied().unwrap_or(false) {
                continue;
            }
            let Some(grant) = set.grants.get(i) else {
                continue;
            };
            let slot = match grant.lifetime {
                Lifetime::Deny => &mut self.deny,
                Lifetime::Session => &mut self.session,
                Lifetime::Once => &mut self.once,
            };
            *slot = Some(slot.map_or(i, |j| j.min(i)));
        }
    }

    fn cover(&self) -> Cover {
        match (self.deny, self.session.or(self.once)) {
            (Some(index), _) => Cover::Denied { index },
            (None, Some(index)) => Cover::Allowed { index },
            (None, None) => Cover::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Cover, GrantSet};
    use crate::capability::{Capability, CapabilityName};
    use crate::grant::{Grant, Lifetime};
    use pretty_assertions::assert_eq;

    const MUT: CapabilityName = CapabilityName::MutateOutsideFence;

    fn cap(name: CapabilityName, path: &str) -> Capability {
        Capability::new(name, Some(path.to_owned()))
    }

    #[test]
    fn a_path_grant_covers_itself_and_below_but_not_siblings() {
        let set = GrantSet::from_grants([Grant::new(MUT, Some("/data"), Lifetime::Session)]);
        assert_eq!(
            set.covering(&cap(MUT, "/data")),
            Cover::Allowed { index: 0 }
        );
        assert_eq!(
            set.covering(&cap(MUT, "/data/x/y")),
            Cover::Allowed { index: 0 }
        );
        assert_eq!(set.covering(&cap(MUT, "/data-evil")), Cover::None);
        assert_eq!(set.covering(&cap(MUT, "/")), Cover::None);
        // Same path, other capability.
        let read = cap(CapabilityName::ReadOutsideFence, "/data/x");
        assert_eq!(set.covering(&read), Cover::None);
    }

    #[test]
    fn grant_paths_are_normalised_and_relative_ones_cover_nothing() {
        let set = GrantSet::from_grants([
            Grant::new(MUT, Some("//data/./x/"), Lifetime::Session),
            Grant::new(MUT, Some("relative"), Lifetime::Session),
            Grant::new(MUT, None, Lifetime::Session),
        ]);
        assert_eq!(
            set.covering(&cap(MUT, "/data/x/f")),
            Cover::Allowed { index: 0 }
        );
        assert_eq!(set.covering(&cap(MUT, "/w/relative")), Cover::None);
        assert_eq!(set.len(), 3);
    }

    #[test]
    fn deny_outweighs_allow_and_session_is_preferred_to_once() {
        let set = GrantSet::from_grants([
            Grant::new(MUT, Some("/data/x"), Lifetime::Once),
            Grant::new(MUT, Some("/data"), Lifetime::Session),
            Grant::new(MUT, Some("/data/x/secret"), Lifetime::Deny),
        ]);
        assert_eq!(
            set.covering(&cap(MUT, "/data/x/a")),
            Cover::Allowed { index: 1 }
        );
        assert_eq!(
            set.covering(&cap(MUT, "/data/x/secret/k")),
            Cover::Denied { index: 2 }
        );
    }

    #[test]
    fn removed_grants_stop_covering_and_ids_find_positions() {
        let mut set = GrantSet::from_grants([
            Grant::new(MUT, Some("/data"), Lifetime::Once).with_id("g1"),
            Grant::new(MUT, Some("/data"), Lifetime::Once).with_id("g2"),
        ]);
        assert_eq!(
            set.covering(&cap(MUT, "/data")),
            Cover::Allowed { index: 0 }
        );
        assert_eq!(set.position("g1"), Some(0));
        assert!(set.remove(0).is_some());
        assert!(set.remove(0).is_none());
        assert_eq!(set.position("g1"), None);
        assert_eq!(
            set.covering(&cap(MUT, "/data")),
            Cover::Allowed { index: 1 }
        );
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn exact_and_unscoped_capabilities_match_their_target_only() {
        let set = GrantSet::from_grants([
            Grant::new(
                CapabilityName::UseTool,
                Some("share_file"),
                Lifetime::Session,
            ),
            Grant::new(
                CapabilityName::SendHttp,
                Some("HTTPS://Example.org/x"),
                Lifetime::Once,
            ),
            Grant::new(
                CapabilityName::ChangeConfig,
                Some("ignored"),
                Lifetime::Once,
            ),
        ]);
        let tool = cap(CapabilityName::UseTool, "share_file");
        assert_eq!(set.covering(&tool), Cover::Allowed { index: 0 });
        let other = cap(CapabilityName::UseTool, "share_file2");
        assert_eq!(set.covering(&other), Cover::None);
        let http = cap(CapabilityName::SendHttp, "https://example.org/api?q=1");
        assert_eq!(set.covering(&http), Cover::Allowed { index: 1 });
        let evil = cap(CapabilityName::SendHttp, "https://example.org.evil");
        assert_eq!(set.covering(&evil), Cover::None);
        let config = Capability::new(CapabilityName::ChangeConfig, None);
        assert_eq!(set.covering(&config), Cover::Allowed { index: 2 });
    }
}

#[cfg(test)]
mod command_tests {
    use super::{CommandCover, GrantSet};
    use crate::capability::{Capability, CapabilityName};
    use crate::grant::{Grant, Lifetime};
    use pretty_assertions::assert_eq;

    fn program(prefix: &str, lifetime: Lifetime) -> Grant {
        Grant::new(CapabilityName::RunProgram, Some(prefix), lifetime)
    }

    #[test]
    fn every_simple_command_needs_its_own_grant() {
        let set = GrantSet::from_grants([
            program("cargo test", Lifetime::Session),
            program("git", Lifetime::Session),
            program("not; one command", Lifetime::Session),
        ]);
        assert_eq!(
            set.command_cover("cargo test -q && git log | git shortlog"),
            CommandCover::Allowed {
                indexes: vec![0, 1]
            }
        );
        assert_eq!(set.command_cover("cargo build"), CommandCover::None);
        assert_eq!(set.command_cover("git log; cat x"), CommandCover::None);
        assert_eq!(set.command_cover("not"), CommandCover::None);
        let line = Capability::new(CapabilityName::RunProgram, Some("git status".into()));
        assert_eq!(set.covering(&line), super::Cover::Allowed { index: 1 });
    }

    #[test]
    fn a_deny_anywhere_in_the_line_wins() {
        let set = GrantSet::from_grants([
            program("rm", Lifetime::Deny),
            program("rm -i", Lifetime::Session),
        ]);
        assert_eq!(
            set.command_cover("echo x; rm -i y"),
            CommandCover::Denied { index: 0 }
        );
    }
}
