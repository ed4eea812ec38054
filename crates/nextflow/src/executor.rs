//! Where a run's tasks go, as its configuration says for the profiles it runs with: the
//! executor (`process.executor`), its queue (`process.queue`), the resource ceiling
//! (`process.resourceLimits`) and the work directory (`workDir`), for a launch's card and its
//! check of where the run writes. Read statically: the last assignment among
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
    /// `workDir`, where the run's tasks write.
    pub work_dir: Option<WorkDirSetting>,
}

/// A `workDir` assignment: its value, literal when it is one, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkDirSetting {
    /// The path or URL when the value is a string literal; `None` when Nextflow computes it
    /// as the run starts (a GString, a call), which no static reading can know.
    pub literal: Option<String>,
    /// The value as written.
    pub text: String,
    pub profile: Option<String>,
    /// The file (relative to the directory read) and line it is set on.
    pub file: String,
    pub line: u32,
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
            work_dir: last("workDir").map(|s| WorkDirSetting {
                literal: s.value.as_str().map(str::to_owned),
                text: show(&s.value),
                profile: s.profile.clone(),
                file: s.file.clone(),
                line: s.line,
            }),
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

    #[test]
    fn the_work_dir_is_the_last_set_by_the_top_level_or_a_chosen_profile() {
        let c = config(
            "workDir = '/scratch/lab/work'\nprofiles {\n  awsbatch {\n    workDir = 's3://lab/work'\n  }\n  odd { workDir = \"${params.outdir}/work\" }\n}\n",
        );
        let top = ExecutorSettings::of(&c, &["test".into()]).work_dir.unwrap();
        assert_eq!(top.literal.as_deref(), Some("/scratch/lab/work"));
        assert_eq!((top.profile, top.line), (None, 1));
        let aws = ExecutorSettings::of(&c, &["awsbatch".into()])
            .work_dir
            .unwrap();
        assert_eq!(aws.literal.as_deref(), Some("s3://lab/work"));
        assert_eq!(aws.profile.as_deref(), Some("awsbatch"));
        let computed = ExecutorSettings::of(&c, &["odd".into()]).work_dir.unwrap();
        assert_eq!(computed.literal, None);
        assert!(computed.text.contains("params.outdir"), "{}", computed.text);
        assert_eq!(ExecutorSettings::of(&config(""), &[]).work_dir, None);
    }
}
