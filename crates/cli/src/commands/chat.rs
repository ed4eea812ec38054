//! `codaris chat`: an interactive session.
//!
//! Text streams as it arrives; each tool call and its decision is one line; a permission card
//! asks at a prompt (once / session / deny). Ctrl-C during a turn cancels the turn, not the
//! program; Ctrl-D at the prompt ends the session. Arrow keys walk the history.

use std::io::Write;

use codaris_proto::v1;
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use super::Outcome;
use super::run::{approve_name, card_answer, describe, open_session};
use crate::cli::{Approve, ChatArgs};
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

type Sessions = v1::sessions_client::SessionsClient<tonic::transport::Channel>;

pub async fn chat(target: &Target, autostart: bool, args: ChatArgs) -> Result<Outcome, CliError> {
    let channel = client::open(target, autostart).await?;
    let mut sessions = v1::sessions_client::SessionsClient::new(channel);
    let session = open_session(&mut sessions, args.session).await?;
    let mut editor = DefaultEditor::new().map_err(|e| CliError::Terminal {
        message: e.to_string(),
    })?;
    output::line(&format!(
        "codaris chat — session {} in {} (Ctrl-C cancels a turn, Ctrl-D quits)",
        session.id, session.cwd
    ))?;
    loop {
        let line = match editor.readline("you> ") {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                return Err(CliError::Terminal {
                    message: e.to_string(),
                });
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(line.as_str());
        turn(&mut sessions, &session.id, line, &mut editor).await?;
    }
    sessions
        .end_session(v1::EndSessionRequest { id: session.id })
        .await?;
    Ok(Outcome::Success)
}

async fn turn(
    sessions: &mut Sessions,
    session_id: &str,
    text: String,
    editor: &mut DefaultEditor,
) -> Result<(), CliError> {
    let mut stream = sessions
        .turn(v1::TurnRequest {
            session_id: session_id.to_owned(),
            text,
        })
        .await?
        .into_inner();
    let mut cancelling = false;
    // Streamed text has no newline of its own; the next line-shaped event starts one.
    let mut mid_line = false;
    loop {
        let event = tokio::select! {
            message = stream.message() => message?,
            _ = tokio::signal::ctrl_c(), if !cancelling => {
                cancelling = true;
                sessions.cancel_turn(v1::CancelTurnRequest { session_id: session_id.to_owned() }).await?;
                continue;
            }
        };
        let Some(event) = event.and_then(|e| e.event) else {
            return Ok(());
        };
        match &event {
            v1::turn_event::Event::Text(text) => {
                let mut out = std::io::stdout().lock();
                write!(out, "{}", text.text)?;
                out.flush()?;
                mid_line = !text.text.ends_with('\n');
                continue;
            }
            v1::turn_event::Event::TurnStarted(_) | v1::turn_event::Event::Binding(_) => continue,
            _ => {}
        }
        if std::mem::take(&mut mid_line) {
            output::line("")?;
        }
        match &event {
            v1::turn_event::Event::Card(card) => {
                let answer = ask(editor, card)?;
                sessions
                    .answer_card(v1::AnswerCardRequest {
                        session_id: session_id.to_owned(),
                        card_id: card.id.clone(),
                        answer: card_answer(answer).into(),
                        answer_secret: card.answer_secret.clone(),
                    })
                    .await?;
                output::line(&format!("  answered: {}", approve_name(answer)))?;
            }
            other => {
                let (_, line) = describe(other, Approve::Deny);
                output::line(&line)?;
            }
        }
    }
}

/// Asks how to answer a card until the answer is one the card offers.
fn ask(editor: &mut DefaultEditor, card: &v1::Card) -> Result<Approve, CliError> {
    output::line(&format!("\n? {}", card.sentence))?;
    let programs = card
        .programs
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let prompt = if programs.is_empty() {
        "  allow [o]nce, for the [s]ession, or [d]eny? ".to_owned()
    } else {
        format!(
            "  allow [o]nce, for the [s]ession, [p]rograms {programs} anywhere this session, or [d]eny? "
        )
    };
    loop {
        let answer = match editor.readline(&prompt) {
            Ok(answer) => answer,
            // No answer is a no.
            Err(ReadlineError::Interrupted | ReadlineError::Eof) => return Ok(Approve::Deny),
            Err(e) => {
                return Err(CliError::Terminal {
                    message: e.to_string(),
                });
            }
        };
        match answer.trim().to_ascii_lowercase().as_str() {
            "o" | "once" => return Ok(Approve::Once),
            "s" | "session" => return Ok(Approve::Session),
            "p" | "programs" if !programs.is_empty() => return Ok(Approve::Programs),
            "d" | "deny" | "n" | "no" => return Ok(Approve::Deny),
            _ => continue,
        }
    }
}
