//! Which config settings apply to a process, the way Nextflow chooses them: the generic
//! `process.*` settings, then those under a matching `withLabel:`, then a matching
//! `withName:` — later ones override earlier ones for the same directive.
//!
//! Nextflow (`ProcessConfig.applyConfig`) tries each `withName:` pattern against the process's
//! simple name and then against its fully qualified name (`NFCORE_X:SUB:FASTQC`), each as a
//! Java regular expression matched whole, `!` negating the match; a selector applies when
//! either try says so. So a qualified pattern (`.*:BAM_STATS_SAMTOOLS:.*`) can only pick a
//! process through its qualified name, and a plain one (`FASTQC`) through its simple name.
//! One consequence is kept on purpose, as Nextflow has it: a negated qualified pattern
//! (`!WF:A`) applies to `WF:A` itself, through its simple name (nextflow-io/nextflow#6480).

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
    /// order Nextflow applies them (so for one directive the last one wins). `name` is the
    /// fully qualified name when it is known (a run's trace gives it:
    /// `NFCORE_SAREK:SAREK:BAM_STATS_SAMTOOLS:SAMTOOLS_STATS`), else the simple name; with
    /// the simple name alone, qualified patterns pick nothing, since a static reading does
    /// not know the workflows a process is called from.
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
                        SelectorKind::WithName => selects_process(sel, name),
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

/// Whether a `withName:` selector picks the process `name` (fully qualified or simple): its
/// pattern tried on the simple name, then on the qualified one, as Nextflow does.
pub fn selects_process(sel: &ProcessSelector, name: &str) -> bool {
    let simple = name.rsplit(':').next().unwrap_or(name);
    selects(sel, simple) || (simple != name && selects(sel, name))
}

/// Whether a selector's pattern, matched whole (`!` negating), picks `subject`.
pub fn selects(sel: &ProcessSelector, subject: &str) -> bool {
    let (negate, pattern) = match sel.pattern.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, sel.pattern.as_str()),
    };
    // An invalid pattern selects nothing, negated or not (Nextflow stops on it).
    match Regex::new(&format!("^(?:{pattern})$")) {
        Ok(re) => re.is_match(subject) != negate,
        Err(_) => false,
    }
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
        assert_eq!(got, vec![("cpus".to_string(), 2), ("cpus".to_string(), 3)]);
        let got: Vec<u32> = c
            .process_settings("WF:FASTQC", &["big"])
            .into_iter()
            .map(|p| p.setting.line)
            .collect();
        // `!FASTQC` applies through the qualified name, which is not `FASTQC`: Nextflow's
        // own reading (nextflow-io/nextflow#6480), shown as it is.
        assert_eq!(got, vec![2, 3, 4, 5]);
        assert_eq!(c.process_settings("OTHER", &[]).len(), 2);
    }

    /// A qualified pattern picks a process only through its qualified name, matched whole;
    /// a plain one through its simple name.
    #[test]
    fn qualified_patterns_match_the_whole_qualified_name() {
        let c = parse_config(
            "n.config",
            "process {\n  withName: 'WF:BAM_STATS_SAMTOOLS:.*' { cpus = 1 }\n  withName: '.*:(A|B)' { cpus = 2 }\n  withName: 'FASTQC' { cpus = 3 }\n  withName: 'FASTQC_.*' { cpus = 4 }\n}\n",
        );
        let lines = |name: &str| -> Vec<u32> {
            c.process_settings(name, &[])
                .into_iter()
                .map(|p| p.setting.line)
                .collect()
        };
        assert_eq!(lines("WF:QC:FASTQC"), vec![4]);
        assert_eq!(lines("WF:BAM_STATS_SAMTOOLS:SAMTOOLS_STATS"), vec![2]);
        assert_eq!(lines("WF:SUB:B"), vec![3]);
        assert_eq!(lines("WF:FASTQC_X"), vec![5]);
        assert_eq!(lines("FASTQC"), vec![4]);
        assert_eq!(lines("B"), Vec::<u32>::new());
    }
}
