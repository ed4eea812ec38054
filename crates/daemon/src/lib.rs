//! `codaris-daemon`: the library behind `codarisd`, the long-running Codaris daemon.
//!
//! It claims the state directory (one daemon per directory, stopped when the directory is lost:
//! [`watch`]), opens the ledger (whose typed handles hold the sessions, tool state and
//! conversations), and serves the gRPC API on a Unix socket and, optionally, on
//! loopback TCP behind a bearer token. Behind the API: the sessions and their running turns
//! (one live session each, the agent's turn loop with this crate as its host: permission
//! cards, and the [`Dispatcher`] deciding each call with the policy on resolved paths, recording
//! the decision and issuing the permit an allowed call runs on), the tool
//! registry and its index (the built-in tools, skills and references), the configuration and
//! the provider keys.
//!
//! Non-goals: policy decisions and ranking (pure crates it links), the turn loop (the agent
//! crate), what a tool does (`codaris-tools`), how the store is written (`codaris-ledger`), and
//! printing for people (the CLI).

pub mod calls;
pub mod config;
pub mod error;
pub mod mcp;
pub mod reconfig;
pub mod scheduler;
pub mod secret;
pub mod server;
pub mod sessions;
pub mod toolset;

pub use calls::dispatch::{Dispatcher, SessionCall};
pub use config::Config;
pub use error::ConfigError;
pub use error::DaemonError;
pub use error::StartError;
pub use server::{Shutdown, StateClaim, StateWatch, serve, serve_reloading};
