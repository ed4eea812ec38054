//! The stored shapes. Fields are only ever added; `schema` says which shape a record has.
//!
//! A field added later must read as `null` when it is absent (an `Option`, skipped when
//! `None`): a record's chain digest leaves `null` members out, so a record written before the
//! field existed still verifies.

use codaris_policy::{Capability, Decision, Grant, Request};
use serde::{Deserialize, Serialize};

/// The record shape this build writes; records with a higher number are refused as corrupt.
///
/// - 1: decision records carry a copy of every grant in force (`request.grants`).
/// - 2: decision records name the ledger's grants in force by a [`GrantSetRef`] instead, and
///   [`GrantSetRecord`]s list them; schema 1 records are still read and replayed as they are.
pub const SCHEMA: u32 = 2;

/// What a grant stands on: a person's answer to a card, or an entry of the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Backing {
    /// The answer to this card (`allow_once`, `allow_session`, `allow_programs`, or `deny` for a
    /// recorded refusal).
    Card { card_id: String },
    /// An entry of a configured allowlist, e.g. `tools.http_allowlist` and
    /// `https://api.example.org`. Such grants are never stored as grant records: they are in
    /// force in every session and travel in each decision's request, with an id made by
    /// [`standing_grant_id`].
    Allowlist { key: String, entry: String },
}

/// The configuration key of the HTTP allowlist (standing `send_http` grants).
pub const HTTP_ALLOWLIST: &str = "tools.http_allowlist";
/// The configuration key of the command allowlist (standing `run_program` grants).
pub const COMMAND_ALLOWLIST: &str = "tools.command_allowlist";

/// Every standing grant id starts with this; no ledger grant id does (those are `g…`).
const STANDING_PREFIX: &str = "config:";

/// The id a standing grant from an allowlist carries in a decision's request, naming what backs
/// it: `config:<key>=<entry>`, e.g. `config:tools.command_allowlist=cargo test`.
pub fn standing_grant_id(key: &str, entry: &str) -> String {
    format!("{STANDING_PREFIX}{key}={entry}")
}

impl Backing {
    /// What backs a standing grant, read from its id. Ids from before the entry was named
    /// (`config:http_allowlist`, `config:command_allowlist`) name the allowlist only: their
    /// `entry` is empty. `None`: not a standing grant's id.
    pub fn of_standing_id(id: &str) -> Option<Backing> {
        let rest = id.strip_prefix(STANDING_PREFIX)?;
        let (key, entry) = match rest.split_once('=') {
            Some((key, entry)) => (key.to_owned(), entry.to_owned()),
            None => (format!("tools.{rest}"), String::new()),
        };
        Some(Backing::Allowlist { key, entry })
    }
}

impl std::fmt::Display for Backing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backing::Card { card_id } => write!(f, "card `{card_id}`"),
            Backing::Allowlist { key, entry } => write!(f, "`{key}` entry `{entry}`"),
        }
    }
}

/// A grant a person gave on a card, and what has happened to it since.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantRecord {
    pub schema: u32,
    pub id: String,
    pub session_id: String,
    /// The grant as the policy reads it; `grant.id` equals `id`.
    pub grant: Grant,
    pub granted_at_ms: u64,
    /// The card it answered, when it came from one (kept beside `backing` for older readers).
    #[serde(default)]
    pub card_id: Option<String>,
    /// What backs it. `None`: a record written before grants named their backing (or forged);
    /// replay reports it, and never counts it as backed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing: Option<Backing>,
    /// When a `once` grant allowed its call.
    #[serde(default)]
    pub consumed_at_ms: Option<u64>,
    #[serde(default)]
    pub revoked_at_ms: Option<u64>,
}

impl GrantRecord {
    /// Still in force: neither spent nor revoked.
    pub fn is_active(&self) -> bool {
        self.consumed_at_ms.is_none() && self.revoked_at_ms.is_none()
    }
}

