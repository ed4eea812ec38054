//! `codaris chat`: an interactive session.
//!
//! Text streams as it arrives; each tool call and its decision is one line, and a status line
//! shows the tool running (a command's latest output) or a model API being retried; a
//! permission card shows what the call would do and asks at a prompt (once / session / deny
//! for the session; Ctrl-C refuses just that call). Ctrl-C during a turn cancels the turn, not
//! the program; Ctrl-D at the prompt ends the session. Arrow keys walk the history.

use std::io::Write;

use codaris_proto::v1;
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use super::Outcome;
use super::card_view;
use super::run::{Printer, approve_name, card_answer, describe, open_session};
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
    // Lines for people, and the status line while a tool runs or the model API is retried.
    let printer = Printer::new(false);
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
            printer.clear_status();
            return Ok(());
        };
        match &event {
            v1::turn_event::Event::Text(text) => {
                // The status line redraws at the start of its line: it would erase the text.
                printer.clear_status();
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
                printer.clear_status();
                let (answer, name) = ask(editor, card)?;
                sessions
                    .answer_card(v1::AnswerCardRequest {
                        session_id: session_id.to_owned(),
                        card_id: card.id.clone(),
                        answer: answer.into(),
                        answer_secret: card.answer_secret.clone(),
                    })
                    .await?;
                output::line(&format!("  answered: {name}"))?;
                printer.resume_status();
            }
            other => {
                let (value, line) = describe(other, Approve::Deny);
                printer.event(other, value, &line)?;
            }
        }
    }
}

/// Shows a card (what the call would do, then the question) and asks how to answer it until
/// the answer is one the card offers: the wire answer and its name. Ctrl-C (or the end of
/// input) refuses this one call only; `d` refuses it for the rest of the session.
fn ask(
    editor: &mut DefaultEditor,
    card: &v1::Card,
) -> Result<(v1::CardAnswer, &'static str), CliError> {
    let preview = card_view::preview_lines(card, card_view::colour_wanted());
    output::line(&format!("\n{preview}? {}", card.sentence))?;
    let programs = card
        .programs
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let prompt = if programs.is_empty() {
        "  allow [o]nce, for the [s]ession, [d]eny for the session, or Ctrl-C to refuse just this call? ".to_owned()
    } else {
        format!(
            "  allow [o]nce, for the [s]ession, [p]rograms {programs} anywhere this session, [d]eny for the session, or Ctrl-C to refuse just this call? "
        )
    };
    let chosen = |approve: Approve| Ok((card_answer(approve), approve_name(approve)));
    loop {
        let answer = match editor.readline(&prompt) {
            Ok(answer) => answer,
            // No answer refuses this call and nothing more: the next one asks again.
            Err(ReadlineError::Interrupted | ReadlineError::Eof) => {
                return Ok((v1::CardAnswer::DenyOnce, "deny once"));
            }
            Err(e) => {
                return Err(CliError::Terminal {
                    message: e.to_string(),
                });
            }
        };
        match answer.trim().to_ascii_lowercase().as_str() {
            "o" | "once" => return chosen(Approve::Once),
            "s" | "session" => return chosen(Approve::Session),
            "p" | "programs" if !programs.is_empty() => return chosen(Approve::Programs),
            "d" | "deny" | "n" | "no" => return chosen(Approve::Deny),
            _ => continue,
        }
    }
}
