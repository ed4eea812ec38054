//! A committed configuration's MCP servers put in force while the daemon runs: servers it
//! no longer lists stop, new ones start, changed ones start again with their new settings, and
//! servers that share roots are told when the allowed folders changed
//! (`notifications/roots/list_changed`; they ask for the roots again), without a restart that
//! would lose what they hold. The others run on undisturbed.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::PoisonError;

use codaris_mcp::{ServerName, ServerSpec};

use super::McpHub;
use crate::error::DaemonError;

/// What a reconfiguration did, by server name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reconfigured {
    pub started: Vec<String>,
    pub stopped: Vec<String>,
    pub restarted: Vec<String>,
    /// Running servers told that the roots changed (the session's own included).
    pub told_roots: Vec<String>,
}

impl Reconfigured {
    /// One line for a person (`MCP servers: started docs; stopped fs`), or `None` when
    /// nothing changed.
    pub fn line(&self) -> Option<String> {
        let mut parts = Vec::new();
        for (what, names) in [
            ("started", &self.started),
            ("started again", &self.restarted),
            ("stopped", &self.stopped),
            ("told the new roots", &self.told_roots),
        ] {
            if !names.is_empty() {
                parts.push(format!("{what} {}", names.join(", ")));
            }
        }
        (!parts.is_empty()).then(|| format!("MCP servers: {}", parts.join("; ")))
    }
}

impl McpHub {
    /// Puts `servers` (the configuration's, the built-in one included) and `roots` in force.
    pub async fn reconfigure(
        &self,
        servers: Vec<ServerSpec>,
        roots: Vec<PathBuf>,
    ) -> Result<Reconfigured, DaemonError> {
        self.roots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone_from(&roots);
        let mut done = Reconfigured::default();
        let sessions: Vec<_> = self.session_servers().values().cloned().collect();
        for own in sessions {
            done.told_roots.extend(
                own.set_roots(roots.clone())
                    .await
                    .iter()
                    .map(ToString::to_string),
            );
        }
        done.told_roots.extend(
            self.registry
                .set_roots(roots)
                .await
                .iter()
                .map(ToString::to_string),
        );
        let (switches, _) = self.state.switches()?;
        let new: BTreeMap<ServerName, ServerSpec> = servers
            .into_iter()
            .map(|spec| (spec.name.clone(), spec))
            .collect();
        let old = std::mem::replace(
            &mut *self
                .configured
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
            new.clone(),
        );
        for name in old.keys().filter(|name| !new.contains_key(*name)) {
            self.registry.remove(name).await;
            done.stopped.push(name.to_string());
        }
        for (name, spec) in new {
            let again = match old.get(&name) {
                None => false,
                Some(before) if *before != spec => true,
                Some(_) => continue,
            };
            let mut spec = spec;
            // The person's `codaris mcp enable|disable` stands over the file, as at start.
            if let Some(&enabled) = switches.get(name.as_str()) {
                spec.enabled = enabled;
            }
            self.registry.add(spec);
            if again {
                done.restarted.push(name.to_string());
            } else {
                done.started.push(name.to_string());
            }
        }
        self.publish();
        Ok(done)
    }
}
