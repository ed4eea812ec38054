//! The provider settings while the daemon runs: a login swaps them whole (the next session
//! takes them, without a restart), and the credentials file it writes. How they are resolved is
//! [`crate::config::providers`]'s.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use codaris_agent::ProviderKind;

use crate::config::providers::{
    CREDENTIALS_FILE, CredentialsToml, ProviderInputs, ProviderSettings, read_credentials, resolve,
};
use crate::error::{ConfigError, DaemonError};

/// Writes `creds` to `path` as a new 0600 file renamed over the old one, so a reader sees the
/// old file or the new one, and no one else ever sees either.
fn write_credentials(path: &Path, creds: &CredentialsToml) -> Result<(), DaemonError> {
    let io = |source| DaemonError::Io {
        path: path.to_path_buf(),
        source,
    };
    let text = toml::to_string(creds).map_err(|err| DaemonError::InvalidArgument {
        field: "credentials",
        reason: format!("cannot be encoded: {err}"),
    })?;
    let dir = path.parent().unwrap_or(Path::new("/"));
    let suffix = crate::secret::random_hex(8).map_err(io)?;
    let temp = dir.join(format!(".{CREDENTIALS_FILE}.{suffix}"));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        // The mode above is masked by the umask; this makes it exact whatever the umask.
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written.map_err(io)
}

/// What a login does with the stored key.
#[derive(Clone, PartialEq, Eq)]
pub enum KeyChange {
    /// Keep the stored one (or none).
    Keep,
    /// Store this one.
    Set(String),
    /// Store none: the server is on this machine and needs none. Refused for any other.
    Remove,
}

impl std::fmt::Debug for KeyChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Keep => "Keep",
            Self::Set(_) => "Set(<redacted>)",
            Self::Remove => "Remove",
        })
    }
}

/// What `codaris login` asks to store; empty fields keep what is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    pub provider: ProviderKind,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key: KeyChange,
}

/// The daemon's provider settings, swapped whole by a login.
#[derive(Debug)]
pub struct LiveProviders {
    inputs: ProviderInputs,
    file: PathBuf,
    current: RwLock<Arc<ProviderSettings>>,
    /// One login at a time reads, changes and writes the file.
    writing: Mutex<()>,
}

impl LiveProviders {
    /// The settings the daemon started with, and the file logins write to.
    pub fn new(inputs: ProviderInputs, settings: ProviderSettings, file: PathBuf) -> Self {
        Self {
            inputs,
            file,
            current: RwLock::new(Arc::new(settings)),
            writing: Mutex::new(()),
        }
    }

    pub fn current(&self) -> Arc<ProviderSettings> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Stores `login` in the credentials file and makes the result the live settings. A bad
    /// value changes nothing: it is checked before anything is written.
    pub fn login(&self, login: Login) -> Result<Arc<ProviderSettings>, DaemonError> {
        let invalid = |field: &'static str, err: ConfigError| DaemonError::InvalidArgument {
            field,
            reason: err.to_string(),
        };
        let _writing = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        let mut creds = read_credentials(&self.file)
            .map_err(|err| invalid("credentials", err))?
            .unwrap_or_default();
        creds.provider = Some(login.provider.as_str().to_owned());
        if let Some(model) = login.model {
            creds.model = Some(model);
        }
        let api = creds.api_mut(login.provider);
        if let Some(url) = login.base_url {
            api.base_url = Some(
                crate::config::http_url("base_url", &url)
                    .map_err(|err| invalid("base_url", err))?,
            );
        }
        match &login.api_key {
            KeyChange::Keep => {}
            KeyChange::Set(key) => api.api_key = Some(key.clone()),
            KeyChange::Remove => api.api_key = None,
        }
        let settings = resolve(&self.inputs, Some((&self.file, &creds)))
            .map_err(|err| invalid("login", err))?;
        if login.api_key == KeyChange::Remove {
            // A key is what keeps a remote server's door shut: only this machine's may go
            // without one, judged on the base URL in force after the login (the environment's
            // included), parsed, so `http://localhost@evil.example` is not this machine.
            let base_url = settings
                .api(login.provider)
                .base_url
                .clone()
                .unwrap_or_else(|| login.provider.default_base_url().to_owned());
            if !codaris_agent::is_loopback_url(&base_url) {
                return Err(DaemonError::InvalidArgument {
                    field: "api_key",
                    reason: format!(
                        "none was given, and `{base_url}` is not on this machine; only a server on 127.0.0.1, ::1 or localhost may go without a key"
                    ),
                });
            }
        }
        write_credentials(&self.file, &creds)?;
        let settings = Arc::new(settings);
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = settings.clone();
        tracing::info!(
            provider = login.provider.as_str(),
            file = %self.file.display(),
            "provider settings stored and in force"
        );
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codaris_agent::ProviderChoice;
    use pretty_assertions::assert_eq;

