//! The configuration file edited through Codaris: the six `config_*` tools and `codaris config
//! set|changes|revert|commit|rollback` both speak to one [`ConfigEditing`], which also puts a
//! file a person edited by hand in force (`codaris config reload`).
//!
//! Commands are staged against the live file ([`staging`]), each checked as it is staged. A
//! commit applies them to the file as it is then, validates the whole file with the checks
//! and the resolver the daemon starts with (its environment and flags included), keeps the
//! previous file as the snapshot a rollback puts back, writes the new one atomically, records
//! the change in the ledger with its redacted diff, and puts the new configuration in force
//! ([`in_force`]). Nothing changes when any step before the write fails; a failed record
//! puts the previous file back.

mod in_force;
mod staging;
pub mod write;

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use codaris_config::edit::{self, Command, ConfigPath};
use codaris_ledger::{ConfigAction, ConfigChangeRecord, Ledger, text_digest};
use codaris_tools::ToolError;
use codaris_tools::preview::{CallPreview, PreviewKind};

pub use in_force::{InForce, servers_of};
use staging::{Files, Staged, applied};

use crate::config::LoadInputs;
use crate::sessions::store::now_ms;

/// The configuration file's editor.
#[derive(Debug)]
pub struct ConfigEditing {
    inputs: LoadInputs,
    ledger: Arc<Ledger>,
    files: Files,
    /// What a commit puts the new configuration into; set once the services exist.
    in_force: OnceLock<InForce>,
    /// One change at a time: staging, committing and rolling back read and write the same
    /// files.
    writing: Mutex<()>,
    /// The file's text as it was last put in force (at start, or by the last commit, rollback
    /// or reload); `None` for no file. A reload puts the hand-edited file in force against it.
    in_force_text: Mutex<Option<String>>,
}

/// A change worked out and validated, not yet written.
struct Planned {
    before: Option<String>,
    after: Option<String>,
    staged: Vec<Staged>,
    config: crate::config::Config,
    diff: String,
    changed: Vec<String>,
}

fn refused(message: impl Into<String>) -> ToolError {
    ToolError::model(message)
}

impl ConfigEditing {
    pub fn new(inputs: LoadInputs, ledger: Arc<Ledger>) -> Self {
        let files = Files::new(inputs.state_dir());
        // What the daemon started with: read just after its own load, so an edit made in
        // between is one a reload shows.
        let text = std::fs::read_to_string(inputs.file()).ok();
        Self {
            inputs,
            ledger,
            files,
            in_force: OnceLock::new(),
            writing: Mutex::new(()),
            in_force_text: Mutex::new(text),
        }
    }

