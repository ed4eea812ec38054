//! `codaris-seqera`: the tools of Codaris's built-in MCP server `seqera`, and the server.
//!
//! - `build_container_image`: an nf-core module that already ships the tool, else a frozen
//!   build on Seqera Wave; never a push to a registry the operator did not list.
//! - `lint_nextflow`: `nextflow lint -o json`, findings as file:line:column.
//! - Seqera Platform's read-only set: workspaces, pipelines, runs, tasks, a run's log (`GET`s).
//! - `launch_pipeline`: a run launched on Seqera Platform (its one `POST`), decided by the
//!   daemon's policy as `launch_on_platform` before it reaches the server.
//!
//! The daemon runs the server as `codarisd mcp-server seqera` over stdio and treats it like any
//! other MCP server (its calls pass the policy at dispatch and are recorded), except that its
//! tools are switched off until the person switches them on.
//!
//! The daemon starts the server with its settings in the environment ([`SeqeraSetup::from_env`],
//! [`SeqeraSetup::to_env`]) and calls [`serve_stdio`]; [`tools`] gives the same tools for a
//! caller that wants them without the protocol.
//!
//! Non-goals: deciding what a call may do (the daemon's policy does, before the call reaches the
//! server); writing anything to Seqera Platform but a launch.

mod args;
pub mod build;
mod http;
pub mod launch;
pub mod launch_resolve;
pub mod lint;
pub mod modules;
pub mod platform;
mod server;
pub mod setup;
mod tls;
mod tool;
pub mod wave;

pub use server::{SERVER_NAME, SeqeraServer, serve, serve_stdio, tools};
pub use setup::SeqeraSetup;
pub use tool::{SeqeraTool, ToolFailure};
