//! `codaris-tools`: the built-in tools the model calls, each executed inside the fence.
//!
//! The policy (`codaris-policy`) decides whether a call may run, on paths the daemon resolved.
//! A tool here makes sure what runs does exactly what was decided and no more, even when the
//! file system changes between the decision and the act: files are opened beneath the allowed
//! root they were checked against, never following a symlink out of it.
//!
//! Non-goals: deciding (the policy), recording (the ledger), choosing which tools a turn sees
//! (the agent's surface), talking to a model.

pub mod config_tools;
mod context;
pub mod docs;
pub mod files;
pub mod filing;
mod implied;
mod limits;
mod live;
pub mod memory;
pub mod ncbi;
pub mod nextflow;
mod planner;
pub mod plans;
pub mod preview;
pub mod progress;
pub mod question;
pub mod scheduler;
pub mod shell;
mod skill;
pub mod spawn_agent;
pub mod switch_model;
mod tls;
mod tool;
mod web;

pub use context::Fence;
pub use context::ReadArgs;
pub use context::ToolContext;
pub use context::normalize;
pub use context::resolve_existing;
pub use files::file_tools;
pub use limits::OutputLimits;
pub use limits::apply_limits;
pub use limits::limit_text;
pub use live::Live;
pub use ncbi::ncbi_tools;
pub use planner::Planner;
pub use plans::{PlanDocument, PlanExit, PlanList, PlanRead, PlanWrite};
pub use question::{BadReply, Question, QuestionItem, QuestionOption, Questions, Reply};
pub use skill::{LoadSkill, SkillSwitch};
pub use spawn_agent::{SpawnAgent, SpawnRequest};
pub use switch_model::{ModelSwitch, SwitchModel, SwitchScope};
pub use tool::Content;
pub use tool::Tool;
pub use tool::ToolError;
pub use tool::ToolOutput;
pub use web::Article;
pub use web::Engine;
pub use web::EngineKind;
pub use web::HttpRequest;
pub use web::Literature;
pub use web::WebError;
pub use web::WebFetch;
pub use web::WebResearch;
pub use web::WebSearch;
pub use web::web_tools;
pub use web::web_tools_with_research;
