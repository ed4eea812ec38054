//! Chat's own commands, run by the CLI and never sent to the model: `/help`, `/exit`,
//! `/model`, `/mode`, `/sessions`, `/clear`, `/status`, `/undo`.
//!
//! Which lines are commands: a line whose first word is `/` and a name of letters, digits,
//! `_` or `-` (nothing else, so `/tmp/x is big` and `//x` are messages). One of the names
//! above (in any letter case) is run here; a slash command of the agent's (`/research`,
//! `/review`, `/searchData`, … see `codaris_agent::Command`) is a message, sent to the model
//! as typed; any other name is refused here with one line and sent nowhere, so a typo of a
//! chat command never reaches the model.

use codaris_proto::v1;

use super::sessions::{activity_name, permission_mode_name, state_name, turns};
use crate::error::CliError;
use crate::output;

type Sessions = v1::sessions_client::SessionsClient<tonic::transport::Channel>;

/// What a line typed at the chat prompt is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line<'a> {
    /// A message for the model (the agent's own slash commands included).
    Message,
    Command(ChatCommand<'a>),
    /// `/name` that names no command: refused here, sent nowhere.
    Unknown(&'a str),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatCommand<'a> {
    Help,
    Exit,
    /// Show the model, or switch to the one named.
    Model(Option<&'a str>),
    /// Show the modes, or switch one: the words after `/mode`.
    Mode(Vec<&'a str>),
    Sessions,
    Clear,
    Status,
    /// Undo a turn's file changes: the words after `/undo` (a turn from 1, `--dry-run`).
    Undo(Vec<&'a str>),
}

/// Reads a line as the module header says.
pub fn classify(line: &str) -> Line<'_> {
    let mut words = line.split_whitespace();
    let Some(first) = words.next() else {
        return Line::Message;
    };
    let Some(name) = first.strip_prefix('/') else {
        return Line::Message;
    };
    let command_shaped = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !command_shaped || codaris_agent::command_of(first).is_some() {
        return Line::Message;
    }
    let args: Vec<&str> = words.collect();
    let command = match name.to_ascii_lowercase().as_str() {
        "help" => ChatCommand::Help,
        "exit" | "quit" => ChatCommand::Exit,
        "model" => ChatCommand::Model(args.first().copied()),
        "mode" => ChatCommand::Mode(args),
        "sessions" => ChatCommand::Sessions,
        "clear" => ChatCommand::Clear,
        "status" => ChatCommand::Status,
        "undo" => ChatCommand::Undo(args),
        _ => return Line::Unknown(name),
    };
    Line::Command(command)
}

/// The session a chat is talking to, and what opening another like it takes.
#[derive(Debug)]
pub struct ChatState {
    pub session: v1::Session,
    /// End the session when the chat ends: it opened it, or reopened an ended one. A
    /// session that was active elsewhere is left active.
    pub ends_session: bool,
    /// The scripted provider's script (absolute), for `/clear`'s new session.
    pub script: String,
}

/// What the chat does after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Exit,
}

pub const HELP: &str = "\
chat's own commands (never sent to the model):
  /help                 this list
  /exit                 end the chat (as Ctrl-D does)
  /model [NAME]         show the model, or switch to NAME from the next turn
  /mode [MODE]          show the operating mode and the permission mode, or switch one:
                          operating mode:  agent | plan | ask
                          permission mode: accept_edits | bypass | permission ask
  /sessions             the stored sessions, most recently used first (* is this one)
  /clear                end this session (it stays resumable) and start a fresh one here
  /status               this session: id, cwd, provider, model, modes, turns
  /undo [N] [--dry-run] put back the files turn N (default: the last that changed files)
                          changed through its tools; --dry-run shows the diff only
Any other line is a message. The agent's slash commands (/review, /research, /searchData,
/run, …) go to the model as typed; a line starting with // or a path (/tmp/x) is a message.";

/// Runs one command; its output goes to standard output.
pub async fn run(
    command: ChatCommand<'_>,
    sessions: &mut Sessions,
    state: &mut ChatState,
) -> Result<Flow, CliError> {
    match command {
        ChatCommand::Help => output::line(HELP)?,
        ChatCommand::Exit => return Ok(Flow::Exit),
        ChatCommand::Model(None) => {
            let session = refresh(sessions, state).await?;
            output::line(&format!(
                "model: {} (provider {})",
                model_name(session),
                session.provider
            ))?;
        }
        ChatCommand::Model(Some(model)) => {
            let session = update(
                sessions,
                state,
                v1::UpdateSessionRequest {
                    model: model.to_owned(),
                    ..Default::default()
                },
            )
            .await?;
            output::line(&format!(
                "model: {} (provider {}) from the next turn",
                model_name(session),
                session.provider
            ))?;
        }
        ChatCommand::Mode(words) => mode(sessions, state, &words).await?,
        ChatCommand::Sessions => {
            let listed = super::sessions::fetch(sessions, true).await?;
            let now = super::sessions::now_ms();
            for line in super::sessions::table(&listed, Some(&state.session.id), now) {
                output::line(&line)?;
            }
        }
        ChatCommand::Clear => clear(sessions, state).await?,
        ChatCommand::Undo(words) => match undo_args(&words) {
            Some((turn, dry_run)) => {
                // A refusal is printed by `undo_in` itself; the chat goes on either way.
                super::undo::undo_in(sessions, &state.session.id, turn, dry_run, false).await?;
            }
            None => output::line("usage: /undo [N] [--dry-run] (N counts turns from 1)")?,
        },
        ChatCommand::Status => {
            let session = refresh(sessions, state).await?;
            for line in status_lines(session) {
                output::line(&line)?;
            }
        }
    }
    Ok(Flow::Continue)
}

/// The turn (from 0) and dry-run flag of `/undo WORDS`; `None` when they do not parse.
fn undo_args(words: &[&str]) -> Option<(Option<u32>, bool)> {
    let mut turn = None;
    let mut dry_run = false;
    for word in words {
        match *word {
            "--dry-run" | "dry-run" => dry_run = true,
            n => {
                let people: u32 = n.parse().ok()?;
                if turn.replace(output::turn_from_people(people)?).is_some() {
                    return None;
                }
            }
        }
    }
    Some((turn, dry_run))
}

/// What `/mode WORDS` asks for: an operating mode or a permission mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ModeChange {
    Show,
    Activity(v1::Activity),
    Permission(v1::PermissionMode),
}

fn mode_change(words: &[&str]) -> Option<ModeChange> {
    let activity = |word: &str| match word {
        "agent" => Some(v1::Activity::Agent),
        "plan" => Some(v1::Activity::Plan),
        "ask" => Some(v1::Activity::Ask),
        _ => None,
    };
    let permission = |word: &str| match word {
        "ask" => Some(v1::PermissionMode::Ask),
        "accept_edits" | "accept-edits" => Some(v1::PermissionMode::AcceptEdits),
        "bypass" => Some(v1::PermissionMode::Bypass),
        _ => None,
    };
    let lower: Vec<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
    let lower: Vec<&str> = lower.iter().map(String::as_str).collect();
    match lower.as_slice() {
        [] => Some(ModeChange::Show),
        // A bare `ask` is the operating mode; the permission mode `ask` is named as one.
        ["activity" | "operating", word] => activity(word).map(ModeChange::Activity),
        ["permission" | "permissions", word] => permission(word).map(ModeChange::Permission),
        [word] => activity(word)
            .map(ModeChange::Activity)
            .or_else(|| permission(word).map(ModeChange::Permission)),
        _ => None,
    }
}

async fn mode(
    sessions: &mut Sessions,
    state: &mut ChatState,
    words: &[&str],
) -> Result<(), CliError> {
    let line = match mode_change(words) {
        None => format!(
            "unknown mode `{}`: operating modes are agent, plan and ask; permission modes are \
             accept_edits, bypass and `permission ask`",
            words.join(" ")
        ),
        Some(ModeChange::Show) => modes(refresh(sessions, state).await?),
        Some(ModeChange::Activity(activity)) => {
            let request = v1::UpdateSessionRequest {
                activity: activity.into(),
                ..Default::default()
            };
            let session = update(sessions, state, request).await?;
            format!(
                "operating mode: {} from the next turn",
                activity_name(session.activity)
            )
        }
        Some(ModeChange::Permission(mode)) => {
            let request = v1::UpdateSessionRequest {
                permission_mode: mode.into(),
                ..Default::default()
            };
            let session = update(sessions, state, request).await?;
            format!(
                "permission mode: {} from the next turn",
                permission_mode_name(session.permission_mode)
            )
        }
    };
    output::line(&line)
}

fn modes(session: &v1::Session) -> String {
    format!(
        "operating mode: {} · permission mode: {}",
        activity_name(session.activity),
        permission_mode_name(session.permission_mode)
    )
}

fn model_name(session: &v1::Session) -> &str {
    if session.model.is_empty() {
        "(the provider's own)"
    } else {
        &session.model
    }
}

/// `/status`, one field a line.
fn status_lines(session: &v1::Session) -> Vec<String> {
    let mut lines = vec![
        format!(
            "session   {} ({}, {})",
            session.id,
            state_name(session.state),
            turns(session.turns)
        ),
        format!("cwd       {}", session.cwd),
        format!("provider  {}", session.provider),
        // A level `switch_model` set rides on the model's line; none: the model's own.
        if session.reasoning.is_empty() {
            format!("model     {}", model_name(session))
        } else {
            format!(
                "model     {} (reasoning {})",
                model_name(session),
                session.reasoning
            )
        },
        format!(
            "mode      {} (operating) · {} (permission)",
            activity_name(session.activity),
            permission_mode_name(session.permission_mode)
        ),
    ];
    if !session.title.is_empty() {
        lines.insert(1, format!("title     {}", session.title));
    }
    lines
}

/// `/clear`: the session ends (and stays resumable); a new one opens in the same cwd with the
/// same provider, model, base URL and modes.
async fn clear(sessions: &mut Sessions, state: &mut ChatState) -> Result<(), CliError> {
    let old = state.session.clone();
    let fresh = sessions
        .create_session(v1::CreateSessionRequest {
            cwd: old.cwd.clone(),
            activity: old.activity,
            permission_mode: old.permission_mode,
            provider: old.provider.clone(),
            model: old.model.clone(),
            script: state.script.clone(),
            base_url: old.base_url.clone(),
            additional_dirs: old.additional_dirs.clone(),
            mcp_servers: Vec::new(),
        })
        .await?
        .into_inner();
    sessions
        .end_session(v1::EndSessionRequest { id: old.id.clone() })
        .await?;
    output::line(&format!(
        "new session {} in {}; {} ended (`codaris chat --resume {}` continues it)",
        fresh.id, fresh.cwd, old.id, old.id
    ))?;
    state.session = fresh;
    state.ends_session = true;
    Ok(())
}

async fn refresh<'s>(
    sessions: &mut Sessions,
    state: &'s mut ChatState,
) -> Result<&'s v1::Session, CliError> {
    state.session = sessions
        .get_session(v1::GetSessionRequest {
            id: state.session.id.clone(),
        })
        .await?
        .into_inner();
    Ok(&state.session)
}

