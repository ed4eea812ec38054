//! `codaris sessions`: the stored sessions, ended ones included, most recently used first (a
//! `codaris run` ends its session, and a person looks for it afterwards to resume it); and
//! resuming one, for `codaris chat --resume` and `codaris run --session`.
//!
//! `--json` prints one array (`[]` when there is none) of objects with `id`, `title`, `tags`,
//! `cwd`, `state`, `turns`, `last_activity_ms`, `created_at_ms`, `provider`, `model`,
//! `activity` and `permission_mode`: a contract, extended by adding fields only (`reasoning`;
//! `parent_session_id`, `agent` and `children` for subagents).

use std::time::{SystemTime, UNIX_EPOCH};

use codaris_proto::v1;
use serde_json::{Value, json};

use super::Outcome;
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

type Sessions = v1::sessions_client::SessionsClient<tonic::transport::Channel>;

/// Which sessions `codaris sessions` lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// The live ones only.
    pub open: bool,
    /// Only those filed under every one of these tags.
    pub tags: Vec<String>,
    /// At most this many, the most recently used; 0: all. Ended sessions accumulate, so the
    /// default shows the recent ones.
    pub limit: usize,
}

pub async fn list(
    target: &Target,
    autostart: bool,
    json_out: bool,
    listing: &Listing,
) -> Result<Outcome, CliError> {
    let channel = client::open(target, autostart).await?;
    let mut sessions = v1::sessions_client::SessionsClient::new(channel);
    let mut listed = fetch_filed(&mut sessions, !listing.open, &listing.tags).await?;
    if listing.limit > 0 {
        listed.truncate(listing.limit);
    }
    if json_out {
        output::json(&Value::Array(listed.iter().map(to_json).collect()))?;
    } else if listed.is_empty() {
        output::line(&none_listed(listing))?;
    } else {
        for line in table(&listed, None, now_ms()) {
            output::line(&line)?;
        }
    }
    Ok(Outcome::Success)
}

/// What an empty listing says, naming the filter that left nothing.
fn none_listed(listing: &Listing) -> String {
    let tags: Vec<String> = listing.tags.iter().map(|t| format!("`{t}`")).collect();
    match (listing.open, tags.is_empty()) {
        (false, true) => "no sessions".to_owned(),
        (true, true) => "no open sessions (`codaris sessions` lists ended ones too)".to_owned(),
        (false, false) => format!("no sessions filed under {}", tags.join(" and ")),
        (true, false) => format!("no open sessions filed under {}", tags.join(" and ")),
    }
}

/// The sessions, most recently used first (ended ones too with `all`).
pub async fn fetch(sessions: &mut Sessions, all: bool) -> Result<Vec<v1::Session>, CliError> {
    fetch_filed(sessions, all, &[]).await
}

/// [`fetch`], only the sessions filed under every one of `tags`.
async fn fetch_filed(
    sessions: &mut Sessions,
    all: bool,
    tags: &[String],
) -> Result<Vec<v1::Session>, CliError> {
    let mut listed = sessions
        .list_sessions(v1::ListSessionsRequest {
            include_ended: all,
            tags: tags.to_vec(),
        })
        .await?
        .into_inner()
        .sessions;
    // Newest activity first; the later-created session first on a tie (ids grow with time:
    // a longer id is a later one).
    listed.sort_by(|a, b| {
        (last_activity_ms(b), b.id.len(), &b.id).cmp(&(last_activity_ms(a), a.id.len(), &a.id))
    });
    Ok(listed)
}

/// Reopens the stored session `id` (active or ended) for `chat --resume` or `run --session`,
/// switching its model first when `model` is given. Returns it and whether it had ended,
/// so the caller leaves it as it found it.
pub async fn resume(
    sessions: &mut Sessions,
    id: &str,
    model: Option<String>,
) -> Result<(v1::Session, bool), CliError> {
    let found = sessions
        .get_session(v1::GetSessionRequest { id: id.to_owned() })
        .await
        .map_err(|status| no_session(status, id))?
        .into_inner();
    let was_ended = found.state == i32::from(v1::SessionState::Ended);
    let mut session = sessions
        .resume_session(v1::ResumeSessionRequest {
            id: id.to_owned(),
            mcp_servers: Vec::new(),
        })
        .await
        .map_err(|status| no_session(status, id))?
        .into_inner();
    if let Some(model) = model.filter(|m| !m.is_empty() && *m != session.model) {
        session = sessions
            .update_session(v1::UpdateSessionRequest {
                id: id.to_owned(),
                model,
                ..Default::default()
            })
            .await?
            .into_inner();
    }
    Ok((session, was_ended))
}

/// How many of the latest messages a resumed chat shows.
const RECAP_MESSAGES: u32 = 6;
/// The longest line of a message the recap shows.
const RECAP_WIDTH: usize = 160;

/// The latest messages of the session, one line each, for a chat that resumes it. A recap is
/// a courtesy: a daemon that cannot give one (an older build) gets none, without an error.
pub async fn recap(sessions: &mut Sessions, id: &str) -> Vec<String> {
    let Ok(history) = sessions
        .get_history(v1::GetHistoryRequest {
            session_id: id.to_owned(),
            limit: RECAP_MESSAGES,
        })
        .await
    else {
        return Vec::new();
    };
    recap_lines(&history.into_inner().messages)
}

