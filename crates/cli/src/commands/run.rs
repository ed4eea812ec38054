//! `codaris run`: one session, each prompt one turn, cards answered by `--approve`.
//!
//! With `--json` it prints the event stream, one JSON object per line — a contract other tools
//! read: `session`, `turn_started`, `binding`, `text`, `tool_call`, `progress` (of `kind`
//! `tool` or `provider_retry`), `tool_result`, `card`, `usage`, `eviction`, `compaction`,
//! `turn_ended` (each printed by `run_event.rs`). In text mode
//! standard output carries the model's text alone, as it streams (`codaris run "…" > answer.md`
//! keeps the answer), and every other line goes to standard error: the session, the turns
//! (numbered from 1), tool calls and their results (`result_view.rs`), cards, usage. On a
//! terminal a status line shows the tool running, a command's latest output and a model API's
//! retries (`status_line.rs`); a card shows what the call would do above its question
//! (`card_view.rs`).
//!
//! Once the session exists, SIGINT, SIGTERM or a closed standard output stop the program the
//! same way: the running turn is cancelled (which stops its commands) and the session ended,
//! so nothing is left running in the daemon and the next `codaris run` is not refused.
//!
//! `--session ID` plays the prompts in a stored session instead, continuing its history in
//! its own cwd, and leaves it as it found it: an ended one is reopened for the run and ended
//! again after it (its old grants stay lapsed); an active one stays active.

use std::io::Write;
use std::time::Duration;

use codaris_proto::v1;
use serde_json::{Value, json};

use super::Outcome;
use super::card_view;
use super::question_view::{self, Answers};
use super::result_view;
use super::status_line::StatusLine;
use crate::cli::{Approve, Mode, PermissionModeArg, RunArgs, SessionArgs};
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;

pub use super::run_event::describe;
pub(crate) use super::run_event::prost_to_json;
use crate::stop::{Stop, Stops};

type Sessions = v1::sessions_client::SessionsClient<tonic::transport::Channel>;

/// How long each clean-up call may take when the program is stopping anyway: a daemon that
/// does not answer must not keep a Ctrl-C waiting.
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(3);

/// Opens a session as `args` say; relative paths are taken from the current directory.
pub async fn open_session(
    sessions: &mut v1::sessions_client::SessionsClient<tonic::transport::Channel>,
    args: SessionArgs,
) -> Result<v1::Session, CliError> {
    let absolute = |path: std::path::PathBuf| -> Result<String, CliError> {
        let path = if path.is_absolute() {
            path
        } else {
            std::env::current_dir()
                .map_err(|source| CliError::Read {
                    path: path.clone(),
                    source,
                })?
                .join(path)
        };
        Ok(path.display().to_string())
    };
    let choice =
        super::session_model::SessionModel::from_args(&args, &|name| std::env::var(name).ok())?;
    let cwd = match args.cwd {
        Some(dir) => absolute(dir)?,
        None => absolute(".".into())?.trim_end_matches("/.").to_owned(),
    };
    let script = args.script.map(absolute).transpose()?.unwrap_or_default();
    let session = sessions
        .create_session(v1::CreateSessionRequest {
            cwd,
            activity: match args.mode {
                Mode::Agent => v1::Activity::Agent,
                Mode::Plan => v1::Activity::Plan,
                Mode::Ask => v1::Activity::Ask,
            }
            .into(),
            permission_mode: match args.permission_mode {
                PermissionModeArg::Ask => v1::PermissionMode::Ask,
                PermissionModeArg::AcceptEdits => v1::PermissionMode::AcceptEdits,
                PermissionModeArg::Bypass => v1::PermissionMode::Bypass,
            }
            .into(),
            provider: choice.provider,
            model: choice.model,
            script,
            base_url: choice.base_url,
            additional_dirs: Vec::new(),
            mcp_servers: Vec::new(),
        })
        .await?
        .into_inner();
    // On standard error, so `--json` output stays the event stream alone.
    // A file of the session's directory by its name; one further up the repository whole.
    for file in &session.instructions {
        let path = std::path::Path::new(&file.path);
        let name = match path.strip_prefix(&session.cwd) {
            Ok(name) => name.display().to_string(),
            Err(_) => file.path.clone(),
        };
        output::error_line(&format!("read {name} ({})", output::size(file.bytes)));
    }
    Ok(session)
}

