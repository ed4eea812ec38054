//! Grant sets: how a decision record names the ledger's grants in force instead of copying them
//! (schema 2).
//!
//! When a decision is appended, the grants at the end of its request that carry ledger ids
//! (`g…`) are split off: the record keeps the others (standing allowlist grants, which have no
//! record) and a [`GrantSetRef`] naming a [`GrantSetRecord`] that lists the split-off grants'
//! ids. The set's key is a digest of the session and the ids, so every decision that saw the same
//! grants names the same set, written once. A grant record's `grant` never changes (spending or
//! revoking it only stamps a time), so the ids name exactly the grants the decision saw.
//!
//! Every read fills the grants back in from the set and the grant records; a set or a grant
//! that is missing, of another session, or of the wrong size makes the decision corrupt, never a
//! decision replayed against fewer grants.

use std::collections::HashMap;
use std::sync::Arc;

use codaris_policy::Grant;
use sha2::{Digest, Sha256};

use crate::error::Corrupt;
use crate::record::{DecisionRecord, GrantRecord, GrantSetRecord, GrantSetRef, SCHEMA};

/// Whether `id` is one the ledger gives grant records: `g` and digits.
fn is_ledger_grant_id(id: &str) -> bool {
    id.strip_prefix('g')
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// The key of the set of `ids` in `session_id`: SHA-256 (hex) over the session and each id,
/// each ended by a newline (ids are `g` and digits; a session id with a newline only changes its
/// own keys).
fn set_key<'a>(session_id: &str, ids: impl Iterator<Item = &'a str>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(session_id.as_bytes());
    hasher.update(b"\n");
    for id in ids {
        hasher.update(id.as_bytes());
        hasher.update(b"\n");
    }
    crate::chain::hex(&hasher.finalize())
}

/// The digest of the grants a set lists ([`GrantSetRecord::grants_digest`]).
fn grants_digest(grants: &[Grant]) -> String {
    let mut hasher = Sha256::new();
    for grant in grants {
        // A `Grant` always encodes (strings and enums only); should it ever fail, the digest
        // differs from any stored one and the decision reads as corrupt, never as clean.
        if let Ok(bytes) = serde_json::to_vec(grant) {
            hasher.update(&bytes);
        }
        hasher.update(b"\n");
    }
    crate::chain::hex(&hasher.finalize())
}

fn ids(grants: &[Grant]) -> impl Iterator<Item = &str> {
    grants.iter().filter_map(|g| g.id.as_deref())
}

/// The grant set record listing `set`, under `key`.
pub(crate) fn set_record(session_id: &str, key: &str, set: &[Grant]) -> GrantSetRecord {
    GrantSetRecord {
        schema: SCHEMA,
        key: key.to_owned(),
        session_id: session_id.to_owned(),
        grant_ids: ids(set).map(str::to_owned).collect(),
        grants_digest: grants_digest(set),
    }
}

/// Whether every grant of `set` can be named by its ledger id.
pub(crate) fn nameable(set: &[Grant]) -> bool {
    set.iter()
        .all(|g| g.id.as_deref().is_some_and(is_ledger_grant_id))
}

/// Splits off the grants at the end of `grants` that carry ledger ids (the ones a set can name)
/// and returns them; empty when there are none.
pub(crate) fn split_ledger_grants(grants: &mut Vec<Grant>) -> Vec<Grant> {
    let own = grants
        .iter()
        .rev()
        .take_while(|g| g.id.as_deref().is_some_and(is_ledger_grant_id))
        .count();
    grants.split_off(grants.len() - own)
}

/// How a decision names the ledger's grants in force. Working it out reads every grant (the set's
/// key digests all their ids), so the ledger keeps it with each session's view
/// ([`crate::Ledger::append_decision_in_view`]) rather than working it out for every decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SetName {
    /// No grants: the decision names no set.
    Empty,
    /// A grant without a ledger id, which a set cannot name: the grants go into the record.
    Inline,
    /// The key of the set that lists them.
    Key(String),
}

impl SetName {
    pub(crate) fn of(session_id: &str, set: &[Grant]) -> Self {
        if set.is_empty() {
            SetName::Empty
        } else if !nameable(set) {
            SetName::Inline
        } else {
            SetName::Key(set_key(session_id, ids(set)))
        }
    }
}

/// Names the set under `key`, of `count` grants, as the grants that follow the record's own.
pub(crate) fn name_set(record: &mut DecisionRecord, key: &str, count: usize) {
    record.grant_set = Some(GrantSetRef {
        key: key.to_owned(),
        inline: record.request.grants.len(),
        count,
    });
}

/// Fills the grants of the record's set back in after its own. A record without a set is left
/// as it is; one whose stored request or set does not match what the record says is refused.
pub(crate) fn fill(record: &mut DecisionRecord, set: &[Grant]) -> Result<(), String> {
    if record.grant_set.is_some() {
        fits(record, set)?;
        record.request.grants.extend_from_slice(set);
    }
    Ok(())
}