async fn update<'s>(
    sessions: &mut Sessions,
    state: &'s mut ChatState,
    mut request: v1::UpdateSessionRequest,
) -> Result<&'s v1::Session, CliError> {
    request.id = state.session.id.clone();
    state.session = sessions.update_session(request).await?.into_inner();
    Ok(&state.session)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn only_a_slash_word_is_a_command_and_the_agents_own_go_to_the_model() {
        use ChatCommand::*;
        for (line, expected) in [
            ("/help", Line::Command(Help)),
            ("  /HELP  ", Line::Command(Help)),
            ("/exit", Line::Command(Exit)),
            ("/model", Line::Command(Model(None))),
            ("/model gpt-5 extra", Line::Command(Model(Some("gpt-5")))),
            (
                "/mode permission ask",
                Line::Command(Mode(vec!["permission", "ask"])),
            ),
            ("/sessions", Line::Command(Sessions)),
            ("/clear", Line::Command(Clear)),
            ("/status", Line::Command(Status)),
            ("/undo", Line::Command(Undo(vec![]))),
            (
                "/undo 2 --dry-run",
                Line::Command(Undo(vec!["2", "--dry-run"])),
            ),
            ("/frobnicate now", Line::Unknown("frobnicate")),
            ("/x", Line::Unknown("x")),
            // The agent's slash commands are messages, in any case.
            ("/research CRISPR screens", Line::Message),
            ("/searchData GSE12345", Line::Message),
            ("/REVIEW the pipeline", Line::Message),
            ("/run the pipeline", Line::Message),
            // Not command-shaped: messages.
            ("/tmp/x is big", Line::Message),
            ("//help", Line::Message),
            ("/", Line::Message),
            ("/help.", Line::Message),
            ("please /help me", Line::Message),
            ("", Line::Message),
            ("hello", Line::Message),
        ] {
            assert_eq!(classify(line), expected, "{line:?}");
        }
    }

    #[test]
    fn undo_counts_turns_from_one() {
        assert_eq!(undo_args(&[]), Some((None, false)));
        assert_eq!(undo_args(&["3"]), Some((Some(2), false)));
        assert_eq!(undo_args(&["--dry-run", "1"]), Some((Some(0), true)));
        assert_eq!(undo_args(&["0"]), None);
        assert_eq!(undo_args(&["two"]), None);
        assert_eq!(undo_args(&["1", "2"]), None);
    }

    #[test]
    fn mode_names_both_kinds_and_a_bare_ask_is_the_operating_mode() {
        use ModeChange::*;
        assert_eq!(mode_change(&[]), Some(Show));
        assert_eq!(mode_change(&["plan"]), Some(Activity(v1::Activity::Plan)));
        assert_eq!(mode_change(&["ask"]), Some(Activity(v1::Activity::Ask)));
        assert_eq!(
            mode_change(&["permission", "ask"]),
            Some(Permission(v1::PermissionMode::Ask))
        );
        assert_eq!(
            mode_change(&["Accept-Edits"]),
            Some(Permission(v1::PermissionMode::AcceptEdits))
        );
        assert_eq!(
            mode_change(&["operating", "agent"]),
            Some(Activity(v1::Activity::Agent))
        );
        assert_eq!(mode_change(&["permission", "plan"]), None);
        assert_eq!(mode_change(&["sideways"]), None);
        assert_eq!(mode_change(&["plan", "now", "please"]), None);
    }

    #[test]
    fn status_names_the_session_its_modes_and_a_missing_model() {
        let session = v1::Session {
            id: "s000004".to_owned(),
            state: v1::SessionState::Active.into(),
            cwd: "/w/p".to_owned(),
            provider: "scripted".to_owned(),
            activity: v1::Activity::Plan.into(),
            permission_mode: v1::PermissionMode::Bypass.into(),
            turns: 3,
            title: "fix it".to_owned(),
            ..Default::default()
        };
        assert_eq!(
            status_lines(&session),
            [
                "session   s000004 (active, 3 turns)",
                "title     fix it",
                "cwd       /w/p",
                "provider  scripted",
                "model     (the provider's own)",
                "mode      plan (operating) · bypass (permission)",
            ]
        );
    }

    #[test]
    fn status_shows_the_model_and_reasoning_level_a_switch_left() {
        let session = v1::Session {
            id: "s000005".to_owned(),
            provider: "openai".to_owned(),
            model: "gpt-5-mini".to_owned(),
            reasoning: "high".to_owned(),
            ..Default::default()
        };
        assert!(
            status_lines(&session).contains(&"model     gpt-5-mini (reasoning high)".to_owned()),
            "{:?}",
            status_lines(&session)
        );
    }
}
