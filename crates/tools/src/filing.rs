//! `session_describe`: the session's own filing, its title and tags.
//!
//! The tool files the session it runs in (`ToolContext::session_id`: a subagent's child
//! session files itself, never its parent). The daemon keeps the filing in the session's record
//! through a [`FilingStore`]; what may be filed is checked here, once, so the store, the
//! listing's `--tag` filter and the tool agree:
//!
//! - a title is one line: trimmed, not empty, at most [`TITLE_MAX_CHARS`] characters, and no
//!   control or bidirectional/zero-width formatting character (it is printed in a terminal
//!   table: an escape sequence, a newline or a reversed run would rewrite what a person reads);
//! - a tag is trimmed and lowercased (`RNAseq` and `rnaseq` are one tag, so a filter finds it
//!   however it was typed), at most [`TAG_MAX_CHARS`] characters of letters, digits, `-`, `_`,
//!   `.` and `/`; a session has at most [`TAGS_MAX`], kept sorted and once each.
//!
//! A value out of bounds is refused, never cut: the model can say it shorter, and a title cut
//! silently would be filed under words nobody chose.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, PoisonError};

use codaris_catalogue::limits::{TAG_MAX_CHARS, TAGS_MAX, TITLE_MAX_CHARS};
use serde::Deserialize;
use serde_json::Value;

use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};

const NAME: &str = codaris_catalogue::SESSION_DESCRIBE.name;

/// A session's title and tags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filing {
    /// Empty before the first prompt names the session.
    pub title: String,
    /// Normalised ([`normalise_tag`]), sorted, once each.
    pub tags: Vec<String>,
}

/// Why a filing could not be read, changed or accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilingError {
    #[error("the arguments do not read: {reason}")]
    Arguments { reason: String },
    #[error("`title` is empty")]
    EmptyTitle,
    #[error("`title` is {chars} characters long; at most {max}", max = TITLE_MAX_CHARS)]
    LongTitle { chars: usize },
    #[error("`title` holds the control or formatting character {code}; a title is one plain line")]
    TitleCharacter { code: String },
    #[error("a tag is empty")]
    EmptyTag,
    #[error("the tag `{tag}` is {chars} characters long; at most {max}", max = TAG_MAX_CHARS)]
    LongTag { tag: String, chars: usize },
    #[error("the tag `{tag}` holds {code}; a tag is letters, digits, `-`, `_`, `.` and `/`")]
    TagCharacter { tag: String, code: String },
    #[error("{count} tags; a session has at most {max}", max = TAGS_MAX)]
    TooManyTags { count: usize },
    #[error("`tags` replaces every tag: give it alone, or edit with `add_tags` and `remove_tags`")]
    TagsWithEdits,
    #[error("the tag `{tag}` is both added and removed")]
    AddedAndRemoved { tag: String },
    #[error("the session `{session}` has ended")]
    Ended { session: String },
    #[error("the session's record cannot be read or written: {reason}")]
    Store { reason: String },
}

/// Where filings are kept: the session records in the daemon.
pub trait FilingStore: Send + Sync + std::fmt::Debug {
    /// The filing of `session`.
    fn read(&self, session: &str) -> Result<Filing, FilingError>;
    /// Applies `change` to the filing of `session` as one compare-and-swap (`None` leaves it
    /// as it is), and returns the filing as it now is and whether this call changed it.
    fn change(&self, session: &str, change: &Change<'_>) -> Result<(Filing, bool), FilingError>;
}

/// A change of a filing: the new one, or `None` to leave it.
pub type Change<'a> = dyn Fn(&Filing) -> Option<Filing> + Sync + 'a;

/// Filings kept for this process only: for a setup without session records (tests of the
/// tools alone).
#[derive(Debug, Default)]
pub struct MemoryFiling(Mutex<BTreeMap<String, Filing>>);

impl FilingStore for MemoryFiling {
    fn read(&self, session: &str) -> Result<Filing, FilingError> {
        let filings = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(filings.get(session).cloned().unwrap_or_default())
    }

    fn change(&self, session: &str, change: &Change<'_>) -> Result<(Filing, bool), FilingError> {
        let mut filings = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let filing = filings.entry(session.to_owned()).or_default();
        match change(filing) {
            Some(new) => {
                *filing = new;
                Ok((filing.clone(), true))
            }
            None => Ok((filing.clone(), false)),
        }
    }
}

/// A character a title or tag may not hold: a control character (C0, C1: newlines, escape
/// sequences) or one that reorders or hides text in a terminal (bidirectional overrides and
/// isolates, zero-width characters, the byte-order mark).
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

fn code(c: char) -> String {
    format!("U+{:04X}", u32::from(c))
}

/// `title` as it is filed: trimmed, one plain line within bounds.
pub fn check_title(title: &str) -> Result<String, FilingError> {
    let title = title.trim();
    if let Some(c) = title.chars().find(|c| hidden(*c)) {
        return Err(FilingError::TitleCharacter { code: code(c) });
    }
    let chars = title.chars().count();
    if chars == 0 {
        return Err(FilingError::EmptyTitle);
    }
    if chars > TITLE_MAX_CHARS {
        return Err(FilingError::LongTitle { chars });
    }
    Ok(title.to_owned())
}

/// `tag` as it is filed and looked for: trimmed and lowercased, within bounds.
pub fn normalise_tag(tag: &str) -> Result<String, FilingError> {
    let tag = tag.trim().to_lowercase();
    let allowed = |c: char| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '/');
    if let Some(c) = tag.chars().find(|c| !allowed(*c)) {
        // A character that cannot be shown is named by its code, never echoed.
        let shown: String = tag.chars().filter(|c| !hidden(*c)).collect();
        return Err(FilingError::TagCharacter {
            tag: shown,
            code: if hidden(c) { code(c) } else { format!("`{c}`") },
        });
    }
    let chars = tag.chars().count();
    if chars == 0 {
        return Err(FilingError::EmptyTag);
    }
    if chars > TAG_MAX_CHARS {
        let tag: String = tag.chars().take(TAG_MAX_CHARS).chain(['…']).collect();
        return Err(FilingError::LongTag { tag, chars });
    }
    Ok(tag)
}

