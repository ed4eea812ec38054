//! The daemon as a process and a server: its state directory claimed and watched, the gRPC
//! services and the listeners they are served on, who may connect, the log and the traces, and
//! the orderly stop.

pub mod auth;
pub mod chain_head;
pub mod convert;
pub mod doctor;
pub mod executors;
pub mod keys;
pub mod logging;
pub mod notify;
pub mod on_first_call;
pub mod peer;
mod serve;
pub mod service;
pub mod shutdown;
pub mod state;
pub mod telemetry;
pub mod watch;

pub use serve::{serve, serve_reloading};
pub use shutdown::Shutdown;
pub use state::StateClaim;
pub use watch::StateWatch;
