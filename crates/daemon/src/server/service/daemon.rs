use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use codaris_proto::v1;
use codaris_proto::v1::daemon_server::Daemon;
use tonic::{Request, Response, Status};

use crate::config::Config;
use crate::error::DaemonError;
use crate::server::convert::timestamp_ms;
use crate::server::shutdown::Shutdown;
use crate::sessions::providers::{KeyChange, Login};
use crate::sessions::store::SessionStore;

/// What the Status call reports and the handle Shutdown pulls.
#[derive(Debug)]
pub struct DaemonService {
    /// The configuration in force: a committed one replaces it (`config_commit`).
    pub config: codaris_tools::Live<Config>,
    /// The provider settings in force, swapped by `Login`.
    pub providers: Arc<crate::sessions::providers::LiveProviders>,
    pub socket: String,
    pub started_at_ms: u64,
    pub started: Instant,
    pub sessions: SessionStore,
    pub shutdown: Shutdown,
    /// Entries in the current tool index, updated whenever the index is swapped.
    pub tools_indexed: Arc<AtomicU32>,
    /// Whether commands run under Landlock, probed once at start.
    pub sandbox: String,
    /// Each session's process and memory limits and what keeps them, chosen at start.
    pub limits: Option<v1::SessionLimits>,
    /// The domain tools' programs, probed in the background when first asked for.
    pub programs: Arc<crate::calls::programs::ProgramProbe>,
    /// The configuration file's editor, shared with the `config_*` tools.
    pub editor: Arc<crate::reconfig::ConfigEditing>,
}

#[tonic::async_trait]
impl Daemon for DaemonService {
    async fn hello(
        &self,
        request: Request<v1::HelloRequest>,
    ) -> Result<Response<v1::HelloResponse>, Status> {
        let hello = request.into_inner();
        let supported = codaris_proto::API_VERSIONS;
        let chosen = hello
            .api_versions
            .iter()
            .copied()
            .filter(|v| supported.contains(v))
            .max();
        match chosen {
            Some(api_version) => {
                tracing::debug!(client = %hello.client, api_version, "hello");
                Ok(Response::new(v1::HelloResponse {
                    api_version,
                    supported_api_versions: supported.to_vec(),
                    daemon_version: env!("CARGO_PKG_VERSION").to_owned(),
                }))
            }
            None => Err(Status::failed_precondition(format!(
                "this codarisd {} speaks API versions {supported:?}, the client `{}` offered {:?}; install matching versions",
                env!("CARGO_PKG_VERSION"),
                hello.client,
                hello.api_versions
            ))),
        }
    }

    async fn status(
        &self,
        _request: Request<v1::StatusRequest>,
    ) -> Result<Response<v1::StatusResponse>, Status> {
        let (sessions_active, sessions_total) = self.sessions.counts()?;
        let providers = self.providers.current();
        let uptime_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(Response::new(v1::StatusResponse {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            api_version: codaris_proto::API_VERSIONS
                .iter()
                .copied()
                .max()
                .unwrap_or(1),
            pid: std::process::id(),
            started_at: Some(timestamp_ms(self.started_at_ms)),
            uptime_ms,
            state_dir: self.config.get().state_dir.display().to_string(),
            socket: self.socket.clone(),
            tcp_listen: self
                .config
                .get()
                .listen
                .map(|addr| addr.to_string())
                .unwrap_or_default(),
            sessions_active,
            sessions_total,
            tools_indexed: self.tools_indexed.load(Ordering::Relaxed),
            config_file: self
                .config
                .get()
                .config_file
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            sandbox: self.sandbox.clone(),
            limits: self.limits.clone(),
            warnings: self.config.get().warnings.clone(),
            programs: self.programs.current(),
            allowed_dirs: self
                .config
                .get()
                .allowed_dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect(),
            provider: providers
                .provider
                .map(|p| p.as_str().to_owned())
                .unwrap_or_default(),
            model: providers.model.clone().unwrap_or_default(),
            http_allowlist: self.config.get().http_allowlist.clone(),
            command_allowlist: self.config.get().command_allowlist.clone(),
            memory_enabled: self.config.get().memory.enabled,
        }))
    }

    async fn shutdown(
        &self,
        _request: Request<v1::ShutdownRequest>,
    ) -> Result<Response<v1::ShutdownResponse>, Status> {
        // Graceful shutdown lets this call's answer reach the client before the server stops.
        self.shutdown.trigger("Shutdown RPC");
        Ok(Response::new(v1::ShutdownResponse {}))
    }