    use crate::config::ApiToml;
    use crate::config::providers::tests::{inputs, login};

    #[test]
    fn a_login_is_stored_0600_and_keeps_the_other_provider_s_key()
    -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let file = temp.path().join(CREDENTIALS_FILE);
        let live = LiveProviders::new(
            ProviderInputs::default(),
            ProviderSettings::default(),
            file.clone(),
        );
        live.login(Login {
            provider: ProviderKind::Anthropic,
            model: Some("claude-x".to_owned()),
            base_url: None,
            api_key: KeyChange::Set("sk-ant-1".to_owned()),
        })?;
        let settings = live.login(Login {
            provider: ProviderKind::OpenAi,
            model: Some("gpt-x".to_owned()),
            base_url: Some("http://127.0.0.1:9/v1".to_owned()),
            api_key: KeyChange::Set("sk-oa-1".to_owned()),
        })?;
        assert_eq!(
            std::fs::metadata(&file)?.permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            settings.provider,
            Some(ProviderChoice::Api(ProviderKind::OpenAi))
        );
        assert_eq!(settings.anthropic.api_key.as_deref(), Some("sk-ant-1"));
        assert_eq!(settings.openai.api_key.as_deref(), Some("sk-oa-1"));
        assert_eq!(live.current().model.as_deref(), Some("gpt-x"));
        // Nothing else is left in the directory: the temporary file was renamed.
        assert_eq!(std::fs::read_dir(temp.path())?.count(), 1);
        assert!(!format!("{:?}", read_credentials(&file)?).contains("sk-"));

        let refused = live.login(Login {
            provider: ProviderKind::OpenAi,
            model: None,
            base_url: Some("not a url".to_owned()),
            api_key: KeyChange::Set("sk-oa-2".to_owned()),
        });
        assert!(refused.is_err());
        assert_eq!(live.current().openai.api_key.as_deref(), Some("sk-oa-1"));

        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644))?;
        let open = read_credentials(&file).err().map(|e| e.to_string());
        assert!(open.unwrap_or_default().contains("chmod 600"));
        Ok(())
    }

    #[test]
    fn a_login_without_a_key_is_kept_for_a_server_on_this_machine_only()
    -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let file = temp.path().join(CREDENTIALS_FILE);
        let live = LiveProviders::new(
            ProviderInputs::default(),
            ProviderSettings::default(),
            file.clone(),
        );
        live.login(Login {
            provider: ProviderKind::OpenAi,
            model: Some("gpt-x".to_owned()),
            base_url: None,
            api_key: KeyChange::Set("sk-oa-1".to_owned()),
        })?;
        let remote = |base_url: Option<&str>| Login {
            provider: ProviderKind::OpenAi,
            model: None,
            base_url: base_url.map(str::to_owned),
            api_key: KeyChange::Remove,
        };
        // The public endpoint, and look-alikes of this machine: refused, nothing changed.
        for base_url in [
            None,
            Some("http://127.0.0.1.evil.example/v1"),
            Some("http://localhost@evil.example/v1"),
        ] {
            let refused = live.login(remote(base_url)).err().map(|e| e.to_string());
            assert!(
                refused
                    .as_deref()
                    .is_some_and(|e| e.contains("not on this machine")),
                "{base_url:?}: {refused:?}"
            );
            assert_eq!(live.current().openai.api_key.as_deref(), Some("sk-oa-1"));
        }
        let settings = live.login(remote(Some("http://127.0.0.1:8080/v1")))?;
        assert_eq!(settings.openai.api_key, None);
        assert_eq!(
            settings.openai.base_url.as_deref(),
            Some("http://127.0.0.1:8080/v1")
        );
        let stored = read_credentials(&file)?.unwrap_or_default();
        assert_eq!(stored.openai.and_then(|api| api.api_key), None);

        let mut by_hand = login();
        by_hand
            .openai
            .get_or_insert_with(ApiToml::default)
            .max_output_tokens = Some(10);
        let refused = resolve(&inputs(&[]), Some((&file, &by_hand)))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            refused.contains("`openai.max_output_tokens` in"),
            "{refused}"
        );
        Ok(())
    }
}