/// How a card was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CardAnswer {
    AllowOnce,
    AllowSession,
    Deny,
    /// Every program of the card's command line, anywhere, for the session.
    AllowPrograms,
    /// This one call refused (Ctrl-C at the card); no deny grant, so the next call asks again.
    DenyOnce,
    /// Nobody answered before the timeout; nothing was granted.
    TimedOut,
    /// The session ended first; nothing was granted.
    SessionEnded,
}

/// A permission card: what was asked, and how and when it was answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardRecord {
    pub schema: u32,
    pub id: String,
    pub session_id: String,
    pub capability: Option<Capability>,
    pub sentence: String,
    pub asked_at_ms: u64,
    #[serde(default)]
    pub answer: Option<CardAnswer>,
    #[serde(default)]
    pub answered_at_ms: Option<u64>,
    #[serde(default)]
    pub grant_id: Option<String>,
    /// The programs a program-wide answer would grant, as the card offered them (empty: the
    /// card offered none, so `allow_programs` cannot answer it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub programs: Vec<String>,
    /// Who answered, as the answering client said (`acp:zed` for an editor over ACP, which may
    /// answer by itself as its settings say); `None`: the client that held the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    /// The subagent's session whose call raised the card, when not `session_id`: the card is
    /// the person's session's (shown on its stream, its answer granting there), raised for a
    /// child. Absent from every other card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raised_in: Option<String>,
}

impl CardRecord {
    /// A card as asked, not answered yet; `programs` are what `allow_programs` may grant.
    pub fn asked(
        id: impl Into<String>,
        session_id: impl Into<String>,
        capability: Option<Capability>,
        sentence: impl Into<String>,
        programs: Vec<String>,
        asked_at_ms: u64,
    ) -> Self {
        Self {
            schema: SCHEMA,
            id: id.into(),
            session_id: session_id.into(),
            capability,
            sentence: sentence.into(),
            asked_at_ms,
            answer: None,
            answered_at_ms: None,
            grant_id: None,
            programs,
            answered_by: None,
            raised_in: None,
        }
    }
}

/// One dispatch decision with its complete input, so it can be replayed exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    pub schema: u32,
    pub seq: u64,
    pub session_id: String,
    pub decided_at_ms: u64,
    /// `codaris_policy::POLICY_VERSION` of the build that decided.
    pub policy_version: String,
    /// Everything `evaluate` saw: the call, the task, the grants in force (with their ids).
    ///
    /// As stored since schema 2, `request.grants` holds only the grants without a ledger
    /// record (standing allowlist grants), and `grant_set` names the ledger's grants that
    /// followed them; every read of the ledger fills them back in, so a record read from a
    /// [`crate::Ledger`] or an [`crate::Evidence`] holds exactly the request `evaluate` saw.
    pub request: Request,
    pub decision: Decision,
    /// The ledger's grants in force, by the set that lists them (schema 2; `None` when the
    /// decision saw none, or in a schema 1 record, whose grants are all in `request.grants`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_set: Option<GrantSetRef>,
    /// The session that spawned this one, when the decision is a subagent's (`spawn_agent`).
    /// Absent from every other decision, so theirs read and hash as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    /// The session whose grants were in force, when not `session_id`: a subagent is decided
    /// under the grants of the person's session it descends from, and its cards grant there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grants_of: Option<String>,
    /// The shadow configuration's decision of the same call (`[policy] shadow`), recorded
    /// only when its verdict differs from `decision`, which it never changes. Not an input:
    /// replay compares `decision` alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadow: Option<ShadowDecision>,
    /// SHA-256 (hex) of the exact body a launch on Seqera Platform sends
    /// (`seqera__launch_pipeline`), a function of `request.args` alone; the server sends those
    /// bytes only after this record is stored. Absent from every other decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_body_sha256: Option<String>,
}