fn recap_lines(messages: &[v1::HistoryMessage]) -> Vec<String> {
    messages
        .iter()
        .map(|m| {
            let who = match m.role.as_str() {
                "user" => "you",
                // Where the history was folded: its first line says how much and why.
                "compaction" => "⋯",
                _ => "model",
            };
            let first = m.text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            let clean: String = first.chars().filter(|c| !c.is_control()).collect();
            let more = m.text.trim().lines().count() > 1 || clean.chars().count() > RECAP_WIDTH;
            let cut: String = clean.chars().take(RECAP_WIDTH).collect();
            format!("  {who}> {cut}{}", if more { " …" } else { "" })
        })
        .collect()
}

/// A session id the daemon does not know is the person's mistake: say so plainly.
fn no_session(status: tonic::Status, id: &str) -> CliError {
    match status.code() {
        tonic::Code::NotFound => CliError::NoSession { id: id.to_owned() },
        _ => CliError::Rpc(status),
    }
}

fn ms_of(timestamp: Option<&prost_types::Timestamp>) -> u64 {
    timestamp.map_or(0, |t| {
        let ms = t.seconds.saturating_mul(1000) + i64::from(t.nanos / 1_000_000);
        u64::try_from(ms).unwrap_or(0)
    })
}

/// When the session was last used (its creation before the first turn ended).
pub fn last_activity_ms(session: &v1::Session) -> u64 {
    ms_of(
        session
            .last_activity_at
            .as_ref()
            .or(session.created_at.as_ref()),
    )
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `1 turn`, `3 turns`.
pub fn turns(n: u32) -> String {
    format!("{n} turn{}", if n == 1 { "" } else { "s" })
}

pub fn state_name(state: i32) -> &'static str {
    match v1::SessionState::try_from(state) {
        Ok(v1::SessionState::Active) => "active",
        Ok(v1::SessionState::Ended) => "ended",
        _ => "unknown",
    }
}

/// The operating mode as the command line spells it.
pub fn activity_name(activity: i32) -> &'static str {
    match v1::Activity::try_from(activity) {
        Ok(v1::Activity::Agent | v1::Activity::Unspecified) => "agent",
        Ok(v1::Activity::Plan) => "plan",
        Ok(v1::Activity::Ask) => "ask",
        Ok(v1::Activity::Review) => "review",
        Ok(v1::Activity::Research) => "research",
        Ok(v1::Activity::Audit) => "audit",
        Err(_) => "unknown",
    }
}

/// The permission mode as the command line spells it.
pub fn permission_mode_name(mode: i32) -> &'static str {
    match v1::PermissionMode::try_from(mode) {
        Ok(v1::PermissionMode::Ask | v1::PermissionMode::Unspecified) => "ask",
        Ok(v1::PermissionMode::AcceptEdits) => "accept_edits",
        Ok(v1::PermissionMode::Bypass) => "bypass",
        Err(_) => "unknown",
    }
}

/// One session of `codaris sessions --json`.
pub fn to_json(session: &v1::Session) -> Value {
    json!({
        "id": session.id,
        "title": session.title,
        "tags": session.tags,
        "cwd": session.cwd,
        "state": state_name(session.state),
        "turns": session.turns,
        "last_activity_ms": last_activity_ms(session),
        "created_at_ms": ms_of(session.created_at.as_ref()),
        "provider": session.provider,
        "model": (!session.model.is_empty()).then_some(&session.model),
        // Added after the contract was pinned: the level `switch_model` set, else null.
        "reasoning": (!session.reasoning.is_empty()).then_some(&session.reasoning),
        "activity": activity_name(session.activity),
        "permission_mode": permission_mode_name(session.permission_mode),
        // Added with subagents: the session that spawned this one and its agent definition
        // and task (null for a person's session), and the children it spawned.
        "parent_session_id": (!session.parent_session_id.is_empty()).then_some(&session.parent_session_id),
        "agent": (!session.agent.is_empty()).then_some(&session.agent),
        "children": session.children,
    })
}

/// The widest title the table shows; the JSON has it whole.
const TITLE_WIDTH: usize = 40;
/// The widest tag list the table shows.
const TAGS_WIDTH: usize = 24;

/// The table for people: a header and one line per session, `current` marked with `*`.
pub fn table(sessions: &[v1::Session], current: Option<&str>, now_ms: u64) -> Vec<String> {
    let rows: Vec<[String; 7]> = sessions
        .iter()
        .map(|s| {
            let mark = if current == Some(s.id.as_str()) {
                "*"
            } else {
                ""
            };
            [
                format!("{}{mark}", s.id),
                shorten(if s.title.is_empty() { "-" } else { &s.title }, TITLE_WIDTH),
                shorten(
                    &if s.tags.is_empty() {
                        "-".to_owned()
                    } else {
                        s.tags.join(",")
                    },
                    TAGS_WIDTH,
                ),
                s.cwd.clone(),
                state_name(s.state).to_owned(),
                s.turns.to_string(),
                ago(now_ms, last_activity_ms(s)),
            ]
        })
        .collect();
    let header = [
        "ID",
        "TITLE",
        "TAGS",
        "CWD",
        "STATE",
        "TURNS",
        "LAST ACTIVITY",
    ]
    .map(str::to_owned);
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    std::iter::once(&header)
        .chain(&rows)
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .zip(widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect();
            cells.join("  ").trim_end().to_owned()
        })
        .collect()
}

