//! `codaris chat`: an interactive session.
//!
//! Text streams as it arrives; each tool call and its result is one line (a command's last
//! lines of output folded under it; `--verbose` adds an allowed call's code), and a status line
//! shows the tool running (a command's latest output) or a model API being retried; a
//! permission card shows what the call would do and asks at a prompt (once / session / deny
//! for the session; Ctrl-C refuses just that call). Ctrl-C during a turn cancels the turn, not
//! the program; Ctrl-D at the prompt (or `/exit`) ends the session. Arrow keys walk the history,
//! which is kept across chats (`chat_history`). Lines like `/help` are chat's own commands
//! (`chat_commands`), never sent to the model. `--resume ID` continues a stored session.

use codaris_proto::v1;
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use super::Outcome;
use super::card_view;
use super::chat_commands::{self, ChatState, Flow, Line};
use super::chat_history::{self, LineEditor};
use super::question_view;
use super::run::{Layout, Printer, approve_name, card_answer, describe, open_session};
use super::sessions;
use crate::cli::{Approve, ChatArgs};
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

type Sessions = v1::sessions_client::SessionsClient<tonic::transport::Channel>;

/// `--json` never reaches here: `commands::run` refuses it for chat (exit 2).
pub async fn chat(target: &Target, autostart: bool, args: ChatArgs) -> Result<Outcome, CliError> {
    let channel = client::open(target, autostart).await?;
    let mut sessions = v1::sessions_client::SessionsClient::new(channel);
    let script = args
        .session
        .script
        .as_deref()
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let state = match &args.resume {
        Some(id) => {
            let (session, was_ended) =
                sessions::resume(&mut sessions, id, args.session.model.clone()).await?;
            output::line(&format!(
                "resumed session {} ({}{}){}",
                session.id,
                sessions::turns(session.turns),
                if was_ended { ", reopened" } else { "" },
                if session.title.is_empty() {
                    String::new()
                } else {
                    format!(": {}", session.title)
                }
            ))?;
            for line in sessions::recap(&mut sessions, &session.id).await {
                output::line(&line)?;
            }
            ChatState {
                // A resumed scripted session's `/clear` plays the script it was opened with.
                script: if script.is_empty() {
                    session.script.clone()
                } else {
                    script
                },
                session,
                // Left as it was found: one that was active elsewhere stays active.
                ends_session: was_ended,
            }
        }
        None => ChatState {
            session: open_session(&mut sessions, args.session).await?,
            ends_session: true,
            script,
        },
    };
    let mut lines = LineEditor::open(chat_history::path(target))?;
    output::line(&format!(
        "codaris chat — session {} in {} (/help lists chat's commands, Ctrl-C cancels a turn, Ctrl-D quits)",
        state.session.id, state.session.cwd
    ))?;
    let state = converse(&mut sessions, state, &mut lines, args.verbose).await?;
    if state.ends_session {
        sessions
            .end_session(v1::EndSessionRequest {
                id: state.session.id,
            })
            .await?;
    }
    Ok(Outcome::Success)
}

