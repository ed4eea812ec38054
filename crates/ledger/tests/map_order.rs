//! The ledger's bytes do not follow how a build orders JSON maps. Every build turns on
//! serde_json's `preserve_order` (`codaris acp`'s ACP crate needs it, so the workspace asks it
//! for all), under which a call's arguments keep the model's key order; a decision stored from
//! them must still be byte for byte what the ledger always stored (keys sorted), so its digest,
//! its stored bytes and an export do not depend on the feature. The test fails if the sort is
//! dropped.

use codaris_policy::Activity;
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::chain::decisions_file;
use crate::support::{ledger, record, request, task};

/// As a model might send them: no key in order, nested objects and arrays of objects too.
const MODEL_ORDER: &str = r#"{"path":"a.txt","content":"x","opts":{"z":1,"a":[{"y":2,"b":3}]}}"#;
/// The same arguments as the ledger stores them: keys sorted, at every depth.
const SORTED: &str = r#"{"content":"x","opts":{"a":[{"b":3,"y":2}],"z":1},"path":"a.txt"}"#;

#[test]
fn a_decision_is_stored_with_its_arguments_keys_sorted_whatever_the_build() {
    let (temp, ledger) = ledger();
    let args: Value = serde_json::from_str(MODEL_ORDER).unwrap();
    let stored = record(&ledger, "s1", request("write", args, task(Activity::Agent)));
    drop(ledger);
    let on_disk = std::fs::read(decisions_file(&temp.path().join("ledger"))).unwrap();
    let needle = format!("\"args\":{SORTED}");
    assert!(
        on_disk
            .windows(needle.len())
            .any(|w| w == needle.as_bytes()),
        "the stored decision does not hold {needle}: {}",
        String::from_utf8_lossy(&on_disk)
    );
    // What the ledger hands back is what it stored.
    assert_eq!(serde_json::to_string(&stored.request.args).unwrap(), SORTED);
}
