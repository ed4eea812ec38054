//! Preparing a call once, before its decision: the task's paths, the arguments' paths, the
//! paths the call implies and, once decided, the paths the grants it relied on opened are each
//! resolved through symlinks once, and never again: by one [`Resolver`], but for the implied
//! paths, which [`implied_paths`] finds and resolves by itself (a patch's targets beneath its
//! `path`, a tree's `.git`), so that it can move to each tool's definition as it is. The policy
//! judges the string
//! projection of the prepared call (the request the ledger records, byte for byte what it was);
//! the permit carries the prepared call itself, so the tool's fence is built from the very
//! paths that were judged, with no second resolution and no round trip through text. A command
//! call's line is read once here too: its decision and its card use the same reading.

use std::path::{Path, PathBuf};

use codaris_policy::{
    CommandLine, ExternalSpec, Grant, PermissionClass, Request, Task, ToolId, builtin_spec,
};
use serde_json::Value;

use crate::calls::resolve::{
    Place, ResolvedPath, Resolver, argument_paths_with, implied_paths, read_args, resolve_args_with,
};
use crate::mcp::paths::ArgumentMarks;
use crate::sessions::ids::{CallId, SessionId};
use codaris_tools::ReadArgs;

/// A call as the agent hands it over.
#[derive(Debug, Clone)]
pub struct SessionCall {
    pub session_id: SessionId,
    /// The call's id in its turn.
    pub call_id: CallId,
    /// The tool, its name read once where the call entered (`server__tool` for a known MCP
    /// tool, as it is decided and recorded).
    pub tool: ToolId,
    /// The arguments exactly as the model sent them.
    pub args: Value,
    pub task: Task,
    /// The turn's working directory as the session holds it, typed (a tool moved the session
    /// there); `None`: the task's `cwd`.
    pub cwd: Option<PathBuf>,
    /// For a tool the policy does not know (an MCP tool).
    pub spec: Option<ExternalSpec>,
    /// For an MCP tool: what its schema and server say of its arguments, so that every path
    /// they name, whatever its name or form, is judged.
    pub marks: Option<ArgumentMarks>,
}

/// A call with every path it names resolved once: what the policy judges, and where the tool
/// runs.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// What resolved the paths, kept for the grants' paths once the call is decided.
    resolver: Resolver,
    place: Place,
    /// The task as the policy judges it: its paths resolved, the call's implied paths in it.
    task: Task,
    /// The arguments as the policy judges them: every path argument resolved.
    args: Value,
    /// A command call's line, read.
    command: Option<CommandLine>,
    /// What else of the arguments its tool read (`apply_patch`'s patch), for its run.
    read: ReadArgs,
}

impl Prepared {
    /// Resolves `call`'s task (in its typed working directory when it has one), its path
    /// arguments and the paths it implies.
    pub fn new(call: &SessionCall) -> Prepared {
        let mut resolver = Resolver::default();
        let place = Place::resolve(&mut resolver, &call.task, call.cwd.as_deref());
        let mut task = place.project(&call.task);
        let cwd = place.cwd.as_path();
        let args = resolve_args_with(
            &mut resolver,
            &call.tool,
            call.spec.as_ref(),
            cwd,
            &call.args,
        );
        // What the call changes beyond its arguments goes into the recorded task, so the policy
        // judges it and a replay sees it.
        let read = read_args(&call.tool, &call.args);
        task.implied = implied_paths(&call.tool, cwd, &call.args, &read);
        if let Some(marks) = call
            .marks
            .as_ref()
            .filter(|_| call.tool.builtin().is_none())
        {
            task.implied
                .extend(argument_paths_with(&mut resolver, marks, cwd, &call.args));
        }
        let command = call
            .tool
            .builtin()
            .map(builtin_spec)
            .filter(|spec| spec.class == PermissionClass::Command)
            .and_then(|_| call.args.get("command")?.as_str())
            .map(CommandLine::read);
        Prepared {
            resolver,
            place,
            task,
            args,
            command,
            read,
        }
    }

    /// A command call's line as read when the call was prepared.
    pub fn command(&self) -> Option<&CommandLine> {
        self.command.as_ref()
    }

    /// The request the policy decides and the ledger records: the string projection of the
    /// prepared call, with `grants` in force beside the session's.
    pub fn request(
        &self,
        tool: &ToolId,
        grants: Vec<Grant>,
        spec: Option<ExternalSpec>,
    ) -> Request {
        Request {
            tool: tool.clone(),
            args: self.args.clone(),
            task: self.task.clone(),
            grants,
            spec,
        }
    }

