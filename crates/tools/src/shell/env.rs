//! A command's environment: built from an allowlist, not the daemon's minus a few keys.
//!
//! The daemon's environment holds what the person's shell exported when it started: model
//! keys, cloud and registry tokens, a session bus address. A command the model wrote could
//! print any of it into the transcript, so only what a shell and the usual toolchains need
//! passes ([`ALLOWED`], [`ALLOWED_PREFIXES`]), with the names `tools.env_passthrough` adds
//! (and, for a pipeline run's `nextflow` alone, `[nextflow] pass_env`).
//! Codaris's own secrets ([`WITHHELD`]) never pass, not even when configured.

use std::ffi::OsString;

/// Names that pass as they are.
pub const ALLOWED: [&str; 27] = [
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "USER",
    "LOGNAME",
    "SHELL",
    "TZ",
    // Java, for `nextflow` and nf-test.
    "JAVA_HOME",
    "JAVA_CMD",
    // Rust.
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    // Python.
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "PIPX_HOME",
    // Go.
    "GOPATH",
    "GOROOT",
    "GOMODCACHE",
    // Containers' caches, for pipelines run with Singularity or Apptainer.
    "SINGULARITY_CACHEDIR",
    "APPTAINER_CACHEDIR",
    "NXF_SINGULARITY_CACHEDIR",
    // R and Perl libraries.
    "R_LIBS_USER",
    "PERL5LIB",
];

/// Families that pass whole: the locale, Nextflow's settings, conda and mamba, pyenv, SDKMAN.
pub const ALLOWED_PREFIXES: [&str; 7] = [
    "LC_", "NXF_", "CONDA_", "MAMBA_", "PYENV_", "SDKMAN_", "NFCORE_",
];

/// Codaris's own secrets, never passed even when `tools.env_passthrough` or `[nextflow]
/// pass_env` names them: the providers' keys; `CODARIS_KEYS_FD`, the pipe the keys crossed
/// `codarisd`'s re-exec on; `NOTIFY_SOCKET`, through which a command would speak for the
/// daemon to its service manager. One list with the configuration's check of `pass_env`.
pub use codaris_config::WITHHELD_VARIABLES as WITHHELD;

/// Whether a variable named `name` reaches commands, `passthrough` being the configured names.
pub fn passes(name: &str, passthrough: &[String]) -> bool {
    if WITHHELD.contains(&name) {
        return false;
    }
    ALLOWED.contains(&name)
        || ALLOWED_PREFIXES
            .iter()
            .any(|prefix| name.starts_with(prefix))
        || passthrough.iter().any(|allowed| allowed == name)
}

/// The variables of `environment` (the daemon's) that reach a command.
pub(crate) fn allowed(
    environment: impl Iterator<Item = (OsString, OsString)>,
    passthrough: &[String],
) -> Vec<(OsString, OsString)> {
    environment
        .filter(|(name, _)| name.to_str().is_some_and(|name| passes(name, passthrough)))
        .collect()
}

/// Whether `name` is a variable name `tools.env_passthrough` may list.
pub fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::*;

    fn pairs(names: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        names
            .iter()
            .map(|(name, value)| (OsStr::new(name).to_owned(), OsStr::new(value).to_owned()))
            .collect()
    }

    #[test]
    fn only_the_allowlist_and_the_configured_names_pass() {
        let daemon = pairs(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/me"),
            ("LC_ALL", "C.UTF-8"),
            ("NXF_HOME", "/home/me/.nextflow"),
            ("CONDA_PREFIX", "/opt/conda"),
            ("MY_SECRET_TOKEN", "s3cr3t"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
            ("GITHUB_TOKEN", "ghp"),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"),
            ("ANTHROPIC_API_KEY", "sk"),
            ("NOTIFY_SOCKET", "/run/systemd/notify"),
            ("MY_TOOL_HOME", "/opt/tool"),
        ]);
        let passthrough = vec!["MY_TOOL_HOME".to_owned(), "ANTHROPIC_API_KEY".to_owned()];
        let passed: Vec<String> = allowed(daemon.into_iter(), &passthrough)
            .into_iter()
            .filter_map(|(name, _)| name.into_string().ok())
            .collect();
        assert_eq!(
            passed,
            [
                "PATH",
                "HOME",
                "LC_ALL",
                "NXF_HOME",
                "CONDA_PREFIX",
                "MY_TOOL_HOME"
            ]
        );
    }

    #[test]
    fn a_name_not_valid_as_utf8_does_not_pass() {
        use std::os::unix::ffi::OsStrExt;
        let odd = OsStr::from_bytes(b"PATH\xff").to_owned();
        assert!(allowed(vec![(odd, OsString::from("x"))].into_iter(), &[]).is_empty());
    }

    #[test]
    fn variable_names_are_checked() {
        assert!(is_variable_name("MY_TOOL_HOME"));
        assert!(is_variable_name("_x1"));
        for bad in ["", "1A", "A-B", "A=B", "A B"] {
            assert!(!is_variable_name(bad), "`{bad}`");
        }
    }
}