/// Whether `set` can be filled in after the record's own grants: the record holds as many of
/// its own as it says, and the set as many as it names.
pub(crate) fn fits(record: &DecisionRecord, set: &[Grant]) -> Result<(), String> {
    let Some(named) = &record.grant_set else {
        return Ok(());
    };
    if record.request.grants.len() != named.inline {
        return Err(format!(
            "its request holds {} grants of its own where it says {}",
            record.request.grants.len(),
            named.inline
        ));
    }
    if named.count != set.len() {
        return Err(format!(
            "it names grant set `{}` of {} grants, which lists {}",
            named.key,
            named.count,
            set.len()
        ));
    }
    Ok(())
}

/// A decision that cannot be filled in, as a corrupt record.
pub(crate) fn unfilled(record: &DecisionRecord, reason: String) -> Corrupt {
    Corrupt {
        place: "decisions".to_owned(),
        key: record.seq.to_string(),
        reason: format!("a decision whose grants cannot be read back: {reason}"),
    }
}

/// Why a decision's grants cannot be read: no set is stored under the key it names. Every read
/// of the ledger, and both audits, say it in these words.
pub(crate) fn set_missing(key: &str) -> String {
    format!("grant set `{key}` is missing")
}

/// Why a decision's grants cannot be read: the set it names is `owner`'s, another session.
pub(crate) fn set_of_other_session(key: &str, owner: &str) -> String {
    format!("grant set `{key}` belongs to session `{owner}`")
}

/// The grants a set lists, in its order, each from its record; `Err` names what is wrong.
pub(crate) fn set_grants<'a>(
    set: &GrantSetRecord,
    session_id: &str,
    mut grant: impl FnMut(&str) -> Option<&'a GrantRecord>,
) -> Result<Vec<Grant>, String> {
    if set.session_id != session_id {
        return Err(set_of_other_session(&set.key, &set.session_id));
    }
    let mut grants = Vec::with_capacity(set.grant_ids.len());
    for id in &set.grant_ids {
        match grant(id) {
            Some(record) if record.session_id == session_id && record.id == *id => {
                grants.push(record.grant.clone());
            }
            Some(_) => return Err(format!("grant `{id}` of its set is another session's")),
            None => return Err(format!("grant `{id}` of its set is missing")),
        }
    }
    if grants_digest(&grants) != set.grants_digest {
        return Err(format!(
            "the grants of set `{}` differ from the records it names (a grant record was altered)",
            set.key
        ));
    }
    Ok(grants)
}

/// A set's grants, or why they cannot be read.
pub(crate) type SetGrants = Result<Arc<[Grant]>, String>;

/// Fills in each decision's grants from its set, reading each (set, session) once through
/// `set_of`; decisions that cannot be filled are taken out and returned as corrupt. An error of
/// `set_of` (the store failing, not a record) ends the fill.
pub(crate) fn fill_each<E>(
    records: &mut Vec<DecisionRecord>,
    mut set_of: impl FnMut(&str, &str) -> Result<SetGrants, E>,
) -> Result<Vec<Corrupt>, E> {
    // By the set's key, with the session it was read for: looked up by the record's own key,
    // so a record whose set was read already costs no allocation. A set key is a digest of its
    // session, so a second session naming the same key is a forgery: read for it each time.
    let mut read: HashMap<String, (String, SetGrants)> = HashMap::new();
    let mut corrupt = Vec::new();
    let mut failed = None;
    // In place: a decision record is large, and most are kept.
    records.retain_mut(|record| {
        if failed.is_some() {
            return true;
        }
        let Some(named) = &record.grant_set else {
            return true;
        };
        let set = match read.get(named.key.as_str()) {
            Some((session, set)) if session == record.grants_session() => Ok(set.clone()),
            Some(_) => set_of(&named.key, record.grants_session()),
            None => set_of(&named.key, record.grants_session()).inspect(|set| {
                read.insert(
                    named.key.clone(),
                    (record.grants_session().to_owned(), set.clone()),
                );
            }),
        };
        let set = match set {
            Ok(set) => set,
            Err(error) => {
                failed = Some(error);
                return true;
            }
        };
        match set.and_then(|set| fill(record, &set)) {
            Ok(()) => true,
            Err(reason) => {
                corrupt.push(unfilled(record, reason));
                false
            }
        }
    });
    match failed {
        Some(error) => Err(error),
        None => Ok(corrupt),
    }
}