    /// Connects the parts a commit puts the new configuration into.
    pub fn connect(&self, in_force: InForce) {
        let _ = self.in_force.set(in_force);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.writing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The file as shown in answers.
    fn shown_file(&self) -> String {
        self.inputs.file().display().to_string()
    }

    /// The live file's text, `None` when there is none.
    fn read_file(&self) -> Result<Option<String>, ToolError> {
        match std::fs::read_to_string(self.inputs.file()) {
            Ok(text) => Ok(Some(text)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(refused(format!(
                "cannot read `{}`: {}",
                self.shown_file(),
                crate::error::io_reason(&err)
            ))),
        }
    }

    fn staged(&self) -> Result<Vec<Staged>, ToolError> {
        self.files.staged().map_err(refused)
    }

    /// The file `after` would be, validated as the daemon validates its own at start: every
    /// problem of the check, one line each with its line number, else the resolver's.
    fn validated(&self, after: &str) -> Result<crate::config::Config, ToolError> {
        let file = self.shown_file();
        let problems = codaris_config::check(after);
        if !problems.is_empty() {
            let lines: Vec<String> = problems
                .iter()
                .map(|p| format!("{file}:{}: {}", p.line, p.message))
                .collect();
            return Err(refused(format!(
                "the configuration would not be valid; nothing changed:\n{}",
                lines.join("\n")
            )));
        }
        self.inputs.load_text(Some(after)).map_err(|err| {
            refused(format!(
                "the configuration would not be valid; nothing changed:\n{file}: {}",
                without_shadow_details(&err)
            ))
        })
    }

    /// The staged commands applied to the file as it is now, validated.
    fn plan_commit(&self) -> Result<Planned, ToolError> {
        let staged = self.staged()?;
        if staged.is_empty() {
            return Err(refused(
                "nothing is staged; stage commands with config_set first",
            ));
        }
        let before = self.read_file()?;
        let after = applied(before.as_deref(), &staged).map_err(refused)?;
        let config = self.validated(&after)?;
        self.planned(before, Some(after), staged, config)
    }

    /// The file as edited by hand since it was last put in force, validated.
    fn plan_reload(&self) -> Result<Planned, ToolError> {
        let before = self
            .in_force_text
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let after = self.read_file()?;
        if before == after {
            return Err(refused(format!(
                "`{}` has not changed since codarisd put it in force; nothing to reload",
                self.shown_file()
            )));
        }
        let config = self.validated_or_default(after.as_deref())?;
        self.planned(before, after, Vec::new(), config)
    }

    /// `text` validated as [`Self::validated`] does, or, for no file, what the daemon starts
    /// with from its environment and flags alone.
    fn validated_or_default(&self, text: Option<&str>) -> Result<crate::config::Config, ToolError> {
        match text {
            Some(text) => self.validated(text),
            None => self.inputs.load_text(None).map_err(|err| {
                refused(format!(
                    "the configuration without a file would not be valid: {err}"
                ))
            }),
        }
    }

    /// The snapshot put back, validated.
    fn plan_rollback(&self) -> Result<Planned, ToolError> {
        let Some(snapshot) = self.files.snapshot().map_err(refused)? else {
            return Err(refused(
                "no commit to roll back: the snapshot a commit keeps is not there (a rollback uses it once)",
            ));
        };
        let before = self.read_file()?;
        let config = self.validated_or_default(snapshot.as_deref())?;
        self.planned(before, snapshot, Vec::new(), config)
    }

    fn planned(
        &self,
        before: Option<String>,
        after: Option<String>,
        staged: Vec<Staged>,
        config: crate::config::Config,
    ) -> Result<Planned, ToolError> {
        let old = before.as_deref().unwrap_or_default();
        let new = after.as_deref().unwrap_or_default();
        let diff =
            edit::diff(old, new, &self.shown_file()).map_err(|err| refused(err.to_string()))?;
        let changed = edit::changed_keys(old, new);
        Ok(Planned {
            before,
            after,
            staged,
            config,
            diff,
            changed,
        })
    }

    /// The card's text: the commands, the diff, what past decisions would change, and what
    /// waits for the next start.
    fn preview(&self, plan: &Planned, action: ConfigAction) -> CallPreview {
        let mut text = String::new();
        if !plan.staged.is_empty() {
            text.push_str("staged:\n");
            for staged in &plan.staged {
                text.push_str(&format!("  {}\n", shown_command(&staged.command)));
            }
            text.push('\n');
        }
        text.push_str(if plan.diff.is_empty() {
            "the file's text does not change\n"
        } else {
            &plan.diff
        });
        text.push('\n');
        text.push_str(&self.replay_summary(&plan.config));
        let later = in_force::at_next_start(&plan.changed);
        if !later.is_empty() {
            text.push_str(&format!(
                "\ntakes effect at the next start of codarisd: {}\n",
                later.join(", ")
            ));
        }
        let file = self.shown_file();
        let action = match action {
            ConfigAction::Commit => format!(
                "commit {} staged configuration command{} to `{file}`",
                plan.staged.len(),
                if plan.staged.len() == 1 { "" } else { "s" }
            ),
            ConfigAction::Rollback => format!("roll `{file}` back to before the last commit"),
            ConfigAction::Reload => format!("put `{file}` in force as edited"),
        };
        CallPreview {
            kind: PreviewKind::Config,
            text,
            path: Some(file),
            action,
        }
    }

    /// Every recorded decision decided again under `config`'s operator inputs: the groups
    /// that would change and the count, as `codaris audit replay --config` prints them.
    fn replay_summary(&self, config: &crate::config::Config) -> String {
        let (records, corrupt) = match self.ledger.decisions(None) {
            Ok(found) => found,
            Err(err) => return format!("the recorded decisions could not be replayed: {err}\n"),
        };
        let candidate = codaris_ledger::Candidate::new(crate::config::operator_inputs(config));
        let changes = codaris_ledger::replay_under(&records, &corrupt, &candidate);
        let mut text = format!(
            "replayed the {} recorded decision{} under this configuration:\n",
            changes.decisions,
            if changes.decisions == 1 { "" } else { "s" }
        );
        for line in changes.summary() {
            text.push_str(&format!("  {line}\n"));
        }
        text
    }

    /// Works the change out again, writes it and records it, under the lock (what was
    /// planned for a card may be stale by now); the plan and the record's id.
    fn write_and_record(
        &self,
        session: &str,
        action: ConfigAction,
    ) -> Result<(Planned, String), ToolError> {
        let _writing = self.lock();
        let plan = match action {
            ConfigAction::Commit => self.plan_commit()?,
            ConfigAction::Rollback => self.plan_rollback()?,
            ConfigAction::Reload => self.plan_reload()?,
        };
        let file = self.inputs.file();
        // The snapshot first: a commit whose previous file is not kept could not be undone. A
        // reload's is the text that was in force, so a rollback undoes the hand edit.
        if matches!(action, ConfigAction::Commit | ConfigAction::Reload) {
            self.files
                .keep_snapshot(plan.before.as_deref())
                .map_err(|err| refused(format!("nothing changed: {err}")))?;
        }
        // A reload writes nothing: the file already is what goes in force.
        if action != ConfigAction::Reload {
            write::config_file(&file, plan.after.as_deref()).map_err(refused)?;
        }
        let mut record = ConfigChangeRecord::new(
            session,
            action,
            now_ms(),
            file.display().to_string(),
            text_digest(plan.before.as_deref()),
            text_digest(plan.after.as_deref()),
            plan.diff.clone(),
        );
        record.commands = plan
            .staged
            .iter()
            .map(|s| shown_command(&s.command))
            .collect();
        record.at_next_start = in_force::at_next_start(&plan.changed);
        let id = match self.ledger.append_config_change(&record) {
            Ok(id) => id,
            Err(err) if action == ConfigAction::Reload => {
                return Err(refused(format!(
                    "the change could not be recorded, so it was not put in force: {err}"
                )));
            }
            Err(err) => {
                // Not recorded, not made: the previous file goes back.
                let _ = write::config_file(&file, plan.before.as_deref());
                return Err(refused(format!(
                    "the change could not be recorded, so the file was put back: {err}"
                )));
            }
        };
        self.in_force_text
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone_from(&plan.after);
        let kept = match action {
            ConfigAction::Commit => self.files.keep(&[]),
            ConfigAction::Rollback => self.files.forget_snapshot(),
            // The staged commands stay staged, to apply to the file as it is now.
            ConfigAction::Reload => Ok(()),
        };
        if let Err(err) = kept {
            tracing::error!(%err, "the configuration's snapshot or staged commands were not updated");
        }
        Ok((plan, id))
    }

    /// Carries `action` out for `session`; the answer's text.
    async fn carry_out(&self, session: &str, action: ConfigAction) -> Result<String, ToolError> {
        let (plan, id) = self.write_and_record(session, action)?;
        let file = self.inputs.file();
        let mut answer = match action {
            ConfigAction::Commit => format!(
                "committed {} command{} to `{}` (ledger {id})",
                plan.staged.len(),
                if plan.staged.len() == 1 { "" } else { "s" },
                file.display()
            ),
            ConfigAction::Rollback => format!(
                "rolled `{}` back to before the last commit (ledger {id})",
                file.display()
            ),
            ConfigAction::Reload => format!(
                "reloaded `{}` as edited (ledger {id}; {})",
                file.display(),
                match plan.changed.len() {
                    0 => "no key changed".to_owned(),
                    1 => format!("changed {}", plan.changed[0]),
                    n => format!("{n} keys changed: {}", plan.changed.join(", ")),
                }
            ),
        };
        let later = in_force::at_next_start(&plan.changed);
        if let Some(in_force) = self.in_force.get() {
            let (servers, roots) = in_force.put(plan.config);
            answer.push_str("; in force now");
            if let Some(line) = in_force
                .servers(servers, roots)
                .await
                .and_then(|d| d.line())
            {
                answer.push_str(&format!("\n{line}"));
            }
        }
        if !later.is_empty() {
            answer.push_str(&format!(
                "\ntakes effect at the next start of codarisd: {}",
                later.join(", ")
            ));
        }
        // What went in force, which nobody saw staged: the person checks it is only their edit
        // (a file in a wide root could have been changed by something else too).
        if action == ConfigAction::Reload {
            answer.push_str(&format!("\n\n{}", plan.diff.trim_end()));
        }
        Ok(answer)
    }
}

/// A staged command as it may be shown: secrets redacted.
fn shown_command(line: &str) -> String {
    Command::parse(line).map_or_else(|_| line.to_owned(), |c| edit::redact_command(&c))
}

/// The resolver's sentence, with what a shadow configuration's own problems say left out: the
/// shadow file is any file the daemon can read, and its problems quote it.
fn without_shadow_details(err: &crate::error::ConfigError) -> String {
    match err {
        crate::error::ConfigError::Invalid { key, .. } if key == "policy.shadow" => {
            "`policy.shadow` names a file that is not a configuration the daemon would start with; `codarisd check-config FILE` on it says why".to_owned()
        }
        other => other.to_string(),
    }
}

#[async_trait::async_trait]
impl codaris_tools::config_tools::ConfigEditor for ConfigEditing {
    fn get(&self, path: &str) -> Result<String, ToolError> {
        let path = ConfigPath::parse(path).map_err(|err| refused(err.to_string()))?;
        let text = self.read_file()?.unwrap_or_default();
        match edit::get(&text, &path).map_err(|err| refused(err.to_string()))? {
            Some(shown) => Ok(shown),
            None => Ok(format!(
                "`{}` is not set in `{}`; the daemon uses its default",
                path.shown(),
                self.shown_file()
            )),
        }
    }

    fn changes(&self) -> Result<String, ToolError> {
        let staged = self.staged()?;
        if staged.is_empty() {
            return Ok("nothing is staged".to_owned());
        }
        let before = self.read_file()?;
        let mut text = format!(
            "{} staged command{}; config_commit applies them:\n",
            staged.len(),
            if staged.len() == 1 { "" } else { "s" }
        );
        for one in &staged {
            text.push_str(&format!("  {}\n", shown_command(&one.command)));
        }
        match applied(before.as_deref(), &staged) {
            Ok(after) => {
                let diff = edit::diff(
                    before.as_deref().unwrap_or_default(),
                    &after,
                    &self.shown_file(),
                )
                .map_err(|err| refused(err.to_string()))?;
                text.push('\n');
                text.push_str(&diff);
            }
            Err(why) => text.push_str(&format!("\n{why}\n")),
        }
        Ok(text)
    }

    fn stage(&self, session: &str, commands: &[String]) -> Result<String, ToolError> {
        let _writing = self.lock();
        let mut staged = self.staged()?;
        let before = self.read_file()?;
        let mut doc = edit::parse_document(&applied(before.as_deref(), &staged).map_err(refused)?)
            .map_err(|err| refused(err.to_string()))?;
        let mut problems_before = problem_messages(&doc.to_string());
        let mut added = Vec::new();
        for (at, line) in commands.iter().enumerate() {
            let why = |err: String| {
                refused(format!(
                    "nothing staged: command {} `{}`: {err}",
                    at + 1,
                    shown_command(line)
                ))
            };
            let command = Command::parse(line).map_err(|err| why(err.to_string()))?;
            edit::apply(&mut doc, &command).map_err(|err| why(err.to_string()))?;
            let problems = problem_messages(&doc.to_string());
            let new: Vec<&String> = problems
                .iter()
                .filter(|p| !problems_before.contains(p))
                .collect();
            if let Some(first) = new.first() {
                return Err(why((*first).clone()));
            }
            problems_before = problems;
            added.push(Staged {
                command: command.line(),
                session_id: session.to_owned(),
                staged_at_ms: now_ms(),
            });
        }
        let shown: Vec<String> = added.iter().map(|s| shown_command(&s.command)).collect();
        staged.extend(added);
        self.files.keep(&staged).map_err(refused)?;
        Ok(format!(
            "staged {} command{} ({} in all; config_commit applies them, config_revert discards them):\n  {}",
            shown.len(),
            if shown.len() == 1 { "" } else { "s" },
            staged.len(),
            shown.join("\n  ")
        ))
    }

    fn revert(&self, path: Option<&str>) -> Result<String, ToolError> {
        let _writing = self.lock();
        let staged = self.staged()?;
        let under = match path {
            Some(path) => Some(ConfigPath::parse(path).map_err(|err| refused(err.to_string()))?),
            None => None,
        };
        let (dropped, kept): (Vec<Staged>, Vec<Staged>) = staged.into_iter().partition(|one| {
            match (&under, Command::parse(&one.command)) {
                (None, _) => true,
                (Some(under), Ok(command)) => command.path.is_within(under),
                // A command that no longer reads goes with any revert.
                (Some(_), Err(_)) => true,
            }
        });
        self.files.keep(&kept).map_err(refused)?;
        Ok(format!(
            "discarded {} staged command{}; {} remain{}",
            dropped.len(),
            if dropped.len() == 1 { "" } else { "s" },
            kept.len(),
            if kept.len() == 1 { "s" } else { "" }
        ))
    }

    fn check_commit(&self) -> Result<CallPreview, ToolError> {
        let plan = self.plan_commit()?;
        Ok(self.preview(&plan, ConfigAction::Commit))
    }

    fn check_rollback(&self) -> Result<CallPreview, ToolError> {
        let plan = self.plan_rollback()?;
        Ok(self.preview(&plan, ConfigAction::Rollback))
    }

    async fn commit(&self, session: &str) -> Result<String, ToolError> {
        self.carry_out(session, ConfigAction::Commit).await
    }

    async fn rollback(&self, session: &str) -> Result<String, ToolError> {
        self.carry_out(session, ConfigAction::Rollback).await
    }
}

impl ConfigEditing {
    /// Puts the file in force as a person edited it by hand since it last was (`codaris config
    /// reload`): validated as a commit is, recorded, then in force; nothing is written. A
    /// person's only: no tool reaches it, so the model's way to change the configuration stays
    /// the commit and its card.
    pub async fn reload(&self) -> Result<String, ToolError> {
        self.carry_out("", ConfigAction::Reload).await
    }
}

/// The check's messages for `text`, without lines (a command moves lines of what follows).
fn problem_messages(text: &str) -> Vec<String> {
    codaris_config::check(text)
        .into_iter()
        .map(|p| p.message)
        .collect()
}
