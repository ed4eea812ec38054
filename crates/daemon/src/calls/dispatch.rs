//! The one place a tool call is decided: prepare it (its paths resolved once,
//! [`crate::calls::prepare`]), evaluate it against the session's grants, spend the `once` grants it
//! relies on, and record the decision with its whole input — all before anything runs. An
//! allowed call comes out as a [`Permit`], the only thing a tool runs on: it carries the
//! decision, the prepared call's place and the paths a grant opened, all resolved already.

use std::sync::{Arc, Mutex, PoisonError};

use codaris_ledger::{DecisionRecord, GrantView, Ledger};
use codaris_policy::{CapabilityName, Grant, GrantSet, Lifetime, Task, ToolId, Verdict};
use serde_json::Value;

use crate::calls::prepare::Prepared;
pub use crate::calls::prepare::SessionCall;
use crate::calls::resolve::{Place, ResolvedPath};
use crate::error::DaemonError;
use crate::sessions::ids::CallId;
use crate::sessions::store::now_ms;
use codaris_tools::ReadArgs;

/// The dispatcher's proof that a call was decided `allow` and recorded, and everything its run
/// needs: the decision, where it runs (the prepared call's paths, the very ones the policy
/// judged), and the directories outside the roots that the grants it relied on opened. Only
/// [`Dispatcher::decide`] makes one; a tool runs on nothing else.
///
/// Outside the dispatcher a permit cannot be built:
///
/// ```compile_fail,E0451
/// fn forge(
///     record: codaris_ledger::DecisionRecord,
///     place: Box<codaris_daemon::calls::resolve::Place>,
/// ) -> codaris_daemon::calls::dispatch::Permit {
///     codaris_daemon::calls::dispatch::Permit {
///         record,
///         call_id: codaris_daemon::sessions::ids::CallId::new(""),
///         args: serde_json::Value::Null,
///         place,
///         read: codaris_tools::ReadArgs::Nothing,
///         opened: Vec::new(),
///     }
/// }
/// ```
///
/// only read:
///
/// ```
/// fn verdict(permit: &codaris_daemon::calls::dispatch::Permit) -> codaris_policy::Verdict {
///     permit.decision().verdict
/// }
/// ```
#[derive(Debug)]
pub struct Permit {
    record: DecisionRecord,
    call_id: CallId,
    /// The arguments as the model sent them (or the turn's plan pinned them).
    args: Value,
    /// Boxed: a permit moves through the turn by value, the place is read once.
    place: Box<Place>,
    /// What its tool read of the arguments when the call was prepared.
    read: ReadArgs,
    opened: Vec<ResolvedPath>,
}

impl Permit {
    /// The recorded decision: `allow`.
    pub fn decision(&self) -> &codaris_policy::Decision {
        &self.record.decision
    }

    /// The recorded decision with its whole input.
    pub fn record(&self) -> &DecisionRecord {
        &self.record
    }

    /// The call's id in its turn.
    pub fn call_id(&self) -> &CallId {
        &self.call_id
    }

    pub fn tool(&self) -> &ToolId {
        &self.record.request.tool
    }

    /// The arguments as sent; the tool resolves them beneath the roots it opens.
    pub fn args(&self) -> &Value {
        &self.args
    }

    /// The task the decision was made in, its paths resolved through symlinks.
    pub fn task(&self) -> &Task {
        &self.record.request.task
    }

    /// Where the call runs: the task's paths as they were resolved for the decision.
    pub fn place(&self) -> &Place {
        &self.place
    }

    /// What its tool read of the arguments when the call was prepared (`apply_patch`'s patch):
    /// the run reads nothing twice.
    pub fn read(&self) -> &ReadArgs {
        &self.read
    }

    /// The directories outside the roots that the grants this decision relied on opened: the
    /// tool's fence lets exactly these through as well.
    pub fn opened(&self) -> &[ResolvedPath] {
        &self.opened
    }
}

impl codaris_agent::Permit for Permit {
    fn decision(&self) -> &codaris_policy::Decision {
        &self.record.decision
    }

    fn args(&self) -> &Value {
        &self.args
    }
}