/// [`fill_each`] from the sets and grants of an export.
pub(crate) fn fill_all(
    decisions: &mut Vec<DecisionRecord>,
    sets: &[GrantSetRecord],
    grants: &[GrantRecord],
) -> Vec<Corrupt> {
    let sets: HashMap<&str, &GrantSetRecord> = sets.iter().map(|s| (s.key.as_str(), s)).collect();
    let grants: HashMap<&str, &GrantRecord> = grants.iter().map(|g| (g.id.as_str(), g)).collect();
    let filled = fill_each(decisions, |key, session| {
        Ok::<_, std::convert::Infallible>(match sets.get(key) {
            Some(set) => set_grants(set, session, |id| grants.get(id).copied()).map(Arc::from),
            None => Err(set_missing(key)),
        })
    });
    match filled {
        Ok(corrupt) => corrupt,
        Err(never) => match never {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codaris_policy::{CapabilityName, Lifetime, Request, Task};
    use pretty_assertions::assert_eq;

    fn grant(id: &str) -> Grant {
        Grant::new(
            CapabilityName::ReadOutsideFence,
            Some(&format!("/data/{id}")),
            Lifetime::Session,
        )
        .with_id(id)
    }

    fn record(grants: Vec<Grant>) -> DecisionRecord {
        let request = Request {
            tool: codaris_policy::ToolId::parse("read_file"),
            args: serde_json::json!({"path": "/data/x"}),
            task: Task::new("/w"),
            grants,
            spec: None,
        };
        let decision = request.evaluate();
        DecisionRecord::new("s1", request, decision, 1)
    }

    fn grant_record(grant: &Grant) -> GrantRecord {
        GrantRecord {
            schema: SCHEMA,
            id: grant.id.clone().unwrap_or_default(),
            session_id: "s1".to_owned(),
            grant: grant.clone(),
            granted_at_ms: 1,
            card_id: None,
            backing: None,
            consumed_at_ms: None,
            revoked_at_ms: None,
        }
    }

    /// What `Ledger::append_decision` does with a request holding all its grants.
    fn stored(mut record: DecisionRecord) -> (DecisionRecord, Vec<Grant>, Option<GrantSetRecord>) {
        let split = split_ledger_grants(&mut record.request.grants);
        let set = match SetName::of("s1", &split) {
            SetName::Key(key) => {
                name_set(&mut record, &key, split.len());
                Some(set_record("s1", &key, &split))
            }
            SetName::Empty | SetName::Inline => None,
        };
        (record, split, set)
    }

    #[test]
    fn only_the_ledger_grants_at_the_end_are_split_off() {
        let standing = grant("config:x");
        let (record, split, set) = stored(record(vec![
            standing.clone(),
            grant("g000000000001"),
            grant("g2"),
        ]));
        let set = set.unwrap();
        assert_eq!(record.request.grants, vec![standing]);
        assert_eq!(split.len(), 2);
        assert_eq!(set.grant_ids, vec!["g000000000001", "g2"]);
        assert_eq!(
            record.grant_set,
            Some(GrantSetRef {
                key: set.key.clone(),
                inline: 1,
                count: 2
            })
        );
    }

    #[test]
    fn a_request_without_ledger_grants_at_its_end_names_no_set() {
        let (record, split, set) = stored(record(vec![grant("g1"), grant("config:x")]));
        assert!(split.is_empty() && set.is_none());
        assert_eq!(record.request.grants.len(), 2);
        assert!(record.grant_set.is_none());
        assert!(!nameable(&[grant("g1"), grant("config:x")]));
    }

    #[test]
    fn the_same_grants_in_another_session_are_another_set() {
        let ids = ["g1"];
        assert_ne!(
            set_key("s1", ids.into_iter()),
            set_key("s2", ids.into_iter())
        );
        assert_eq!(
            set_key("s1", ids.into_iter()),
            set_key("s1", ids.into_iter())
        );
    }

    #[test]
    fn a_set_fills_back_exactly_what_was_split_off() {
        let full = record(vec![grant("config:x"), grant("g1"), grant("g2")]);
        let (stored, split, set) = stored(full.clone());
        let set = set.unwrap();
        let records: Vec<GrantRecord> = split.iter().map(grant_record).collect();
        let mut decisions = vec![stored];
        assert!(fill_all(&mut decisions, &[set], &records).is_empty());
        assert_eq!(decisions[0].request, full.request);
    }

    #[test]
    fn a_set_of_another_session_an_altered_grant_or_a_forged_size_is_refused() {
        let (stored, split, set) = stored(record(vec![grant("g1")]));
        let set = set.unwrap();
        let original = grant_record(&split[0]);
        let refused = |set: &GrantSetRecord, grant: &GrantRecord, record: &DecisionRecord| {
            let mut decisions = vec![record.clone()];
            let corrupt = fill_all(
                &mut decisions,
                std::slice::from_ref(set),
                std::slice::from_ref(grant),
            );
            assert!(decisions.is_empty());
            corrupt[0].reason.clone()
        };
        let other = GrantSetRecord {
            session_id: "s2".to_owned(),
            ..set.clone()
        };
        assert!(refused(&other, &original, &stored).contains("session `s2`"));
        let mut widened = original.clone();
        widened.grant.path = Some("/".to_owned());
        assert!(refused(&set, &widened, &stored).contains("was altered"));
        let mut doubled = stored.clone();
        doubled.request.grants.push(split[0].clone());
        assert!(refused(&set, &original, &doubled).contains("holds 1 grants of its own"));
        let mut missing = set.clone();
        missing.key = "elsewhere".to_owned();
        assert!(refused(&missing, &original, &stored).contains("is missing"));
    }
}
