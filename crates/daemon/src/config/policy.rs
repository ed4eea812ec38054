//! `[policy]`: a shadow configuration, whose operator inputs decide every live call a second
//! time; where its verdict differs, the difference is recorded beside the decision (never
//! changing it) and `codaris audit shadow` lists it.
//!
//! ```toml
//! [policy]
//! shadow = "/etc/codaris/strict.toml"   # a whole configuration file, judged like this one
//! ```
//!
//! The shadow file is judged as `codarisd check-config` judges a file (alone, no environment);
//! only its operator inputs are used (`super::load::operator_inputs`); `codarisd check-config
//! --operator-inputs` gives a candidate's the same way to `codaris audit replay --config`.
//! Reading either file is `super::load`'s.

use std::path::PathBuf;

use codaris_ledger::OperatorInputs;
use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// `[policy]` as written.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyToml {
    /// A configuration file whose operator inputs decide every call a second time.
    pub shadow: Option<PathBuf>,
}

/// The shadow configuration as the daemon runs with it: the file and its operator inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct Shadow {
    pub path: PathBuf,
    pub inputs: OperatorInputs,
}

/// `policy.shadow`, which must be absolute (the daemon's working directory is no one's).
pub fn resolve(
    toml: Option<PolicyToml>,
    origin: &dyn Fn(&str) -> String,
) -> Result<Option<PathBuf>, ConfigError> {
    match toml.and_then(|t| t.shadow) {
        Some(path) if !path.is_absolute() => Err(ConfigError::Invalid {
            key: origin("policy.shadow"),
            reason: format!("`{}` is not an absolute path", path.display()),
        }),
        other => Ok(other),
    }
}
