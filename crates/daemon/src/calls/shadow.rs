//! The shadow configuration (`[policy] shadow`): every live call decided a second time with
//! the shadow file's operator inputs in place of the running configuration's. Where the
//! verdict differs, the shadow's decision goes into the decision record beside the live one
//! (`DecisionRecord::shadow`); the live decision, and so what runs, never changes.

use codaris_ledger::{Candidate, DecisionRecord, ShadowDecision, decide_under};
use codaris_policy::Grant;

use crate::config::policy::Shadow;

/// The shadow configuration as the dispatcher decides with it.
#[derive(Debug)]
pub struct ShadowPolicy {
    /// The file, as `[policy] shadow` names it, recorded with each difference.
    config: String,
    candidate: Candidate,
}

impl ShadowPolicy {
    pub fn new(shadow: &Shadow) -> ShadowPolicy {
        ShadowPolicy {
            config: shadow.path.display().to_string(),
            candidate: Candidate::new(shadow.inputs.clone()),
        }
    }
}

/// `record` (a live decision about to be recorded, its request holding the standing grants)
/// with the shadow's decision beside it when there is a shadow and its verdict differs;
/// `session` are the session's grants in force after the standing ones.
pub fn beside(
    shadow: Option<&ShadowPolicy>,
    mut record: DecisionRecord,
    session: &[Grant],
) -> DecisionRecord {
    if let Some(shadow) = shadow {
        let decision = decide_under(&record.request, session, &shadow.candidate);
        if decision.verdict != record.decision.verdict {
            record.shadow = Some(ShadowDecision {
                config: shadow.config.clone(),
                decision,
            });
        }
    }
    record
}