pub async fn run(
    target: &Target,
    autostart: bool,
    json_out: bool,
    args: RunArgs,
) -> Result<Outcome, CliError> {
    // Read before any session is opened: a context refused opens none.
    let prompts = super::run_input::prompts(args.prompts, &args.context)?;
    let channel = client::open(target, autostart).await?;
    let mut sessions = v1::sessions_client::SessionsClient::new(channel);
    // `--session ID` leaves the session as it found it: one that had ended is reopened for
    // these turns and ended again after them; one that was active (a chat elsewhere) stays.
    let (session, ends_session) = match &args.resume {
        Some(id) => super::sessions::resume(&mut sessions, id, args.session.model.clone()).await?,
        None => (open_session(&mut sessions, args.session).await?, true),
    };
    // From here the session is open in the daemon: whatever stops this program cancels its
    // turn, and ends it when this run opened (or reopened) it.
    let mut stops = Stops::watch();
    let printer = Printer::new(json_out, Layout::answer_on_stdout(args.verbose));
    let played = tokio::select! {
        stop = stops.next() => Err(stop),
        played = play_all(&mut sessions, &session.id, prompts, args.approve, Answers::new(args.answers), &printer) => {
            match played {
                Ok(failed) => Ok(failed),
                Err(CliError::BrokenPipe) => Err(Stop::ClosedOutput),
                Err(err) => {
                    abandon(&mut sessions, &session.id, ends_session).await;
                    return Err(err);
                }
            }
        }
    };
    match played {
        Ok(failed) => {
            if ends_session {
                sessions
                    .end_session(v1::EndSessionRequest { id: session.id })
                    .await?;
            }
            Ok(if failed {
                Outcome::Failed
            } else {
                Outcome::Success
            })
        }
        Err(stop) => {
            abandon(&mut sessions, &session.id, ends_session).await;
            Ok(match stop {
                Stop::Interrupt => Outcome::Interrupted,
                Stop::Terminate => Outcome::Terminated,
                Stop::ClosedOutput => Outcome::Success,
            })
        }
    }
}

/// Prints the session line, then plays each prompt as one turn; true when a turn ended in
/// error.
async fn play_all(
    sessions: &mut Sessions,
    session_id: &str,
    prompts: Vec<String>,
    approve: Approve,
    mut answers: Answers,
    printer: &Printer,
) -> Result<bool, CliError> {
    printer.print(
        json!({"type": "session", "id": session_id}),
        &format!("session {session_id}"),
    )?;
    let mut failed = false;
    for prompt in prompts {
        let reason =
            play_turn(sessions, session_id, prompt, approve, &mut answers, printer).await?;
        failed |= reason == "error";
    }
    Ok(failed)
}

/// Cancels the running turn and ends the session when `end` says this run owns it, best
/// effort: the program is stopping whatever the daemon answers, and ending the session would
/// cancel the turn too, so a failed call is not reported.
async fn abandon(sessions: &mut Sessions, session_id: &str, end: bool) {
    let cancel = sessions.cancel_turn(v1::CancelTurnRequest {
        session_id: session_id.to_owned(),
    });
    let _ = tokio::time::timeout(CLEANUP_TIMEOUT, cancel).await;
    if !end {
        return;
    }
    let end = sessions.end_session(v1::EndSessionRequest {
        id: session_id.to_owned(),
    });
    let _ = tokio::time::timeout(CLEANUP_TIMEOUT, end).await;
}