    async fn login(
        &self,
        request: Request<v1::LoginRequest>,
    ) -> Result<Response<v1::LoginResponse>, Status> {
        let request = request.into_inner();
        let provider = match codaris_agent::ProviderChoice::parse(&request.provider) {
            Some(codaris_agent::ProviderChoice::Api(kind)) => kind,
            _ => {
                return Err(DaemonError::InvalidArgument {
                    field: "provider",
                    reason: format!("must be anthropic or openai, not `{}`", request.provider),
                }
                .into());
            }
        };
        let non_empty = |s: String| (!s.trim().is_empty()).then(|| s.trim().to_owned());
        if request.api_key.chars().any(char::is_control) {
            return Err(DaemonError::InvalidArgument {
                field: "api_key",
                reason: "holds a control character (a pasted newline?)".to_owned(),
            }
            .into());
        }
        let api_key = match (non_empty(request.api_key), request.no_key) {
            (Some(_), true) => {
                return Err(DaemonError::InvalidArgument {
                    field: "api_key",
                    reason: "is given together with no_key; send one or the other".to_owned(),
                }
                .into());
            }
            (Some(key), false) => KeyChange::Set(key),
            (None, true) => KeyChange::Remove,
            (None, false) => KeyChange::Keep,
        };
        let login = Login {
            provider,
            model: non_empty(request.model),
            base_url: non_empty(request.base_url),
            api_key,
        };
        let providers = self.providers.clone();
        let settings = tokio::task::spawn_blocking(move || providers.login(login))
            .await
            .map_err(|err| Status::internal(format!("the login did not finish: {err}")))??;
        let in_force = settings.provider.and_then(|p| match p {
            codaris_agent::ProviderChoice::Api(kind) => Some(kind),
            codaris_agent::ProviderChoice::Scripted => None,
        });
        Ok(Response::new(v1::LoginResponse {
            provider: settings
                .provider
                .map(|p| p.as_str().to_owned())
                .unwrap_or_default(),
            model: settings.model.clone().unwrap_or_default(),
            base_url: in_force
                .map(|kind| {
                    settings
                        .api(kind)
                        .base_url
                        .clone()
                        .unwrap_or_else(|| kind.default_base_url().to_owned())
                })
                .unwrap_or_default(),
            key_file: self.providers.file().display().to_string(),
        }))
    }

    async fn check_providers(
        &self,
        request: Request<v1::CheckProvidersRequest>,
    ) -> Result<Response<v1::CheckProvidersResponse>, Status> {
        use crate::server::doctor::{CHECK_TIMEOUT, check_all, check_new_session};
        let request = request.into_inner();
        let settings = self.providers.current();
        let asked = crate::sessions::model_choice::Asked {
            provider: &request.provider,
            model: &request.model,
            base_url: &request.base_url,
            script: None,
        };
        // What a new session would use, checked concurrently with the configured providers;
        // a configured one that is the same provider at the same URL is not asked twice.
        let same = crate::sessions::model_choice::ModelChoice::resolve(&settings, asked)
            .ok()
            .map(|choice| (choice.provider.as_str(), choice.endpoint()));
        let skip = same
            .as_ref()
            .map(|(provider, url)| (*provider, url.as_str()));
        let (first, configured) = tokio::join!(
            check_new_session(&settings, asked, CHECK_TIMEOUT),
            check_all(&settings, CHECK_TIMEOUT, skip)
        );
        let checks: Vec<_> = first.into_iter().chain(configured).collect();
        let sandbox =
            crate::calls::builtins::Setup::from_config(&self.config.get()).sandbox_paths();
        let runtimes = crate::server::doctor::check_runtimes(&sandbox)
            .into_iter()
            .map(|check| v1::RuntimeCheck {
                program: check.program.to_owned(),
                path: check.path.display().to_string(),
                ok: check.problem.is_none(),
                problem: check.problem.unwrap_or_default(),
            })
            .collect();
        let readable =
            |path: &std::path::Path| codaris_tools::shell::readable_by_commands(&sandbox, path);
        let config = self.config.get();
        let path = std::env::var_os("PATH");
        // A person's own pipeline, named by the CLI: read as a launch of it would read it.
        let pipeline = match request.pipeline.as_str() {
            "" => None,
            dir if !std::path::Path::new(dir).is_absolute() => {
                return Err(Status::invalid_argument(format!(
                    "the pipeline `{dir}` must be an absolute path"
                )));
            }
            dir if !std::path::Path::new(dir).join("nextflow.config").is_file() => {
                return Err(Status::failed_precondition(format!(
                    "`{dir}` has no nextflow.config; give a pipeline's directory"
                )));
            }
            dir => Some(std::path::PathBuf::from(dir)),
        };
        let executors = crate::server::executors::check_executors(
            &config.nextflow.profiles.get(),
            &crate::server::executors::Machine {
                passthrough: &config.env_passthrough,
                pass_env: &config.nextflow.pass_env.get(),
                allowed_dirs: &config.allowed_dirs,
                path: path.as_deref(),
                env: &|name| std::env::var(name).ok(),
                home: config.home.as_deref(),
                munge: std::path::Path::new(crate::server::executors::MUNGE_SOCKET),
                readable: &readable,
                pipeline: pipeline.as_deref(),
            },
        )
        .into_iter()
        .map(|check| v1::ExecutorCheck {
            profile: check.profile,
            executor: check.executor.to_owned(),
            ok: check.problem.is_none(),
            problem: check.problem.unwrap_or_default(),
            found: check.found,
        })
        .collect();
        Ok(Response::new(v1::CheckProvidersResponse {
            runtimes,
            executors,
            checks: checks
                .into_iter()
                .map(|check| {
                    let origin = |i: usize| {
                        check
                            .origins
                            .map(|o| o[i].as_str().to_owned())
                            .unwrap_or_default()
                    };
                    v1::ProviderCheck {
                        provider: check.provider.clone(),
                        model: check.model.clone().unwrap_or_default(),
                        base_url: check.base_url.clone(),
                        ok: check.problem.is_none(),
                        problem: check.problem.clone().unwrap_or_default(),
                        for_new_session: check.for_new_session,
                        provider_source: origin(0),
                        model_source: origin(1),
                        base_url_source: origin(2),
                    }
                })
                .collect(),
        }))
    }

