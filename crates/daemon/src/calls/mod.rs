//! A tool call from the model's request to its run: deciding it (the dispatcher, on paths
//! resolved once), the permit it runs on, the built-in tools that run here, and what they keep
//! (the samplesheet gates) or ask of the machine (the programs' versions), and the operator's
//! PreToolUse hooks, which answer before a call is decided.

pub mod builtins;
pub mod dispatch;
pub mod gates;
pub mod hooks;
pub mod prepare;
pub mod programs;
pub mod resolve;
pub mod setup;
pub mod shadow;