/// Runs one turn, answering its cards with `approve` and its questions from `answers`,
/// printing every event; returns why the turn ended.
pub async fn play_turn(
    sessions: &mut Sessions,
    session_id: &str,
    prompt: String,
    approve: Approve,
    answers: &mut Answers,
    printer: &Printer,
) -> Result<String, CliError> {
    let mut stream = sessions
        .turn(v1::TurnRequest {
            session_id: session_id.to_owned(),
            text: prompt,
        })
        .await?
        .into_inner();
    let mut reason = String::new();
    while let Some(event) = stream.message().await? {
        let Some(event) = event.event else { continue };
        let mut given = approve;
        let mut recorded = None;
        if let v1::turn_event::Event::Card(card) = &event {
            given = answer_for(approve, card);
            let answer = card_answer(given);
            // The reply comes once the answer is durable, naming the grant it recorded.
            let reply = sessions
                .answer_card(v1::AnswerCardRequest {
                    session_id: session_id.to_owned(),
                    card_id: card.id.clone(),
                    answer: answer.into(),
                    answer_secret: card.answer_secret.clone(),
                    answered_by: String::new(),
                })
                .await?
                .into_inner();
            recorded = Some(reply.grant_id);
        }
        let mut answered = None;
        if let v1::turn_event::Event::Question(question) = &event {
            let given = answers.take_for(question);
            // Refused (a label the question does not offer): the run stops with the reason.
            sessions
                .answer_question(v1::AnswerQuestionRequest {
                    session_id: session_id.to_owned(),
                    question_id: question.id.clone(),
                    answer_secret: question.answer_secret.clone(),
                    answers: given.clone(),
                })
                .await?;
            answered = Some(given);
        }
        if let v1::turn_event::Event::TurnEnded(ended) = &event {
            reason = ended.reason.clone();
        }
        let (mut value, mut text) = describe(&event, given, printer.layout.verbose);
        if let Some(given) = answered {
            value["answers"] = question_view::answers_json(&given);
            text.push_str(&format!("\n  → {}", question_view::answers_line(&given)));
        }
        if let (Some(grant_id), Some(fields)) = (recorded, value.as_object_mut()) {
            fields.insert(
                "grant_id".to_owned(),
                json!((!grant_id.is_empty()).then_some(grant_id)),
            );
        }
        printer.event(&event, value, &text)?;
    }
    printer.clear_status();
    Ok(reason)
}

/// The tool whose progress lines are its running output: shown on the status line only (its
/// result carries the output), never as lines of their own.
const STREAMING_TOOL: &str = result_view::COMMAND_TOOL;

/// How text mode lays out what it prints.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// Where every line but the model's text goes (the text always goes to standard output).
    pub lines: output::Stream,
    /// Whether an allowed call's line shows its decision code.
    pub verbose: bool,
}

impl Layout {
    /// `codaris run`: standard output is the model's answer alone; text blocks of different
    /// rounds are kept apart by an empty line, as the tool lines between them are elsewhere.
    pub fn answer_on_stdout(verbose: bool) -> Self {
        Self {
            lines: output::Stream::Stderr,
            verbose,
        }
    }

    /// `codaris chat` and `codaris demo`: one conversation on standard output.
    pub fn all_on_stdout(verbose: bool) -> Self {
        Self {
            lines: output::Stream::Stdout,
            verbose,
        }
    }
}

/// Where the model's streamed text stands on standard output.
#[derive(Debug, Default)]
struct TextState {
    /// A text block is being written (no other line since its first piece).
    open: bool,
    /// The block's last piece did not end its line.
    mid_line: bool,
    /// The last two characters written, to keep blocks apart by exactly one empty line.
    tail: String,
    /// A block was written before.
    written: bool,
}

/// Prints events as JSON lines or as lines for people, with the status line between them.
#[derive(Debug)]
pub struct Printer {
    pub json: bool,
    pub layout: Layout,
    status: std::sync::Mutex<StatusLine>,
    text: std::sync::Mutex<TextState>,
}

impl Printer {
    /// JSON lines with `json`; else text laid out as `layout` says and, on a terminal, the
    /// status line.
    pub fn new(json: bool, layout: Layout) -> Self {
        Self {
            json,
            layout,
            status: std::sync::Mutex::new(StatusLine::new(!json, layout.lines)),
            text: std::sync::Mutex::new(TextState::default()),
        }
    }

    fn status(&self) -> std::sync::MutexGuard<'_, StatusLine> {
        self.status
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn text_state(&self) -> std::sync::MutexGuard<'_, TextState> {
        self.text
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Prints one line (or, under `--json`, the value), the status line out of the way.
    pub fn print(&self, value: Value, text: &str) -> Result<(), CliError> {
        if self.json {
            output::json(&value)
        } else if text.is_empty() {
            Ok(())
        } else {
            self.end_text()?;
            self.status().print(text)
        }
    }