    /// Where the call runs, every path resolved.
    pub fn place(&self) -> &Place {
        &self.place
    }

    /// What of the arguments its tool read when the call was prepared.
    pub fn read(&self) -> &ReadArgs {
        &self.read
    }

    /// Where the call runs and what its tool read, once nothing more is resolved for it.
    pub fn into_run(self) -> (Place, ReadArgs) {
        (self.place, self.read)
    }

    /// The directories a fence opens for `paths` outside the roots that a grant opened (as the
    /// person saw them): each resolved (once: the path an argument resolved to is not resolved
    /// again), and a grant for one file opens its directory; the call's own path arguments are
    /// still exactly the ones the policy checked.
    pub fn open(&mut self, paths: &[String]) -> Vec<ResolvedPath> {
        paths
            .iter()
            .map(|path| {
                self.resolver
                    .resolve(Path::new("/"), Path::new(path))
                    .directory()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use codaris_ledger::{CardAnswer, CardRecord, Ledger};
    use codaris_policy::{Capability, CapabilityName, Lifetime, PermissionMode};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::calls::builtins::{Builtins, Pictures};
    use crate::calls::dispatch::{Dispatched, Dispatcher};
    use crate::calls::resolve::counted;

    /// A session grant to read in `outside`, as a card answer records it.
    fn read_granted(ledger: &Ledger, outside: &str) -> Result<(), Box<dyn std::error::Error>> {
        let capability =
            Capability::new(CapabilityName::ReadOutsideFence, Some(outside.to_owned()));
        ledger.append_card(&CardRecord::asked(
            "c1".to_owned(),
            "s1".to_owned(),
            Some(capability),
            "read outside".to_owned(),
            Vec::new(),
            1,
        ))?;
        let grant = Grant::new(
            CapabilityName::ReadOutsideFence,
            Some(outside),
            Lifetime::Session,
        );
        ledger
            .answer_card("c1", CardAnswer::AllowSession, vec![grant], 1)?
            .ok_or("the card was answered already")?;
        Ok(())
    }

    /// One built-in call, decided and then run, resolves each of its paths once: the task's
    /// (the working directory, which is a root too, the workspace, the state directory, what
    /// is protected and secret), its argument's, and the one a grant opened outside the roots.
    /// The run resolves nothing: its fence is the prepared call's.
    #[tokio::test]
    async fn a_call_resolves_each_path_once_from_its_decision_to_its_run()
    -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let root = temp.path().canonicalize()?;
        let (proj, outside, state) = (root.join("proj"), root.join("outside"), root.join("state"));
        std::fs::create_dir_all(&proj)?;
        std::fs::create_dir_all(&outside)?;
        std::fs::create_dir_all(state.join("sessions/s1"))?;
        std::fs::write(outside.join("a.txt"), "the plan\n")?;
        let ledger = Arc::new(Ledger::open(&root.join("ledger"))?);
        let text = |p: &Path| p.display().to_string();
        read_granted(&ledger, &text(&outside))?;
        let mut task = Task::new(text(&proj));
        task.permission_mode = PermissionMode::Ask;
        task.workspace = Some(text(&state.join("sessions/s1")));
        task.state_dir = Some(text(&state));
        task.protected = vec![text(&state.join("ledger"))];
        task.secret = vec![text(&state.join("token"))];
        let call = SessionCall {
            session_id: SessionId::new("s1"),
            call_id: CallId::new("c1"),
            tool: codaris_policy::ToolId::parse("read_file"),
            args: json!({"path": "../outside/a.txt"}),
            task,
            cwd: None,
            spec: None,
            marks: None,
        };
        counted::take();

        let Dispatched::Run(permit) = Dispatcher::new(ledger).decide(call)? else {
            return Err("the grant did not allow the read".into());
        };
        let mut resolved = counted::take();
        resolved.sort();
        let mut expected = vec![
            proj.clone(),
            state.join("sessions/s1"),
            state.clone(),
            state.join("ledger"),
            state.join("token"),
            proj.join("../outside/a.txt"),
            outside.clone(),
        ];
        expected.sort();
        assert_eq!(resolved, expected);

        let builtins = Builtins::from_tools(codaris_tools::files::file_tools());
        let ran = builtins
            .run(
                "s1",
                &permit,
                &Pictures::Shown,
                Arc::new(|_: &str| {}),
                None,
            )
            .await
            .ok_or("read_file is not run here")?;
        assert!(ran.run.output.contains("the plan"), "{}", ran.run.output);
        assert_eq!(counted::take(), Vec::<std::path::PathBuf>::new());
        Ok(())
    }
}
