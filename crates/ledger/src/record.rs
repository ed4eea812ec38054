//! The stored shapes. Fields are only ever added; `schema` says which shape a record has.

use codaris_policy::{Capability, Decision, Grant, Request};
use serde::{Deserialize, Serialize};

/// The record shape this build writes; records with a higher number are refused as corrupt.
pub const SCHEMA: u32 = 1;

/// A grant a person gave on a card, and what has happened to it since.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantRecord {
    pub schema: u32,
    pub id: String,
    pub session_id: String,
    /// The grant as the policy reads it; `grant.id` equals `id`.
    pub grant: Grant,
    pub granted_at_ms: u64,
    /// The card it answered, when it came from one.
    #[serde(default)]
    pub card_id: Option<String>,
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
    pub request: Request,
    pub decision: Decision,
}

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

impl SessionScoped for DecisionRecord {
    fn session_id(&self) -> &str {
        &self.session_id
    }
}