fn tag_set(tags: &[String]) -> Result<BTreeSet<String>, FilingError> {
    tags.iter().map(|tag| normalise_tag(tag)).collect()
}

/// What a call asks for, checked: `None` fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Describe {
    title: Option<String>,
    tags: Option<BTreeSet<String>>,
    add: BTreeSet<String>,
    remove: BTreeSet<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    title: Option<String>,
    tags: Option<Vec<String>>,
    add_tags: Option<Vec<String>>,
    remove_tags: Option<Vec<String>>,
}

impl Describe {
    /// Reads and checks a call's arguments.
    pub fn parse(args: &Value) -> Result<Self, FilingError> {
        let args: Args =
            serde_json::from_value(args.clone()).map_err(|err| FilingError::Arguments {
                reason: err.to_string(),
            })?;
        if args.tags.is_some() && (args.add_tags.is_some() || args.remove_tags.is_some()) {
            return Err(FilingError::TagsWithEdits);
        }
        // No list is longer than a session's tags can be: a huge one is refused before a tag
        // of it is read.
        let lists = [&args.tags, &args.add_tags, &args.remove_tags];
        if let Some(count) = lists
            .iter()
            .filter_map(|list| list.as_ref().map(Vec::len))
            .find(|n| *n > TAGS_MAX)
        {
            return Err(FilingError::TooManyTags { count });
        }
        let tags = args.tags.as_deref().map(tag_set).transpose()?;
        let add = tag_set(args.add_tags.as_deref().unwrap_or_default())?;
        let remove = tag_set(args.remove_tags.as_deref().unwrap_or_default())?;
        if let Some(tag) = add.intersection(&remove).next() {
            return Err(FilingError::AddedAndRemoved { tag: tag.clone() });
        }
        Ok(Self {
            title: args.title.as_deref().map(check_title).transpose()?,
            tags,
            add,
            remove,
        })
    }

    /// Whether the call only reads.
    pub fn is_read(&self) -> bool {
        self == &Self::default()
    }

    /// `filing` with this call's changes; too many tags once added is refused.
    pub fn apply(&self, filing: &Filing) -> Result<Filing, FilingError> {
        let mut tags: BTreeSet<String> = match &self.tags {
            Some(tags) => tags.clone(),
            None => filing.tags.iter().cloned().collect(),
        };
        tags.extend(self.add.iter().cloned());
        tags.retain(|tag| !self.remove.contains(tag));
        if tags.len() > TAGS_MAX {
            return Err(FilingError::TooManyTags { count: tags.len() });
        }
        Ok(Filing {
            title: self.title.clone().unwrap_or_else(|| filing.title.clone()),
            tags: tags.into_iter().collect(),
        })
    }
}

/// `session_describe` over the daemon's session records.
#[derive(Debug)]
pub struct SessionDescribe {
    store: std::sync::Arc<dyn FilingStore>,
}

impl SessionDescribe {
    pub fn new(store: std::sync::Arc<dyn FilingStore>) -> Self {
        Self { store }
    }

    fn describe(&self, session: &str, args: &Value) -> Result<String, FilingError> {
        let describe = Describe::parse(args)?;
        if describe.is_read() {
            return Ok(answer(session, None, &self.store.read(session)?));
        }
        // Applied to the filing as the compare-and-swap finds it; a swap that is tried again
        // decides again, so the last attempt's refusal is the one that counts.
        let refused = Mutex::new(None);
        let (filing, changed) = self.store.change(session, &|filing: &Filing| {
            let applied = describe.apply(filing);
            let mut refusal = refused.lock().unwrap_or_else(PoisonError::into_inner);
            match applied {
                Ok(new) => {
                    *refusal = None;
                    (new != *filing).then_some(new)
                }
                Err(err) => {
                    *refusal = Some(err);
                    None
                }
            }
        })?;
        if let Some(err) = refused.into_inner().unwrap_or_else(PoisonError::into_inner) {
            return Err(err);
        }
        Ok(answer(session, Some(changed), &filing))
    }
}

/// The answer: a first line saying what happened, then the filing.
fn answer(session: &str, changed: Option<bool>, filing: &Filing) -> String {
    let first = match changed {
        None => format!("session `{session}`"),
        Some(true) => format!("session `{session}`: changed"),
        Some(false) => format!("session `{session}`: already filed so, nothing changed"),
    };
    let title = if filing.title.is_empty() {
        "(none yet: the first prompt names the session)"
    } else {
        &filing.title
    };
    let tags = if filing.tags.is_empty() {
        "none".to_owned()
    } else {
        filing.tags.join(", ")
    };
    format!("{first}\ntitle: {title}\ntags: {tags}")
}

#[async_trait::async_trait]
impl Tool for SessionDescribe {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::SESSION_DESCRIBE
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        // The store is the ledger: its reads and writes block, so they run off the runtime.
        let store = self.store.clone();
        let (session, args) = (ctx.session_id.clone(), args.clone());
        let done = tokio::task::spawn_blocking(move || {
            SessionDescribe { store }.describe(&session, &args)
        })
        .await
        .map_err(|err| ToolError::model(format!("{NAME}: did not finish: {err}")))?;
        done.map(ToolOutput::text)
            .map_err(|err| ToolError::model(format!("{NAME}: {err}")))
    }
}

#[cfg(test)]
#[path = "filing_tests.rs"]
mod tests;
