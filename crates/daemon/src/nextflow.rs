//! `[nextflow]` in the configuration file: which programs the Nextflow tools run and where
//! the operator's compliance rules are.
//!
//! ```toml
//! [nextflow]
//! bin = "/opt/nextflow/nextflow"    # the `nextflow` nf-core calls (default: on PATH)
//! nf_core = "/opt/nfcore/bin/nf-core"
//! rules_dir = "/etc/codaris/rules"  # default: `rules` beside the configuration file
//! ```

use std::path::{Path, PathBuf};

use codaris_tools::nextflow::NextflowSetup;
use serde::Deserialize;

use crate::error::ConfigError;

/// `[nextflow]`.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NextflowToml {
    pub bin: Option<String>,
    pub nf_core: Option<String>,
    pub rules_dir: Option<PathBuf>,
}

/// The setup the file asks for; `config_file` is where the configuration is (or would be)
/// read from, beside which the rules directory is by default.
pub fn resolve(
    toml: Option<NextflowToml>,
    config_file: Option<&Path>,
    origin: &dyn Fn(&str) -> String,
) -> Result<NextflowSetup, ConfigError> {
    let toml = toml.unwrap_or_default();
    let program = |key: &str, value: Option<String>, default: &str| match value {
        None => Ok(default.to_owned()),
        Some(text) if text.trim().is_empty() || text.contains('\0') => Err(ConfigError::Invalid {
            key: origin(&format!("nextflow.{key}")),
            reason: "must name a program (a name on PATH or an absolute path)".to_owned(),
        }),
        Some(text) if text.contains('/') && !Path::new(&text).is_absolute() => {
            Err(ConfigError::Invalid {
                key: origin(&format!("nextflow.{key}")),
                reason: format!(
                    "`{text}` is a relative path; give a name on PATH or an absolute path"
                ),
            })
        }
        Some(text) => Ok(text),
    };
    let rules_dir = match toml.rules_dir {
        Some(dir) if !dir.is_absolute() => {
            return Err(ConfigError::Invalid {
                key: origin("nextflow.rules_dir"),
                reason: "must be an absolute path".to_owned(),
            });
        }
        Some(dir) => Some(dir),
        None => config_file
            .and_then(Path::parent)
            .map(|dir| dir.join("rules")),
    };
    Ok(NextflowSetup {
        nextflow: program("bin", toml.bin, "nextflow")?,
        nf_core: program("nf_core", toml.nf_core, "nf-core")?,
        rules_dir,
    })
}

/// The samplesheet gates in the ledger's store.
#[derive(Debug, Clone)]
pub struct LedgerGates(pub codaris_ledger::Gates);

impl codaris_tools::nextflow::GateStore for LedgerGates {
    fn put(&self, key: &str, gate: &codaris_tools::nextflow::GateRecord) -> Result<(), String> {
        self.0.put(key, gate).map_err(|err| err.to_string())
    }

    fn get(&self, key: &str) -> Result<Option<codaris_tools::nextflow::GateRecord>, String> {
        self.0.get(key).map_err(|err| err.to_string())
    }

    fn remove(&self, key: &str) -> Result<(), String> {
        self.0.remove(key).map_err(|err| err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(key: &str) -> String {
        format!("`{key}`")
    }

    #[test]
    fn defaults_are_on_path_and_the_rules_beside_the_file() -> Result<(), ConfigError> {
        let setup = resolve(None, Some(Path::new("/etc/codaris/config.toml")), &origin)?;
        assert_eq!(setup.nextflow, "nextflow");
        assert_eq!(setup.nf_core, "nf-core");
        assert_eq!(setup.rules_dir, Some(PathBuf::from("/etc/codaris/rules")));
        Ok(())
    }

    #[test]
    fn bad_values_are_refused_with_their_key() {
        for (toml, key) in [
            (
                NextflowToml {
                    bin: Some(String::new()),
                    ..NextflowToml::default()
                },
                "nextflow.bin",
            ),
            (
                NextflowToml {
                    nf_core: Some("bin/nf-core".to_owned()),
                    ..NextflowToml::default()
                },
                "nextflow.nf_core",
            ),
            (
                NextflowToml {
                    rules_dir: Some(PathBuf::from("rules")),
                    ..NextflowToml::default()
                },
                "nextflow.rules_dir",
            ),
        ] {
            match resolve(Some(toml), None, &origin) {
                Err(ConfigError::Invalid { key: got, .. }) => assert_eq!(got, format!("`{key}`")),
                other => panic!("{key}: {other:?}"),
            }
        }
    }
}