/// What deciding a call came to; every outcome is recorded.
#[derive(Debug)]
pub enum Dispatched {
    /// Allowed: run it with the permit.
    Run(Permit),
    /// The person must answer a card first.
    Ask(Box<Pending>),
    /// Refused.
    Refused(DecisionRecord),
}

/// A call the person must answer a card for: its decision, and the call as prepared for it,
/// so that the card's preview works in the same resolved place.
#[derive(Debug)]
pub struct Pending {
    pub record: DecisionRecord,
    pub prepared: Prepared,
}

impl Dispatched {
    /// The recorded decision.
    pub fn record(&self) -> &DecisionRecord {
        match self {
            Dispatched::Run(permit) => &permit.record,
            Dispatched::Ask(pending) => &pending.record,
            Dispatched::Refused(record) => record,
        }
    }

    pub fn into_record(self) -> DecisionRecord {
        match self {
            Dispatched::Run(permit) => permit.record,
            Dispatched::Ask(pending) => pending.record,
            Dispatched::Refused(record) => record,
        }
    }
}

/// How many times a decision is retaken when a racing call spent its `once` grant first.
const MAX_RETAKES: usize = 8;

#[derive(Debug, Clone)]
pub struct Dispatcher {
    ledger: Arc<Ledger>,
    /// What the operator's configuration adds to every decision, shared by every session's
    /// dispatcher: a committed configuration changes it for their next calls.
    operator: codaris_tools::Live<Operator>,
    /// The policy's grant set for the current view of the session decided for, shared by the
    /// clones: each session's value holds a dispatcher of its own ([`Dispatcher::for_session`]),
    /// so the set goes with the session.
    sets: Arc<GrantSets>,
    /// Set for a subagent's session: its calls are decided under the grants of the person's
    /// session it descends from, and recorded naming its parent.
    lineage: Option<Lineage>,
}

/// What the operator's configuration adds to every decision.
#[derive(Debug, Default, Clone)]
pub struct Operator {
    /// Grants the operator gave in the configuration (e.g. `tools.http_allowlist`), in force in
    /// every session and recorded with each decision like any other grant.
    standing: Vec<Grant>,
    /// `[policy] shadow`: every call decided a second time ([`crate::calls::shadow`]).
    shadow: Option<Arc<crate::calls::shadow::ShadowPolicy>>,
}

impl Operator {
    /// What `config`'s allowlists and shadow add up to.
    pub fn of(config: &crate::config::Config) -> Self {
        Self::default()
            .with_http_allowlist(&config.http_allowlist)
            .with_command_allowlist(&config.command_allowlist)
            .with_shadow(config.shadow.as_ref())
    }

    fn with_shadow(mut self, shadow: Option<&crate::config::policy::Shadow>) -> Self {
        self.shadow = shadow.map(|s| Arc::new(crate::calls::shadow::ShadowPolicy::new(s)));
        self
    }

    /// The configuration's HTTP allowlist as standing `send_http` grants, one per origin.
    fn with_http_allowlist(mut self, origins: &[String]) -> Self {
        self.standing.extend(origins.iter().map(|origin| {
            Grant::new(
                CapabilityName::SendHttp,
                Some(&codaris_policy::http_origin(origin)),
                Lifetime::Session,
            )
            .with_id(codaris_ledger::standing_grant_id(
                codaris_ledger::HTTP_ALLOWLIST,
                origin,
            ))
        }));
        self
    }

    /// The configuration's command allowlist as standing `run_program` grants, one per prefix.
    fn with_command_allowlist(mut self, prefixes: &[String]) -> Self {
        self.standing.extend(prefixes.iter().map(|prefix| {
            Grant::new(CapabilityName::RunProgram, Some(prefix), Lifetime::Session).with_id(
                codaris_ledger::standing_grant_id(codaris_ledger::COMMAND_ALLOWLIST, prefix),
            )
        }));
        self
    }
}

/// A subagent's session's place, as its decisions record it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lineage {
    /// The session that spawned it.
    pub parent: String,
    /// The person's session its family descends from, whose grants are in force.
    pub root: String,
}

