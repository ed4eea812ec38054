//! What a new session asks the daemon for besides its directory and modes: the provider, model
//! and base URL, from the flags or this command's environment (a daemon already running never
//! saw it). Never a key: keys stay with the daemon.

use crate::cli::SessionArgs;
use crate::error::CliError;

/// The provider, model and base URL a new session asks the daemon for: the flags, else the
/// environment this command runs in (`CODARIS_PROVIDER`, `CODARIS_MODEL`, the provider's
/// `*_BASE_URL`), which a daemon already running never saw. Never a key.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SessionModel {
    pub provider: String,
    pub model: String,
    pub base_url: String,
}

impl SessionModel {
    pub fn from_args(
        args: &SessionArgs,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, CliError> {
        let env = |name: &str| env(name).filter(|value| !value.is_empty());
        // `--script` alone is the scripted model: the environment's provider is for real ones.
        let provider = match (&args.provider, &args.script) {
            (Some(provider), _) => Some(provider.clone()),
            (None, Some(_)) => Some("scripted".to_owned()),
            (None, None) => env("CODARIS_PROVIDER"),
        };
        let kind = provider
            .as_deref()
            .and_then(|name| match codaris_agent::ProviderChoice::parse(name)? {
                codaris_agent::ProviderChoice::Api(kind) => Some(kind),
                codaris_agent::ProviderChoice::Scripted => None,
            });
        let scripted = provider.as_deref() == Some("scripted");
        let model = match &args.model {
            Some(model) => model.clone(),
            None if scripted => String::new(),
            None => env("CODARIS_MODEL").unwrap_or_default(),
        };
        let base_url = match (&args.base_url, kind) {
            (Some(url), _) => url.clone(),
            (None, Some(kind)) => env(kind.base_url_env()).unwrap_or_default(),
            (None, None) => String::new(),
        };
        if scripted && args.base_url.is_some() {
            return Err(CliError::InvalidFlag {
                flag: "--base-url",
                reason: "the scripted model asks no server".to_owned(),
            });
        }
        Ok(Self {
            // `--script` with no provider named stays unnamed: the daemon takes the script.
            provider: match (&args.provider, &args.script) {
                (None, Some(_)) => String::new(),
                _ => provider.unwrap_or_default(),
            },
            model,
            base_url,
        })
    }

    /// Whether the daemon's own provider decides, while the environment holds a base URL
    /// that could be its: the caller then asks the daemon which provider it has.
    pub fn needs_daemon_provider(args: &SessionArgs, env: &dyn Fn(&str) -> Option<String>) -> bool {
        let set = |name: &str| env(name).is_some_and(|v| !v.is_empty());
        args.provider.is_none()
            && args.script.is_none()
            && args.base_url.is_none()
            && !set("CODARIS_PROVIDER")
            && codaris_agent::ProviderKind::ALL
                .iter()
                .any(|kind| set(kind.base_url_env()))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use clap::Parser;
    use pretty_assertions::assert_eq;

    fn args(flags: &[&str]) -> SessionArgs {
        let mut argv = vec!["codaris", "run"];
        argv.extend_from_slice(flags);
        argv.push("hello");
        match crate::cli::Cli::parse_from(argv).command {
            Some(crate::cli::Command::Run(run)) => run.session,
            other => panic!("not run: {other:?}"),
        }
    }

    /// A shell's environment of `pairs`, as the resolvers read one.
    pub(crate) fn env(
        pairs: &'static [(&'static str, &'static str)],
    ) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_environment_names_provider_model_and_the_provider_s_base_url() -> Result<(), CliError> {
        let vars = env(&[
            ("CODARIS_PROVIDER", "openai"),
            ("CODARIS_MODEL", "local-model"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1"),
            ("ANTHROPIC_BASE_URL", "http://wrong.example"),
            ("OPENAI_API_KEY", "sk-never-sent"),
        ]);
        let chosen = SessionModel::from_args(&args(&[]), &vars)?;
        assert_eq!(
            chosen,
            SessionModel {
                provider: "openai".to_owned(),
                model: "local-model".to_owned(),
                base_url: "http://127.0.0.1:8080/v1".to_owned(),
            }
        );
        assert!(!format!("{chosen:?}").contains("sk-never-sent"));
        // Flags win over the environment.
        let flagged = SessionModel::from_args(
            &args(&[
                "--provider",
                "anthropic",
                "--model",
                "claude-x",
                "--base-url",
                "https://proxy.example",
            ]),
            &vars,
        )?;
        assert_eq!(flagged.provider, "anthropic");
        assert_eq!(flagged.model, "claude-x");
        assert_eq!(flagged.base_url, "https://proxy.example");
        Ok(())
    }

    #[test]
    fn a_script_is_the_scripted_model_whatever_the_environment_says() -> Result<(), CliError> {
        let vars = env(&[
            ("CODARIS_PROVIDER", "openai"),
            ("CODARIS_MODEL", "local-model"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1"),
        ]);
        let scripted = SessionModel::from_args(&args(&["--script", "/s.json"]), &vars)?;
        assert_eq!(scripted, SessionModel::default());
        assert!(
            SessionModel::from_args(
                &args(&["--script", "/s.json", "--base-url", "http://x"]),
                &vars
            )
            .is_err()
        );
        Ok(())
    }

    #[test]
    fn only_an_unnamed_provider_with_a_base_url_in_the_environment_asks_the_daemon() {
        let with_url = env(&[("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")]);
        assert!(SessionModel::needs_daemon_provider(&args(&[]), &with_url));
        assert!(!SessionModel::needs_daemon_provider(
            &args(&["--provider", "openai"]),
            &with_url
        ));
        assert!(!SessionModel::needs_daemon_provider(&args(&[]), &env(&[])));
    }
}
