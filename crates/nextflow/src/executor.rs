//! Where a run's tasks go, as its configuration says for the profiles it runs with: the
//! executor (`process.executor`), its queue (`process.queue`) and the resource ceiling
//! (`process.resourceLimits`), for a launch's card. Read statically: the last assignment among
//! the top level and the chosen profiles, in reading order; a value Nextflow computes at launch
//! is shown as its source text.

use crate::parse::{Config, Value};

/// The executor settings a launch with `profiles` gets from `config`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExecutorSettings {
    /// `(value, profile it came from)`.
    pub executor: Option<(String, Option<String>)>,
    pub queue: Option<String>,
    pub resource_limits: Option<String>,
}

impl ExecutorSettings {
    /// Reads them from `config` for `profiles`.
    pub fn of(config: &Config, profiles: &[String]) -> ExecutorSettings {
        let last = |key: &str| {
            config.settings.iter().rev().find(|s| {
                s.key == key
                    && s.selector.is_none()
                    && s.profile
                        .as_ref()
                        .is_none_or(|p| profiles.iter().any(|chosen| chosen == p))
            })
        };
        ExecutorSettings {
            executor: last("process.executor").map(|s| (show(&s.value), s.profile.clone())),
            queue: last("process.queue").map(|s| show(&s.value)),
            resource_limits: last("process.resourceLimits").map(|s| show(&s.value)),
        }
    }

    /// One line for a card, or `None` when the run stays on this machine with no ceiling set.
    pub fn card_line(&self) -> Option<String> {
        let executor = match &self.executor {
            Some((name, _)) if name == "local" => None,
            other => other.as_ref(),
        };
        if executor.is_none() && self.resource_limits.is_none() {
            return None;
        }
        let mut line = match executor {
            Some((name, Some(profile))) => format!("executor: {name} (profile `{profile}`)"),
            Some((name, None)) => format!("executor: {name}"),
            None => "executor: local".to_owned(),
        };
        if let Some(queue) = &self.queue {
            line.push_str(&format!(", queue: {queue}"));
        }
        match &self.resource_limits {
            Some(limits) => line.push_str(&format!(", resource limits: {limits}")),
            None => line.push_str(", resource limits: none set (process.resourceLimits)"),
        }
        Some(line)
    }
}

/// A config value as written: strings bare, maps and lists in Groovy's brackets.
fn show(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) | Value::Str(n) | Value::Expr(n) => n.clone(),
        Value::List(items) => format!(
            "[{}]",
            items.iter().map(show).collect::<Vec<_>>().join(", ")
        ),
        Value::Map(entries) => format!(
            "[{}]",
            entries
                .iter()
                .map(|(k, v)| format!("{k}: {}", show(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("nextflow.config"), text).unwrap();
        crate::parse::load_config(dir.path(), "nextflow.config").unwrap()
    }

    #[test]
    fn the_chosen_profile_s_executor_queue_and_limits_are_named() {
        let c = config(
            "process {\n  resourceLimits = [cpus: 4, memory: 16.GB]\n}\nprofiles {\n  slurm {\n    process.executor = 'slurm'\n    process.queue = 'short'\n    process.resourceLimits = [cpus: 64, memory: 512.GB, time: 48.h]\n  }\n  docker { docker.enabled = true }\n}\n",
        );
        let slurm = ExecutorSettings::of(&c, &["test".into(), "slurm".into()]);
        assert_eq!(
            slurm.card_line().as_deref(),
            Some(
                "executor: slurm (profile `slurm`), queue: short, resource limits: [cpus: 64, memory: 512.GB, time: 48.h]"
            )
        );
        let local = ExecutorSettings::of(&c, &["docker".into()]);
        assert_eq!(
            local.card_line().as_deref(),
            Some("executor: local, resource limits: [cpus: 4, memory: 16.GB]")
        );
        assert_eq!(ExecutorSettings::of(&config(""), &[]).card_line(), None);
    }
}