/// The grant set built from the standing grants and the last view decided on. Building it
/// costs as much as the grants are many (a trie of their paths), so it is built once per change
/// of the session's grants rather than once per call: a view the ledger hands out is never
/// changed, and a change hands out a new one (a view of another session is never the same).
#[derive(Debug, Default)]
struct GrantSets {
    built: Mutex<Option<BuiltSet>>,
}

/// A view and the operator's grants, and the grant set built from them.
type BuiltSet = (Arc<GrantView>, Arc<Operator>, Arc<GrantSet>);

impl GrantSets {
    fn for_view(&self, view: &Arc<GrantView>, operator: &Arc<Operator>) -> Arc<GrantSet> {
        let mut built = self.built.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((seen, seen_operator, set)) = built.as_ref()
            && Arc::ptr_eq(seen, view)
            && Arc::ptr_eq(seen_operator, operator)
        {
            return set.clone();
        }
        let set = Arc::new(GrantSet::from_grants(
            operator.standing.iter().chain(&view.grants).cloned(),
        ));
        *built = Some((view.clone(), operator.clone(), set.clone()));
        set
    }
}

impl Dispatcher {
    pub fn new(ledger: Arc<Ledger>) -> Self {
        Self {
            ledger,
            operator: codaris_tools::Live::default(),
            sets: Arc::default(),
            lineage: None,
        }
    }

    /// The same dispatcher deciding every call under `shadow` too, when there is one.
    #[must_use]
    pub fn with_shadow(mut self, shadow: Option<&crate::config::policy::Shadow>) -> Self {
        let operator = (*self.operator.get()).clone().with_shadow(shadow);
        self.operator = codaris_tools::Live::new(operator);
        self
    }

    /// The operator's part of every decision from now on, for every session: `operator`
    /// replaces what the configuration gave before (a commit reloaded it).
    pub fn reconfigure(&self, operator: Operator) {
        self.operator.set(operator);
    }

    /// The same dispatcher with a grant-set cache of its own, for one session's value to own.
    #[must_use]
    pub fn for_session(&self) -> Self {
        Self {
            sets: Arc::default(),
            ..self.clone()
        }
    }

    /// The same dispatcher deciding a subagent's calls: under `lineage.root`'s grants, each
    /// decision naming its parent and whose grants it used.
    #[must_use]
    pub fn for_child(mut self, lineage: Lineage) -> Self {
        self.lineage = Some(lineage);
        self
    }