    async fn edit_config(
        &self,
        request: Request<v1::EditConfigRequest>,
    ) -> Result<Response<v1::EditConfigResponse>, Status> {
        use codaris_tools::config_tools::ConfigEditor;
        use v1::edit_config_request::Action;
        let request = request.into_inner();
        let editor = self.editor.clone();
        let refused = |err: codaris_tools::ToolError| Status::failed_precondition(err.to_string());
        // A person's change: no session, and no card (the person is at the terminal).
        let text = match request.action() {
            Action::Commit => editor.commit("").await.map_err(refused)?,
            Action::Rollback => editor.rollback("").await.map_err(refused)?,
            Action::Reload => editor.reload().await.map_err(refused)?,
            Action::Unspecified => {
                return Err(Status::invalid_argument(
                    "say what to do: get, changes, set, revert, commit, rollback or reload",
                ));
            }
            action => {
                let blocking = tokio::task::spawn_blocking(move || match action {
                    Action::Get => editor.get(if request.path.is_empty() {
                        "."
                    } else {
                        &request.path
                    }),
                    Action::Set => editor.stage("", &request.commands),
                    Action::Revert => {
                        editor.revert((!request.path.is_empty()).then_some(request.path.as_str()))
                    }
                    // What a commit would do, as its card would show it, else why it cannot.
                    _ => match editor.check_commit() {
                        Ok(preview) => Ok(preview.text),
                        Err(why) => editor.changes().map(|staged| {
                            if staged == "nothing is staged" {
                                staged
                            } else {
                                format!("{staged}\n{why}")
                            }
                        }),
                    },
                });
                blocking
                    .await
                    .map_err(|err| Status::internal(err.to_string()))?
                    .map_err(refused)?
            }
        };
        Ok(Response::new(v1::EditConfigResponse { text }))
    }

    async fn get_config(
        &self,
        _request: Request<v1::GetConfigRequest>,
    ) -> Result<Response<v1::GetConfigResponse>, Status> {
        let settings = self.providers.current();
        let entries = crate::config::entries(&self.config.get(), &settings);
        Ok(Response::new(v1::GetConfigResponse {
            entries: entries
                .into_iter()
                .map(|entry| v1::ConfigEntry {
                    key: entry.key,
                    value: entry.value.to_string(),
                    source: entry.source.as_str().to_owned(),
                    line: entry
                        .line
                        .map_or(0, |line| u32::try_from(line).unwrap_or(u32::MAX)),
                })
                .collect(),
            file: self
                .config
                .get()
                .config_path
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
        }))
    }
}