    /// Writes a piece of the model's text to standard output as it came, its control
    /// characters but newline and tab shown as text (a prompt injection may fill it with
    /// escapes). The status line goes first: it redraws at the start of its line and would
    /// erase a paragraph still being written; it comes back with the next tool.
    pub fn text(&self, piece: &str) -> Result<(), CliError> {
        if piece.is_empty() {
            return Ok(());
        }
        self.status().clear();
        let mut state = self.text_state();
        let mut out = std::io::stdout().lock();
        if !state.open && state.written && self.layout.lines != output::Stream::Stdout {
            // Nothing else separates two rounds' text in `> answer.md`: a paragraph break.
            if !state.tail.ends_with("\n\n") {
                out.write_all(b"\n")?;
            }
        }
        out.write_all(output::shown(piece).as_bytes())?;
        out.flush()?;
        state.open = true;
        state.written = true;
        state.mid_line = !piece.ends_with('\n');
        let mut tail: Vec<char> = state.tail.chars().chain(piece.chars()).collect();
        tail.drain(..tail.len().saturating_sub(2));
        state.tail = tail.into_iter().collect();
        Ok(())
    }

    /// Ends the text block being written, if any, with a newline when its last piece did not
    /// end its line: another line follows (on either stream, which share a terminal).
    pub fn end_text(&self) -> Result<(), CliError> {
        let mut state = self.text_state();
        if !state.open {
            return Ok(());
        }
        state.open = false;
        if std::mem::take(&mut state.mid_line) {
            let mut out = std::io::stdout().lock();
            out.write_all(b"\n")?;
            out.flush()?;
            state.tail.push('\n');
        }
        Ok(())
    }

    /// Shows one turn event: as its JSON line, or as its line for people and what it changes
    /// on the status line (a tool starting, a command's output, a retry, a result ending it).
    pub fn event(
        &self,
        event: &v1::turn_event::Event,
        value: Value,
        text: &str,
    ) -> Result<(), CliError> {
        use v1::turn_event::Event;
        if self.json {
            return output::json(&value);
        }
        if let Event::Text(piece) = event {
            return self.text(&piece.text);
        }
        self.end_text()?;
        let mut status = self.status();
        match event {
            Event::ToolCall(call) => {
                status.clear();
                status.print(text)?;
                status.tool_started(&call.tool);
                Ok(())
            }
            Event::ToolProgress(progress) => {
                if status.is_on() {
                    status.tool_output(&progress.tool, &progress.message);
                }
                if progress.tool == STREAMING_TOOL {
                    Ok(())
                } else {
                    status.print(text)
                }
            }
            Event::ProviderRetry(retry) if status.is_on() => {
                status.provider_retry(retry);
                Ok(())
            }
            Event::Question(_) => {
                status.clear();
                status.print(text)?;
                // `run` answered the question before printing it: the call goes on.
                status.resume();
                Ok(())
            }
            Event::Card(card) => {
                status.clear();
                let colour = card_view::colour_wanted_on(self.layout.lines);
                let preview = card_view::preview_lines(card, colour);
                if !preview.is_empty() {
                    status.print_styled(preview.trim_end_matches('\n'))?;
                }
                status.print(text)?;
                // `run` answered the card before printing it: the call goes on.
                status.resume();
                Ok(())
            }
            _ => {
                status.tool_finished();
                if text.is_empty() {
                    Ok(())
                } else {
                    status.print(text)
                }
            }
        }
    }

    /// Takes the status line off the screen (the turn is over, or a prompt follows).
    pub fn clear_status(&self) {
        self.status().clear();
    }

    /// Shows the running tool's status line again (after a card was answered at a prompt).
    pub fn resume_status(&self) {
        self.status().resume();
    }
}

/// What `approve` means for this card: a program-wide answer needs a card that lists programs.
pub fn answer_for(approve: Approve, card: &v1::Card) -> Approve {
    match approve {
        Approve::Programs if card.programs.is_empty() => Approve::Session,
        other => other,
    }
}

/// The wire answer for `approve`.
pub fn card_answer(approve: Approve) -> v1::CardAnswer {
    match approve {
        Approve::Once => v1::CardAnswer::AllowOnce,
        Approve::Session => v1::CardAnswer::AllowSession,
        Approve::Deny => v1::CardAnswer::Deny,
        Approve::Programs => v1::CardAnswer::AllowPrograms,
    }
}

pub fn approve_name(approve: Approve) -> &'static str {
    match approve {
        Approve::Once => "once",
        Approve::Session => "session",
        Approve::Deny => "deny",
        Approve::Programs => "programs",
    }
}

pub fn verdict_name(verdict: i32) -> &'static str {
    match v1::Verdict::try_from(verdict) {
        Ok(v1::Verdict::Allow) => "allow",
        Ok(v1::Verdict::Ask) => "ask",
        Ok(v1::Verdict::Deny) => "deny",
        _ => "unspecified",
    }
}