    /// Lets go of the grant set kept for the last view (the session ended).
    pub fn forget(&self) {
        *self
            .sets
            .built
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// The grant set kept for the last view decided on, if any (what ending a session frees).
    pub fn kept_grant_set(&self) -> Option<std::sync::Weak<GrantSet>> {
        let built = self
            .sets
            .built
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        built.as_ref().map(|(_, _, set)| Arc::downgrade(set))
    }

    /// The configuration's HTTP allowlist as standing `send_http` grants, one per origin.
    #[must_use]
    pub fn with_http_allowlist(mut self, origins: &[String]) -> Self {
        let operator = (*self.operator.get()).clone().with_http_allowlist(origins);
        self.operator = codaris_tools::Live::new(operator);
        self
    }

    /// The configuration's command allowlist as standing `run_program` grants, one per prefix.
    #[must_use]
    pub fn with_command_allowlist(mut self, prefixes: &[String]) -> Self {
        let operator = (*self.operator.get())
            .clone()
            .with_command_allowlist(prefixes);
        self.operator = codaris_tools::Live::new(operator);
        self
    }

    /// Decides `call` and records the decision durably; an allowed call comes back as its
    /// permit. Blocking (it waits for the disk): call it from `spawn_blocking` on an async path.
    pub fn decide(&self, mut call: SessionCall) -> Result<Dispatched, DaemonError> {
        // A launch's local samplesheets are vouched for by their gates, which the policy
        // cannot read: found here and judged as the task's input.
        crate::mcp::launch::note_gated_sheets(&self.ledger, &call.tool, &call.args, &mut call.task);
        let mut prepared = Prepared::new(&call);
        let (record, opened) = self.recorded(&call, &prepared)?;
        Ok(match record.decision.verdict {
            Verdict::Allow => {
                let opened = prepared.open(&opened);
                let (place, read) = prepared.into_run();
                Dispatched::Run(Permit {
                    opened,
                    place: Box::new(place),
                    read,
                    record,
                    call_id: call.call_id,
                    args: call.args,
                })
            }
            Verdict::Ask => Dispatched::Ask(Box::new(Pending { record, prepared })),
            Verdict::Deny => Dispatched::Refused(record),
        })
    }

    /// The decision as recorded, alone (for the tests).
    #[cfg(test)]
    fn record(&self, call: SessionCall) -> Result<DecisionRecord, DaemonError> {
        self.recorded(&call, &Prepared::new(&call))
            .map(|(record, _)| record)
    }

    /// Decides and records `call`, prepared as `prepared`: the record as stored (its request
    /// holds the standing grants, and names the session's by their grant set), and the paths
    /// outside the roots the grants it relied on opened.
    fn recorded(
        &self,
        call: &SessionCall,
        prepared: &Prepared,
    ) -> Result<(DecisionRecord, Vec<String>), DaemonError> {
        let mut retakes = 0;
        loop {
            // The session's view is kept in memory by the ledger: no grant is decoded here.
            let grants_of = self
                .lineage
                .as_ref()
                .map_or(call.session_id.as_str(), |l| l.root.as_str());
            let view = self.ledger.grant_view_shared(grants_of)?;
            for corrupt in &view.corrupt {
                tracing::error!(%corrupt, "a grant record does not decode; it grants nothing");
            }
            for id in &view.set_aside {
                tracing::warn!(grant = %id, "a grant no answered card backs grants nothing; `codaris audit replay` says why");
            }
            // The grants in force are the standing ones followed by the view's; the request
            // carries the standing ones, and the ledger names the view's by their grant set, so
            // nothing here is proportional to the session's grants.
            let operator = self.operator.get();
            let request =
                prepared.request(&call.tool, operator.standing.clone(), call.spec.clone());
            let set = self.sets.for_view(&view, &operator);
            let decision = request.evaluate_read(&set, prepared.command());
            let mut spent_by_another = false;
            for used in decision.consumes() {
                let Some(id) = &used.id else { continue };
                if !self.ledger.consume_once(id, now_ms())? {
                    spent_by_another = true;
                }
            }
            if spent_by_another && retakes < MAX_RETAKES {
                // The grant this decision relied on is gone: decide again without it.
                retakes += 1;
                continue;
            }
            let mut record =
                DecisionRecord::new(call.session_id.to_string(), request, decision, now_ms());
            record.launch_body_sha256 = crate::mcp::launch::body_sha256(&call.tool, &call.args);
            if let Some(lineage) = &self.lineage {
                record.parent_session = Some(lineage.parent.clone());
                record.grants_of = Some(lineage.root.clone());
            }
            let record =
                crate::calls::shadow::beside(operator.shadow.as_deref(), record, &view.grants);
            let record = self.ledger.append_decision_in_view(record, &view)?;
            // Names and codes only, never the arguments: this event is exported with the
            // call's span when telemetry is on.
            tracing::info!(
                session.id = %record.session_id,
                tool.name = %record.request.tool,
                decision.verdict = record.decision.verdict.as_str(),
                decision.code = record.decision.code.as_str(),
                decision.seq = record.seq,
                "dispatch decision"
            );
            let opened = outside_paths(&record, &view.grants);
            return Ok((record, opened));
        }
    }
}

/// The paths outside the roots that the grants this decision relied on opened. The grants in
/// force are the record's own followed by the view's (`used_grants` indexes both in turn).
fn outside_paths(record: &DecisionRecord, view: &[Grant]) -> Vec<String> {
    let own = &record.request.grants;
    record
        .decision
        .used_grants
        .iter()
        .filter_map(|used| match used.index.checked_sub(own.len()) {
            None => own.get(used.index),
            Some(at) => view.get(at),
        })
        .filter(|grant| {
            matches!(
                grant.capability,
                CapabilityName::ReadOutsideFence | CapabilityName::MutateOutsideFence
            )
        })
        .filter_map(|grant| grant.path.clone())
        .collect()
}

#[cfg(test)]
#[path = "dispatch_tests.rs"]
mod tests;
