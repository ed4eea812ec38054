use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use codaris_proto::v1;
use codaris_proto::v1::daemon_server::Daemon;
use tonic::{Request, Response, Status};

use crate::config::Config;
use crate::convert::timestamp_ms;
use crate::sessions::SessionStore;
use crate::shutdown::Shutdown;

/// What the Status call reports and the handle Shutdown pulls.
#[derive(Debug)]
pub struct DaemonService {
    pub config: Arc<Config>,
    pub socket: String,
    pub started_at_ms: u64,
    pub started: Instant,
    pub sessions: SessionStore,
    pub shutdown: Shutdown,
    /// Entries in the current tool index, updated whenever the index is swapped.
    pub tools_indexed: Arc<AtomicU32>,
    /// Whether commands run under Landlock, probed once at start.
    pub sandbox: String,
    /// The domain tools' programs, probed in the background when first asked for.
    pub programs: Arc<crate::programs::ProgramProbe>,
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
            state_dir: self.config.state_dir.display().to_string(),
            socket: self.socket.clone(),
            tcp_listen: self
                .config
                .listen
                .map(|addr| addr.to_string())
                .unwrap_or_default(),
            sessions_active,
            sessions_total,
            tools_indexed: self.tools_indexed.load(Ordering::Relaxed),
            config_file: self
                .config
                .config_file
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            sandbox: self.sandbox.clone(),
            warnings: self.config.warnings.clone(),
            programs: self.programs.current(),
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
}
