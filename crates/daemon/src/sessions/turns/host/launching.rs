//! A launch on Seqera Platform made whole before its first decision: its `launchpad_id` looked
//! up on Platform and its `params_file` read beneath the session's fence, both written into the
//! call's arguments (`codaris_seqera::launch_resolve`), so the card names where the run will
//! really go, the policy judges every samplesheet it will really get, and the digest recorded
//! with the decision is that of the body that leaves. A lookup that fails leaves the call marked
//! with why, in one line; no card is shown for it and the server refuses it.

use codaris_agent::CallRequest;
use codaris_seqera::launch_resolve::{
    self, Lookups, MAX_PARAMS_FILE_BYTES, launchpad_launch, lookups, resolve, strip_daemon_keys,
};
use serde_json::Value;

use super::DaemonHost;
use crate::calls::resolve::{Place, Resolver};

impl DaemonHost {
    /// `call` with its launch resolved, or `None` when it is not a launch on Platform.
    pub(super) async fn resolved_launch(&self, call: &CallRequest) -> Option<CallRequest> {
        let tool = call.tool.mcp()?;
        if !crate::mcp::launch::is_launch(&call.tool) {
            return None;
        }
        // A launch the policy will refuse for being off asks Platform for nothing.
        let input = self.turns.mcp.decision_input(tool)?;
        if input.switched_off
            || call
                .task
                .withheld
                .iter()
                .any(|name| name == input.tool.prefixed())
        {
            return None;
        }
        let mut args = call.args.clone();
        // What only the daemon writes never comes from the model or a hook.
        strip_daemon_keys(&mut args);
        let args = match lookups(&args) {
            Err(reason) => launch_resolve::unresolved(&args, &reason),
            Ok(found) if found.is_empty() => args,
            Ok(found) => self.looked_up(call, &args, &found).await,
        };
        let mut call = call.clone();
        call.args = args;
        Some(call)
    }

    async fn looked_up(&self, call: &CallRequest, args: &Value, found: &Lookups) -> Value {
        let mut args = args.clone();
        let file = match &found.params_file {
            None => None,
            Some(path) => match self.read_params_file(call, path).await {
                Ok((absolute, text)) => {
                    // The record and the answer name the file that was read.
                    args["params_file"] = Value::from(absolute);
                    Some(text)
                }
                Err(reason) => return launch_resolve::unresolved(&args, &reason),
            },
        };
        let launchpad = match found.launchpad {
            None => None,
            Some((workspace, pipeline)) => {
                let setup = self.turns.config.get().seqera.clone();
                match launchpad_launch(&setup, workspace, pipeline).await {
                    Ok(launch) => Some(launch),
                    Err(failure) => {
                        return launch_resolve::unresolved(
                            &args,
                            &format!("launchpad pipeline {pipeline}: {failure}"),
                        );
                    }
                }
            }
        };
        resolve(&args, launchpad.as_ref(), file.as_deref())
            .unwrap_or_else(|reason| launch_resolve::unresolved(&args, &reason))
    }

    /// The params file's absolute path and text, read beneath the session's fence as `read_file`
    /// would read it (off the runtime: the disk may be slow): a file outside the roots, behind a
    /// symlink leading out, or in the state directory is not read at all.
    async fn read_params_file(
        &self,
        call: &CallRequest,
        path: &str,
    ) -> Result<(String, String), String> {
        if path.starts_with('~') || path.contains('$') || path.starts_with("file:") {
            return Err(format!(
                "params_file `{path}`: write the path out, without `~`, `$VAR` or `file:`"
            ));
        }
        let (session, task, cwd, path) = (
            self.session_id().to_owned(),
            call.task.clone(),
            call.cwd.clone(),
            path.to_owned(),
        );
        tokio::task::spawn_blocking(move || {
            let place = Place::resolve(&mut Resolver::default(), &task, cwd.as_deref());
            let ctx = crate::calls::builtins::context(&session, &place, &[]);
            let absolute = codaris_tools::normalize(&ctx.absolute(&path))
                .ok_or_else(|| format!("params_file `{path}` is not a path a file can have"))?;
            let text =
                codaris_tools::files::read_beneath(&ctx.fence, &absolute, MAX_PARAMS_FILE_BYTES)
                    .map_err(|reason| format!("params_file: {reason}"))?;
            Ok((absolute.display().to_string(), text))
        })
        .await
        .unwrap_or_else(|err| {
            Err(format!(
                "params_file: reading it failed inside the daemon: {err}"
            ))
        })
    }
}
