//! `[nextflow]` in the configuration file: which programs the Nextflow tools run and where
//! the operator's compliance rules are.
//!
//! ```toml
//! [nextflow]
//! bin = "/opt/nextflow/nextflow"    # the `nextflow` nf-core calls (default: on PATH)
//! nf_core = "/opt/nfcore/bin/nf-core"
//! nf_test = "/opt/nf-test/nf-test"   # the `nf-test` test_pipeline runs (default: on PATH)
//! rules_dir = "/etc/codaris/rules"  # default: `rules` beside the configuration file
//! profiles = ["test", "docker"]     # the profiles runs and tests may use
//! pass_env = ["AWS_PROFILE"]        # variables a pipeline run's `nextflow` gets, nothing else
//! test_datasets = "http://mirror.lab/test-datasets/"  # default: nf-core's on GitHub
//! ```

use std::path::{Path, PathBuf};

use codaris_tools::nextflow::NextflowSetup;
use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// `[nextflow]`.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NextflowToml {
    pub bin: Option<String>,
    pub nf_core: Option<String>,
    pub nf_test: Option<String>,
    pub rules_dir: Option<PathBuf>,
    pub profiles: Option<Vec<String>>,
    pub pass_env: Option<Vec<String>>,
    pub test_datasets: Option<String>,
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
    let defaults = NextflowSetup::default();
    let profiles = match toml.profiles {
        None => defaults.profiles,
        Some(list) => {
            // A name Nextflow would take apart (a comma) or cannot name (blank) is refused
            // here, so the allowlist means exactly what it lists.
            if let Some(bad) = list
                .iter()
                .find(|name| name.trim().is_empty() || name.contains([',', ' ', '\0']))
            {
                return Err(ConfigError::Invalid {
                    key: origin("nextflow.profiles"),
                    reason: format!("`{bad}` is not a profile name"),
                });
            }
            codaris_tools::Live::new(list)
        }
    };
    let pass_env = toml.pass_env.unwrap_or_default();
    if let Some(bad) = pass_env
        .iter()
        .find(|name| !codaris_tools::shell::is_variable_name(name))
    {
        return Err(ConfigError::Invalid {
            key: origin("nextflow.pass_env"),
            reason: format!("`{bad}` is not a variable name"),
        });
    }
    // Refused, not dropped with a warning: the operator meant the run to have it and it never
    // will (the commands' environment withholds it), so the run would fail at its first use
    // of it, far from the cause. `codaris config check` says the same (codaris-config).
    if let Some(withheld) = pass_env
        .iter()
        .find(|name| codaris_config::WITHHELD_VARIABLES.contains(&name.as_str()))
    {
        return Err(ConfigError::Invalid {
            key: origin("nextflow.pass_env"),
            reason: format!(
                "lists `{withheld}`, a model provider's key or Codaris's own, which never passes to a run"
            ),
        });
    }
    let test_datasets = match toml.test_datasets {
        None => defaults.test_datasets,
        Some(url) => {
            let url = super::values::http_url(&origin("nextflow.test_datasets"), &url)?;
            if url.ends_with('/') {
                url
            } else {
                format!("{url}/")
            }
        }
    };
    Ok(NextflowSetup {
        nextflow: program("bin", toml.bin, "nextflow")?,
        nf_core: program("nf_core", toml.nf_core, "nf-core")?,
        nf_test: program("nf_test", toml.nf_test, "nf-test")?,
        rules_dir,
        profiles,
        pass_env: codaris_tools::Live::new(pass_env),
        test_datasets,
    })
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
        assert_eq!(setup.nf_test, "nf-test");
        assert_eq!(setup.rules_dir, Some(PathBuf::from("/etc/codaris/rules")));
        assert!(setup.profiles.get().iter().any(|p| p == "docker"));
        assert!(!setup.profiles.get().iter().any(|p| p == "wave"));
        assert_eq!(
            setup.test_datasets,
            "https://raw.githubusercontent.com/nf-core/test-datasets/"
        );
        let mirror = resolve(
            Some(NextflowToml {
                test_datasets: Some("http://127.0.0.1:9/data".to_owned()),
                profiles: Some(vec!["test".to_owned()]),
                ..NextflowToml::default()
            }),
            None,
            &origin,
        )?;
        assert_eq!(mirror.test_datasets, "http://127.0.0.1:9/data/");
        assert_eq!(*mirror.profiles.get(), ["test"]);
        assert!(mirror.allowed_profiles("test,docker").is_err());
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
                    nf_test: Some("tools/nf-test".to_owned()),
                    ..NextflowToml::default()
                },
                "nextflow.nf_test",
            ),
            (
                NextflowToml {
                    nf_test: Some(" ".to_owned()),
                    ..NextflowToml::default()
                },
                "nextflow.nf_test",
            ),
            (
                NextflowToml {
                    rules_dir: Some(PathBuf::from("rules")),
                    ..NextflowToml::default()
                },
                "nextflow.rules_dir",
            ),
            (
                NextflowToml {
                    profiles: Some(vec!["test,docker".to_owned()]),
                    ..NextflowToml::default()
                },
                "nextflow.profiles",
            ),
            (
                NextflowToml {
                    pass_env: Some(vec!["AWS-PROFILE".to_owned()]),
                    ..NextflowToml::default()
                },
                "nextflow.pass_env",
            ),
            (
                NextflowToml {
                    pass_env: Some(vec![
                        "AWS_PROFILE".to_owned(),
                        "ANTHROPIC_API_KEY".to_owned(),
                    ]),
                    ..NextflowToml::default()
                },
                "nextflow.pass_env",
            ),
            (
                NextflowToml {
                    test_datasets: Some("ftp://mirror/test-datasets".to_owned()),
                    ..NextflowToml::default()
                },
                "nextflow.test_datasets",
            ),
        ] {
            match resolve(Some(toml), None, &origin) {
                Err(ConfigError::Invalid { key: got, .. }) => assert_eq!(got, format!("`{key}`")),
                other => panic!("{key}: {other:?}"),
            }
        }
    }
}
