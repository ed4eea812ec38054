use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use codaris_daemon::config::{self, Flags, Sources};
use codaris_daemon::{Shutdown, StateClaim};
use codaris_paths::StateLayout;
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint, Uri};

/// A daemon served by this test process; stops when dropped.
pub struct InProcess {
    pub temp: tempfile::TempDir,
    pub shutdown: Shutdown,
    pub server: tokio::task::JoinHandle<Result<(), codaris_daemon::StartError>>,
    pub socket: PathBuf,
}

impl InProcess {
    pub async fn start() -> Self {
        Self::start_in(tempfile::tempdir().unwrap(), None).await
    }

    /// Starts a daemon whose state lives in `<temp>/state`. With a `config_dir`, skills are read
    /// from `<config_dir>/skills` as they would be beside a real configuration file.
    pub async fn start_in(temp: tempfile::TempDir, config_dir: Option<PathBuf>) -> Self {
        Self::start_with(temp, config_dir, &[]).await
    }

    /// Starts a daemon as if `env` were its environment (the variables configuration reads).
    pub async fn start_with(
        temp: tempfile::TempDir,
        config_dir: Option<PathBuf>,
        env: &[(&str, &str)],
    ) -> Self {
        Self::start_full(temp, config_dir, env, None).await
    }

    /// Starts a daemon that read `toml` as its configuration file.
    pub async fn start_with_toml(toml: &str) -> Self {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("config.toml");
        let parsed = config::parse_file(&path, toml).unwrap();
        Self::start_full(temp, None, &[], Some((path, parsed))).await
    }

    async fn start_full(
        temp: tempfile::TempDir,
        config_dir: Option<PathBuf>,
        env: &[(&str, &str)],
        file: Option<(PathBuf, config::ConfigToml)>,
    ) -> Self {
        let state_dir = temp.path().join("state");
        let config = config::resolve(Sources {
            state_dir: state_dir.clone(),
            cwd: temp.path().to_path_buf(),
            file,
            config_dir,
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), std::ffi::OsString::from(v)))
                .collect::<BTreeMap<_, _>>(),
            flags: Flags::default(),
        })
        .unwrap();
        let layout = StateLayout::new(&state_dir);
        let socket = layout.socket();
        let claim = StateClaim::acquire(layout).unwrap();
        let shutdown = Shutdown::new();
        let server = tokio::spawn(codaris_daemon::serve(config, claim, shutdown.clone()));
        for _ in 0..500 {
            if UnixStream::connect(&socket).await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Self {
            temp,
            shutdown,
            server,
            socket,
        }
    }

    pub async fn channel(&self) -> Channel {
        let socket = self.socket.clone();
        Endpoint::from_static("http://codarisd.test")
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let socket = socket.clone();
                async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(socket).await?)) }
            }))
            .await
            .unwrap()
    }

    pub async fn stop(self) {
        self.shutdown.trigger("test");
        self.server.await.unwrap().unwrap();
    }

    /// Stops the daemon and hands back its temp dir, so a test can start another on the same
    /// state.
    pub async fn stop_keeping_state(self) -> tempfile::TempDir {
        self.shutdown.trigger("test");
        self.server.await.unwrap().unwrap();
        self.temp
    }
}
