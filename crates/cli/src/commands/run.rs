//! `codaris run`: one session, each prompt one turn, cards answered by `--approve`.
//!
//! With `--json` it prints the event stream, one JSON object per line — a contract other tools
//! read: `session`, `turn_started`, `binding`, `text`, `tool_call`, `progress` (of `kind`
//! `tool` or `provider_retry`), `tool_result`, `card`, `usage`, `turn_ended`. In text mode
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
use super::result_view;
use super::status_line::{StatusLine, retry_line};
use crate::cli::{Approve, Mode, PermissionModeArg, RunArgs, SessionArgs};
use crate::client::{self, Target};
use crate::error::CliError;
use crate::output;
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
        played = play_all(&mut sessions, &session.id, prompts, args.approve, &printer) => {
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
    printer: &Printer,
) -> Result<bool, CliError> {
    printer.print(
        json!({"type": "session", "id": session_id}),
        &format!("session {session_id}"),
    )?;
    let mut failed = false;
    for prompt in prompts {
        let reason = play_turn(sessions, session_id, prompt, approve, printer).await?;
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

/// Runs one turn, answering its cards with `approve`, printing every event; returns why the
/// turn ended.
pub async fn play_turn(
    sessions: &mut Sessions,
    session_id: &str,
    prompt: String,
    approve: Approve,
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
        if let v1::turn_event::Event::TurnEnded(ended) = &event {
            reason = ended.reason.clone();
        }
        let (mut value, text) = describe(&event, given, printer.layout.verbose);
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

/// The event as a JSON line and as lines for people (`verbose`: with an allowed call's
/// decision code). JSON counts turns from 0, people from 1 ([`output::turn_for_people`]).
pub fn describe(event: &v1::turn_event::Event, approve: Approve, verbose: bool) -> (Value, String) {
    use v1::turn_event::Event;
    match event {
        Event::TurnStarted(e) => (
            json!({"type": "turn_started", "turn": e.turn}),
            format!("── turn {}", output::turn_for_people(e.turn)),
        ),
        Event::Binding(b) => (
            json!({"type": "binding", "turn": b.turn, "round": b.round, "tools": b.tools,
                   "always_on": b.always_on, "forced": b.forced, "found": b.found,
                   "filtered_from": b.filtered_from, "line": b.line}),
            format!("   {}", b.line),
        ),
        Event::Text(t) => (json!({"type": "text", "text": t.text}), t.text.clone()),
        Event::ToolCall(c) => {
            let args = c.args.as_ref().map_or(Value::Null, prost_to_json);
            let mut event = json!({"type": "tool_call", "id": c.id, "tool": c.tool, "args": args});
            if !c.action.is_empty() {
                event["action"] = json!(c.action);
            }
            let line = if c.action.is_empty() {
                format!("→ {} {}", c.tool, args)
            } else {
                format!("→ {}", c.action)
            };
            (event, line)
        }
        Event::ToolResult(r) => {
            let decision = r.decision.clone().unwrap_or_default();
            let verdict = verdict_name(decision.verdict);
            let line = result_view::result_text(r, verdict, &decision.code, verbose);
            (
                json!({"type": "tool_result", "id": r.id, "tool": r.tool,
                       "decision": {"verdict": verdict, "code": decision.code, "sentence": decision.sentence},
                       "output": r.output, "failed": r.failed}),
                line,
            )
        }
        Event::ToolProgress(p) => (
            json!({"type": "progress", "kind": "tool", "id": p.id, "tool": p.tool, "message": p.message}),
            format!("  … {}: {}", p.tool, p.message),
        ),
        // The contract: what the status line shows is a `progress` event in JSON.
        Event::ProviderRetry(r) => (
            json!({"type": "progress", "kind": "provider_retry", "attempt": r.attempt,
                   "max_attempts": r.max_attempts, "delay_ms": r.delay_ms, "reason": r.reason,
                   "message": retry_line(r)}),
            format!("  … {}", retry_line(r)),
        ),
        Event::Card(c) => {
            let capability = c.capability.clone().unwrap_or_default();
            let preview = c.preview.as_ref().map(
                |p| json!({"kind": p.kind, "text": p.text, "path": (!p.path.is_empty()).then_some(&p.path)}),
            );
            (
                json!({"type": "card", "id": c.id,
                       "capability": {"name": capability.name, "path": (!capability.path.is_empty()).then_some(&capability.path)},
                       "programs": c.programs,
                       "sentence": c.sentence, "preview": preview, "answer": approve_name(approve)}),
                format!("? {} → {}", c.sentence, approve_name(approve)),
            )
        }
        Event::Usage(u) => (usage_json(u), format!("   {}", u.line)),
        Event::Eviction(e) => (
            json!({"type": "eviction", "turn": e.turn, "round": e.round, "results": e.results,
                   "tokens_before": e.tokens_before, "tokens_after": e.tokens_after}),
            format!(
                "   context: {} old result(s) evicted ({} → {} tokens)",
                e.results, e.tokens_before, e.tokens_after
            ),
        ),
        Event::Compaction(c) => (
            json!({"type": "compaction", "turn": c.turn, "round": c.round, "trigger": c.trigger,
                   "folded": c.folded, "tokens_before": c.tokens_before,
                   "tokens_after": c.tokens_after}),
            format!(
                "   context compacted ({}): {} earlier events folded into a summary ({} → {} tokens)",
                c.trigger, c.folded, c.tokens_before, c.tokens_after
            ),
        ),
        Event::TurnEnded(e) => (
            turn_ended_json(e),
            if e.error.is_empty() {
                format!(
                    "── turn {} ended: {}",
                    output::turn_for_people(e.turn),
                    e.reason
                )
            } else {
                format!(
                    "── turn {} ended: {} ({})",
                    output::turn_for_people(e.turn),
                    e.reason,
                    e.error
                )
            },
        ),
    }
}

/// `usage` as a JSON line: the token counts and the line as always; with a context budget,
/// also `context_tokens`, `context_window` and `context_percent` (the request's share of the
/// window).
fn usage_json(u: &v1::Usage) -> Value {
    let mut line = json!({"type": "usage", "turn": u.turn, "input_tokens": u.input_tokens,
                          "output_tokens": u.output_tokens, "cache_read_tokens": u.cache_read_tokens,
                          "cache_write_tokens": u.cache_write_tokens, "line": u.line});
    if let (true, Some(fields)) = (u.context_window > 0, line.as_object_mut()) {
        let percent = (u128::from(u.context_tokens) * 200 + u128::from(u.context_window))
            / (u128::from(u.context_window) * 2);
        fields.insert("context_tokens".to_owned(), json!(u.context_tokens));
        fields.insert("context_window".to_owned(), json!(u.context_window));
        fields.insert("context_percent".to_owned(), json!(percent as u64));
    }
    line
}

/// `turn_ended` as a JSON line: `turn`, `reason` and `error` as always; with an error whose
/// kind the daemon sent, also `error_kind`, `http_status` (`null` when the model API gave
/// none), `retryable` and `retry_after_ms` (`null` when it asked for no wait). A turn that
/// ended without an error has exactly the first four fields.
fn turn_ended_json(e: &v1::TurnEnded) -> Value {
    let mut line = json!({"type": "turn_ended", "turn": e.turn, "reason": e.reason,
                          "error": (!e.error.is_empty()).then_some(&e.error)});
    if let (false, Some(fields)) = (e.error_kind.is_empty(), line.as_object_mut()) {
        fields.insert("error_kind".to_owned(), json!(e.error_kind));
        fields.insert(
            "http_status".to_owned(),
            json!((e.http_status != 0).then_some(e.http_status)),
        );
        fields.insert("retryable".to_owned(), json!(e.retryable));
        fields.insert("retry_after_ms".to_owned(), json!(e.retry_after_ms));
    }
    line
}

pub(crate) fn prost_to_json(value: &prost_types::Value) -> Value {
    use prost_types::value::Kind;
    match &value.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(*b),
        Some(Kind::NumberValue(n)) => {
            // Integers the model sent come back as integers, not `1.0`.
            if n.fract() == 0.0 && n.abs() < 9.0e15 {
                json!(*n as i64)
            } else {
                json!(n)
            }
        }
        Some(Kind::StringValue(s)) => Value::String(s.clone()),
        Some(Kind::ListValue(list)) => {
            Value::Array(list.values.iter().map(prost_to_json).collect())
        }
        Some(Kind::StructValue(s)) => Value::Object(
            s.fields
                .iter()
                .map(|(k, v)| (k.clone(), prost_to_json(v)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn result(
        failed: bool,
        verdict: v1::Verdict,
        code: &str,
        output: &str,
    ) -> v1::turn_event::Event {
        v1::turn_event::Event::ToolResult(v1::ToolResult {
            id: "c1".to_owned(),
            tool: "edit".to_owned(),
            decision: Some(v1::Decision {
                verdict: verdict.into(),
                code: code.to_owned(),
                ..v1::Decision::default()
            }),
            output: output.to_owned(),
            failed,
        })
    }

    #[test]
    fn a_failed_call_reads_as_an_error_and_a_refusal_names_its_code() {
        let (value, line) = describe(
            &result(
                true,
                v1::Verdict::Allow,
                "allowed_by_mode",
                "edit: `oldString` is required\nmore",
            ),
            Approve::Deny,
            false,
        );
        assert_eq!(line, "  ✗ edit: `oldString` is required");
        assert_eq!(value["failed"], json!(true));
        let (_, line) = describe(
            &result(
                true,
                v1::Verdict::Deny,
                "denied_by_user",
                "the user refused this call",
            ),
            Approve::Deny,
            false,
        );
        assert_eq!(
            line,
            "  ✗ edit refused (denied_by_user): the user refused this call"
        );
        let (value, line) = describe(
            &result(false, v1::Verdict::Allow, "allowed_by_grant", "edited `a`"),
            Approve::Deny,
            false,
        );
        assert_eq!(line, "  ✓ edit: edited `a`");
        assert_eq!(value["failed"], json!(false));
    }

    #[test]
    fn turns_are_counted_from_one_for_people_and_from_zero_in_json() {
        let started = v1::turn_event::Event::TurnStarted(v1::TurnStarted { turn: 0 });
        let (value, line) = describe(&started, Approve::Deny, false);
        assert_eq!(value["turn"], json!(0));
        assert_eq!(line, "── turn 1");
        let ended = v1::turn_event::Event::TurnEnded(v1::TurnEnded {
            turn: 2,
            reason: "end_turn".to_owned(),
            ..v1::TurnEnded::default()
        });
        let (value, line) = describe(&ended, Approve::Deny, false);
        assert_eq!(value["turn"], json!(2));
        assert_eq!(line, "── turn 3 ended: end_turn");
    }

    #[test]
    fn a_turn_ended_by_an_error_adds_its_kind_and_status_and_a_clean_end_adds_nothing() {
        let clean = v1::TurnEnded {
            turn: 0,
            reason: "end_turn".to_owned(),
            ..v1::TurnEnded::default()
        };
        assert_eq!(
            turn_ended_json(&clean),
            json!({"type": "turn_ended", "turn": 0, "reason": "end_turn", "error": null})
        );
        let limited = v1::TurnEnded {
            turn: 1,
            reason: "error".to_owned(),
            error: "openai model `m`: HTTP 429 after 3 attempt(s): slow down".to_owned(),
            error_kind: "provider_status".to_owned(),
            http_status: 429,
            retryable: true,
            retry_after_ms: Some(0),
        };
        assert_eq!(
            turn_ended_json(&limited),
            json!({"type": "turn_ended", "turn": 1, "reason": "error",
                   "error": "openai model `m`: HTTP 429 after 3 attempt(s): slow down",
                   "error_kind": "provider_status", "http_status": 429, "retryable": true,
                   "retry_after_ms": 0})
        );
        let host = v1::TurnEnded {
            error: "the ledger could not record a decision, so the call did not run: full"
                .to_owned(),
            error_kind: "host_not_recorded".to_owned(),
            ..limited
        };
        let line = turn_ended_json(&v1::TurnEnded {
            http_status: 0,
            retryable: false,
            retry_after_ms: None,
            ..host
        });
        assert_eq!(line["http_status"], Value::Null);
        assert_eq!(line["retry_after_ms"], Value::Null);
        assert_eq!(line["retryable"], json!(false));
    }

    #[test]
    fn a_provider_retry_is_a_progress_line_of_its_own_kind() {
        let event = v1::turn_event::Event::ProviderRetry(v1::ProviderRetry {
            attempt: 1,
            max_attempts: 4,
            delay_ms: 2000,
            reason: "busy (429)".to_owned(),
        });
        let (value, line) = describe(&event, Approve::Deny, false);
        assert_eq!(
            value,
            json!({"type": "progress", "kind": "provider_retry", "attempt": 1, "max_attempts": 4,
                   "delay_ms": 2000, "reason": "busy (429)",
                   "message": "model API busy (429), retry 1/4 in 2 s"})
        );
        assert_eq!(line, "  … model API busy (429), retry 1/4 in 2 s");
    }

    #[test]
    fn a_card_carries_its_preview_or_null() {
        let card = v1::Card {
            sentence: "Codaris wants to edit `a` (1 line changed)".to_owned(),
            preview: Some(v1::CardPreview {
                kind: "diff".to_owned(),
                text: "-a\n+b\n".to_owned(),
                path: "a".to_owned(),
            }),
            ..v1::Card::default()
        };
        let (value, line) = describe(&v1::turn_event::Event::Card(card), Approve::Once, false);
        assert_eq!(
            value["preview"],
            json!({"kind": "diff", "text": "-a\n+b\n", "path": "a"})
        );
        assert_eq!(line, "? Codaris wants to edit `a` (1 line changed) → once");
        let (value, _) = describe(
            &v1::turn_event::Event::Card(v1::Card::default()),
            Approve::Once,
            false,
        );
        assert_eq!(value["preview"], Value::Null);
    }
}
