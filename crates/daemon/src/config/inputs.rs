//! What [`super::resolve`] reads: the command line's flags and everything gathered before it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

use super::file::ConfigToml;

/// What the command line said; each field overrides file and environment.
#[derive(Debug, Default, Clone)]
pub struct Flags {
    pub listen: Option<String>,
}

/// The inputs of [`resolve`]: everything read before it, so it does no I/O.
#[derive(Debug, Clone)]
pub struct Sources {
    pub state_dir: PathBuf,
    /// The person's home directory (`$HOME`), never an allowed root unless configured, and
    /// warned about when it is.
    pub home: Option<PathBuf>,
    pub file: Option<(PathBuf, ConfigToml)>,
    /// The directory the configuration file is read from, or would be when there is none; skills
    /// default to `<config_dir>/skills`. `None`: no default skills directory.
    pub config_dir: Option<PathBuf>,
    pub env: BTreeMap<String, OsString>,
    pub flags: Flags,
}