/// Reads lines until `/exit` or end of input: chat's own commands run here, every other line
/// is a turn. Returns the session the chat ended on (`/clear` changes it).
async fn converse(
    sessions: &mut Sessions,
    mut state: ChatState,
    lines: &mut LineEditor,
    verbose: bool,
) -> Result<ChatState, CliError> {
    loop {
        let line = match lines.editor.readline("you> ") {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => return Ok(state),
            Err(e) => {
                return Err(CliError::Terminal {
                    message: e.to_string(),
                });
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        lines.remember(&line);
        match chat_commands::classify(&line) {
            Line::Message => {
                let id = state.session.id.clone();
                turn(sessions, &id, line, &mut lines.editor, verbose).await?;
            }
            Line::Unknown(name) => {
                output::line(&format!("unknown command /{name}; /help lists them"))?;
            }
            Line::Command(command) => match chat_commands::run(command, sessions, &mut state).await
            {
                Ok(Flow::Exit) => return Ok(state),
                Ok(Flow::Continue) => {}
                // A command the daemon refused (a model it cannot use, a turn still running)
                // is said, and the chat goes on.
                Err(err @ CliError::Rpc(_)) => {
                    output::error_line(&format!("codaris: {err}"));
                }
                Err(err) => return Err(err),
            },
        }
    }
}

/// `codaris` without a command: `codaris chat` with every default.
pub fn default_args() -> Result<ChatArgs, CliError> {
    use clap::{Args, FromArgMatches};
    let command = ChatArgs::augment_args(clap::Command::new("chat"));
    let matches = command
        .try_get_matches_from(["chat"])
        .map_err(|e| CliError::Terminal {
            message: e.to_string(),
        })?;
    ChatArgs::from_arg_matches(&matches).map_err(|e| CliError::Terminal {
        message: e.to_string(),
    })
}

async fn turn(
    sessions: &mut Sessions,
    session_id: &str,
    text: String,
    editor: &mut DefaultEditor,
    verbose: bool,
) -> Result<(), CliError> {
    let mut stream = sessions
        .turn(v1::TurnRequest {
            session_id: session_id.to_owned(),
            text,
        })
        .await?
        .into_inner();
    // Lines for people, and the status line while a tool runs or the model API is retried;
    // the model's text streams as it arrives.
    let printer = Printer::new(false, Layout::all_on_stdout(verbose));
    let mut cancelling = false;
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
            printer.end_text()?;
            printer.clear_status();
            return Ok(());
        };
        match &event {
            v1::turn_event::Event::Text(text) => {
                printer.text(&text.text)?;
                continue;
            }
            v1::turn_event::Event::TurnStarted(_) | v1::turn_event::Event::Binding(_) => continue,
            _ => {}
        }
        printer.end_text()?;
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
                        answered_by: String::new(),
                    })
                    .await?;
                output::line(&format!("  answered: {name}"))?;
                printer.resume_status();
            }
            v1::turn_event::Event::Question(question) => {
                printer.clear_status();
                let answers = ask_question(editor, question)?;
                sessions
                    .answer_question(v1::AnswerQuestionRequest {
                        session_id: session_id.to_owned(),
                        question_id: question.id.clone(),
                        answer_secret: question.answer_secret.clone(),
                        answers: answers.clone(),
                    })
                    .await?;
                output::line(&format!(
                    "  answered: {}",
                    question_view::answers_line(&answers)
                ))?;
                printer.resume_status();
            }
            other => {
                let (value, line) = describe(other, Approve::Deny, verbose);
                printer.event(other, value, &line)?;
            }
        }
    }
}

/// Shows the model's questions with numbered options and reads one answer for each; Ctrl-C
/// (or the end of input) leaves the rest unanswered.
fn ask_question(
    editor: &mut DefaultEditor,
    question: &v1::Question,
) -> Result<Vec<v1::QuestionAnswer>, CliError> {
    output::line(&format!("\n{}", question_view::lines(question)))?;
    let mut answers = Vec::with_capacity(question.questions.len());
    for (i, item) in question.questions.iter().enumerate() {
        let words = if item.custom { ", your own words" } else { "" };
        let several = if item.multiple { "(s) like 1,3" } else { "" };
        let prompt = format!(
            "  {}: option number{several}{words}, or Enter for no answer? ",
            i + 1
        );
        loop {
            let line = match editor.readline(&prompt) {
                Ok(line) => line,
                Err(ReadlineError::Interrupted | ReadlineError::Eof) => return Ok(answers),
                Err(e) => {
                    return Err(CliError::Terminal {
                        message: e.to_string(),
                    });
                }
            };
            if let Some(answer) = question_view::read_choice(item, &line) {
                answers.push(answer);
                break;
            }
        }
    }
    Ok(answers)
}

/// Shows a card (what the call would do, then the question) and asks how to answer it until
/// the answer is one the card offers: the wire answer and its name. Ctrl-C (or the end of
/// input) refuses this one call only; `d` refuses it for the rest of the session.
fn ask(
    editor: &mut DefaultEditor,
    card: &v1::Card,
) -> Result<(v1::CardAnswer, &'static str), CliError> {
    let preview = card_view::preview_lines(card, card_view::colour_wanted());
    let raised = if card.raised_in.is_empty() {
        String::new()
    } else {
        format!(
            "[subagent {} · {}] ",
            output::shown(&card.raised_in),
            output::shown(&card.raised_in_agent)
        )
    };
    output::styled(&format!(
        "\n{preview}? {raised}{}",
        output::shown(&card.sentence)
    ))?;
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