/// What a shadow configuration decided beside a live decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShadowDecision {
    /// The shadow configuration's file, as `[policy] shadow` named it.
    pub config: String,
    pub decision: Decision,
}

/// Which grant set a decision relied on, and how many grants it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantSetRef {
    /// The set's key ([`GrantSetRecord::key`]).
    pub key: String,
    /// How many grants the stored request holds itself, before the set's.
    pub inline: usize,
    /// How many grants the set adds after them.
    pub count: usize,
}

/// The ledger's grants in force in one session at some moment, by id, in ledger order. Written
/// once, with the first decision that sees this set, instead of copying the grants into every
/// decision: a record's size no longer grows with the grants in force. Its key is a digest of
/// the session and the ids, so the same set is written once however many decisions use it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantSetRecord {
    pub schema: u32,
    pub key: String,
    pub session_id: String,
    /// Grant record ids; the grants are the `grant` of each record, which never changes.
    pub grant_ids: Vec<String>,
    /// SHA-256 (hex) of the grants as they were, each encoded as JSON and ended by a newline:
    /// a grant record altered since no longer matches the sets that name it.
    pub grants_digest: String,
}

impl DecisionRecord {
    /// The record of `decision` on `request` in session `session_id`, decided by this build's
    /// policy at `decided_at_ms`; its sequence number is given when it is appended.
    pub fn new(
        session_id: impl Into<String>,
        request: Request,
        decision: Decision,
        decided_at_ms: u64,
    ) -> DecisionRecord {
        DecisionRecord {
            schema: SCHEMA,
            seq: 0,
            session_id: session_id.into(),
            decided_at_ms,
            policy_version: codaris_policy::POLICY_VERSION.to_owned(),
            request,
            decision,
            grant_set: None,
            parent_session: None,
            grants_of: None,
            shadow: None,
            launch_body_sha256: None,
        }
    }

    /// The session whose grants the decision was made with: its own, or for a subagent's the
    /// person's session it descends from ([`DecisionRecord::grants_of`]).
    pub fn grants_session(&self) -> &str {
        self.grants_of.as_deref().unwrap_or(&self.session_id)
    }
}

/// A stored shape that says which schema it has: checked after a record is decoded, so that a
/// record of a newer schema is refused even when its shape happens to decode as this build's.
pub(crate) trait Versioned {
    /// `None`: the shape carries no schema (it is not a record).
    fn schema(&self) -> Option<u32>;
}

macro_rules! versioned {
    ($($record:ty),*) => {$(
        impl Versioned for $record {
            fn schema(&self) -> Option<u32> {
                Some(self.schema)
            }
        }
    )*};
}

versioned!(
    GrantRecord,
    CardRecord,
    DecisionRecord,
    GrantSetRecord,
    crate::undo::UndoRecord,
    crate::config_change::ConfigChangeRecord,
    crate::job_approval::JobApprovalRecord
);

/// A record that belongs to one session.
pub trait SessionScoped {
    fn session_id(&self) -> &str;
}

impl SessionScoped for GrantRecord {
    fn session_id(&self) -> &str {
        &self.session_id
    }
}

impl SessionScoped for CardRecord {
    fn session_id(&self) -> &str {
        &self.session_id
    }
}

impl SessionScoped for GrantSetRecord {
    fn session_id(&self) -> &str {
        &self.session_id
    }
}

impl SessionScoped for crate::undo::UndoRecord {
    fn session_id(&self) -> &str {
        &self.session_id
    }
}

impl SessionScoped for crate::job_approval::JobApprovalRecord {
    fn session_id(&self) -> &str {
        &self.session_id
    }
}

/// A change made by a person's `codaris config` has no session: it is in no session's export.
impl SessionScoped for crate::config_change::ConfigChangeRecord {
    fn session_id(&self) -> &str {
        &self.session_id
    }
}

impl SessionScoped for DecisionRecord {
    fn session_id(&self) -> &str {
        &self.session_id
    }
}
