//! Which config settings apply to a process, the way Nextflow chooses them: the generic
//! `process.*` settings, then those under a matching `withLabel:`, then a matching
//! `withName:` — later ones override earlier ones for the same directive.

use regex::Regex;

use super::model::{Config, ProcessSelector, SelectorKind, Setting};

/// A setting that applies to one process, with the directive it sets.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProcessSetting<'a> {
    /// The directive, without scope or selector: `container`, `ext.args`, `cpus`.
    pub directive: String,
    pub setting: &'a Setting,
}

impl Config {
    /// The settings outside profiles that apply to the process `name` with `labels`, in the
    /// order Nextflow applies them (so for one directive the last one wins). Selector patterns
    /// are regular expressions matched against the whole name or label, `!` negates, and a
    /// qualified pattern (`.*:FASTQC`) is matched on its last segment, since a static reading
    /// does not know the workflow a process is called from.
    pub fn process_settings(&self, name: &str, labels: &[&str]) -> Vec<ProcessSetting<'_>> {
        let mut generic = Vec::new();
        let mut by_label = Vec::new();
        let mut by_name = Vec::new();
        for s in self.settings.iter().filter(|s| s.profile.is_none()) {
            match &s.selector {
                None => {
                    if let Some(d) = s.key.strip_prefix("process.") {
                        generic.push(ProcessSetting {
                            directive: d.to_string(),
                            setting: s,
                        });
                    }
                }
                Some(sel) => {
                    let prefix = format!("process.{}:{}.", sel.kind.keyword(), sel.pattern);
                    let Some(d) = s.key.strip_prefix(&prefix) else {
                        continue;
                    };
                    let hit = match sel.kind {
                        SelectorKind::WithLabel => labels.iter().any(|l| selects(sel, l)),
                        SelectorKind::WithName => selects(sel, name),
                    };
                    if !hit {
                        continue;
                    }
                    let ps = ProcessSetting {
                        directive: d.to_string(),
                        setting: s,
                    };
                    match sel.kind {
                        SelectorKind::WithLabel => by_label.push(ps),
                        SelectorKind::WithName => by_name.push(ps),
                    }
                }
            }
        }
        generic.extend(by_label);
        generic.extend(by_name);
        generic
    }
}

/// Whether a selector's pattern picks `subject`.
pub fn selects(sel: &ProcessSelector, subject: &str) -> bool {
    let (negate, pattern) = match sel.pattern.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, sel.pattern.as_str()),
    };
    let pattern = match sel.kind {
        SelectorKind::WithName => pattern.rsplit(':').next().unwrap_or(pattern),
        SelectorKind::WithLabel => pattern,
    };
    // An invalid pattern selects nothing, as a literal name would not match it either.
    let hit = Regex::new(&format!("^(?:{pattern})$")).is_ok_and(|re| re.is_match(subject));
    hit != negate
}

#[cfg(test)]
mod tests {
    use crate::parse::parse_config;

    #[test]
    fn name_beats_label_beats_generic() {
        let c = parse_config(
            "n.config",
            "process {\n  cpus = 1\n  withLabel: 'big|huge' { cpus = 8 }\n  withName: '.*:FASTQC' { cpus = 2 }\n  withName: '!FASTQC' { cpus = 99 }\n}\n",
        );
        let got: Vec<(String, u32)> = c
            .process_settings("FASTQC", &["big"])
            .into_iter()
            .map(|p| (p.directive, p.setting.line))
            .collect();
        assert_eq!(
            got,
            vec![
                ("cpus".to_string(), 2),
                ("cpus".to_string(), 3),
                ("cpus".to_string(), 4)
            ]
        );
        assert_eq!(c.process_settings("OTHER", &[]).len(), 2);
    }
}
