//! The environment a stdio server starts with: a fixed allowlist taken from the daemon's own,
//! plus exactly what its registration names. Never the daemon's `CODARIS_*` settings, API keys
//! or tokens: a server's tool that reports its environment (server-everything's `get-env`,
//! annotated read-only) would hand them to the model.

use std::collections::BTreeMap;
use std::ffi::OsString;

/// Variables passed through from the daemon's environment when set.
const PASSED: [&str; 7] = ["PATH", "HOME", "USER", "LANG", "TZ", "TMPDIR", "TERM"];

/// The environment of a server whose registration adds `named`, from the daemon's `current`.
/// Passed variables are the allowlist and any `LC_*`; a registration's own entries come last and
/// win (it names them deliberately, keys included).
pub fn server_env(
    current: impl IntoIterator<Item = (OsString, OsString)>,
    named: &BTreeMap<String, String>,
) -> BTreeMap<OsString, OsString> {
    let mut env: BTreeMap<OsString, OsString> = current
        .into_iter()
        .filter(|(key, _)| {
            key.to_str()
                .is_some_and(|k| PASSED.contains(&k) || k.starts_with("LC_"))
        })
        .collect();
    for (key, value) in named {
        env.insert(OsString::from(key), OsString::from(value));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn only_the_allowlist_and_the_registration_pass() {
        let daemon = os(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/me"),
            ("LC_ALL", "C.UTF-8"),
            ("ANTHROPIC_API_KEY", "sk-secret"),
            ("CODARIS_STATE_DIR", "/state"),
            ("GITHUB_TOKEN", "ghp"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
        ]);
        let named = BTreeMap::from([("MEMORY_FILE_PATH".to_owned(), "/m.jsonl".to_owned())]);
        let env = server_env(daemon, &named);
        let keys: Vec<_> = env.keys().filter_map(|k| k.to_str()).collect();
        assert_eq!(keys, ["HOME", "LC_ALL", "MEMORY_FILE_PATH", "PATH"]);
    }
}