fn shorten(title: &str, width: usize) -> String {
    // Titles come from what people typed or a model filed (checked by `session_describe`, but
    // a record may be older): no control character reaches the terminal.
    let clean: String = title.chars().filter(|c| !c.is_control()).collect();
    if clean.chars().count() <= width {
        return clean;
    }
    let mut cut: String = clean.chars().take(width - 1).collect();
    cut.push('…');
    cut
}

/// `12s ago`, `4m 05s ago`, `3h 02m ago`; days once it is more than two days.
fn ago(now_ms: u64, then_ms: u64) -> String {
    let elapsed = now_ms.saturating_sub(then_ms);
    let days = elapsed / 86_400_000;
    if days >= 2 {
        format!("{days} days ago")
    } else {
        format!("{} ago", output::duration(elapsed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn at(ms: u64) -> Option<prost_types::Timestamp> {
        Some(prost_types::Timestamp {
            seconds: i64::try_from(ms / 1000).unwrap(),
            nanos: i32::try_from((ms % 1000) * 1_000_000).unwrap(),
        })
    }

    fn session(id: &str, title: &str, last_ms: u64) -> v1::Session {
        v1::Session {
            id: id.to_owned(),
            title: title.to_owned(),
            cwd: "/w/p".to_owned(),
            state: v1::SessionState::Active.into(),
            turns: 2,
            created_at: at(1_000),
            last_activity_at: at(last_ms),
            provider: "scripted".to_owned(),
            ..Default::default()
        }
    }

    #[test]
    fn the_table_lines_up_marks_the_current_session_and_cuts_long_titles() {
        let long = "a very long title that goes on and on past the width of the column";
        let mut tagged = session("s000002", "fix it", 61_000);
        tagged.tags = vec!["ci".to_owned(), "rnaseq".to_owned()];
        let lines = table(
            &[tagged, session("s000001", long, 1_000)],
            Some("s000001"),
            121_000,
        );
        assert_eq!(
            lines,
            [
                "ID        TITLE                                     TAGS       CWD   STATE   TURNS  LAST ACTIVITY",
                "s000002   fix it                                    ci,rnaseq  /w/p  active  2      1m 00s ago",
                "s000001*  a very long title that goes on and on p…  -          /w/p  active  2      2m 00s ago",
            ]
        );
    }

    #[test]
    fn json_names_every_field_and_the_last_activity_falls_back_to_creation() {
        let mut old = session("s000001", "", 0);
        old.last_activity_at = None;
        assert_eq!(
            to_json(&old),
            json!({"id": "s000001", "title": "", "tags": [], "cwd": "/w/p", "state": "active", "turns": 2,
                   "last_activity_ms": 1000, "created_at_ms": 1000, "provider": "scripted",
                   "model": null, "reasoning": null, "activity": "agent", "permission_mode": "ask",
                   "parent_session_id": null, "agent": null, "children": []})
        );
    }

    #[test]
    fn an_empty_listing_names_the_filter_that_left_nothing() {
        let listing = |open: bool, tags: &[&str]| Listing {
            open,
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            limit: 50,
        };
        assert_eq!(none_listed(&listing(false, &[])), "no sessions");
        assert_eq!(
            none_listed(&listing(true, &[])),
            "no open sessions (`codaris sessions` lists ended ones too)"
        );
        assert_eq!(
            none_listed(&listing(false, &["qc", "rnaseq"])),
            "no sessions filed under `qc` and `rnaseq`"
        );
    }

    #[test]
    fn a_recap_shows_each_message_on_one_clean_line() {
        let message = |role: &str, text: &str| v1::HistoryMessage {
            role: role.to_owned(),
            text: text.to_owned(),
        };
        assert_eq!(
            recap_lines(&[
                message("user", "fix the build\nplease"),
                message("assistant", "\n\u{1b}[31mDone.\u{7}"),
                message(
                    "compaction",
                    "context compacted (tool): 9 earlier events folded into a summary (900 → 90 tokens)\nThe summary."
                ),
            ]),
            [
                "  you> fix the build …",
                "  model> [31mDone.",
                "  ⋯> context compacted (tool): 9 earlier events folded into a summary (900 → 90 tokens) …"
            ]
        );
    }

    #[test]
    fn a_title_with_escapes_cannot_reach_the_terminal() {
        assert_eq!(shorten("bad \u{1b}[2Jtitle", TITLE_WIDTH), "bad [2Jtitle");
        assert_eq!(ago(200_000_000, 0), "2 days ago");
    }
}
