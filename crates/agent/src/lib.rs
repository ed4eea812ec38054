//! `codaris-agent`: the turn loop and everything a turn computes (the per-round tool surface,
//! slash commands, the loop guard), and the model providers.
//!
//! [`run_turn`] plays one chat turn of a session's [`Conversation`]: rounds of a model call, then
//! the round's tool calls, until the model stops, the loop guard ends the turn, the round limit
//! is reached or the caller drops the future. What has an effect outside the turn (deciding a
//! call with the policy and recording it, asking the person on a card, running what a permit
//! allows, reporting events) it asks of the [`TurnHost`] the daemon implements; the loop's own
//! tools run here (`search_tools` against the host's [`ToolIndex`], `request_capability`
//! through the host's card call). The providers speak
//! the Anthropic Messages and OpenAI Chat Completions streaming APIs behind [`ModelProvider`];
//! the [`ScriptedProvider`] replays a script file for the demo and the tests.
//!
//! The pure core (no I/O, no clock, no logging, no async): a message is read into a
//! [`TurnPlan`] (slash commands by [`parse_slash`], research by [`classify_research`], pasted
//! links); [`surface`] computes each round's tools from the conversation's [`Event`]s, the
//! [`TurnState`] and the [`Registry`] view, and [`Surface::line`] is the binding line; a
//! [`LoopGuard`] per turn refuses repeated searches and counts calls that make no progress;
//! [`Usage::line`] is the usage line; [`parse_script`] and [`ScriptCursor`] are the scripted
//! provider's file format and its replay. The rules are documented in `docs/surface.md`.
//!
//! Non-goals: it knows neither sled nor tonic, and it decides no call itself: whether a call
//! may run is the policy's answer, which the host obtains and records; the built-in tools are
//! `codaris-tools`' and run in the host. The core does not call the model, dispatch, record or
//! log the lines it formats, and does not read the script file.

mod compaction;
mod context;
mod conversation;
mod error;
mod forced;
mod guard;
mod history;
mod host;
mod loop_calls;
mod loop_tools;
mod plan;
mod provider;
mod reason;
mod registry;
mod research;
mod script;
mod scripted;
mod slash;
mod surface;
mod tls;
mod turn;
mod usage;

pub use codaris_catalogue::{BuiltinTool, McpTool, ToolId};
pub use context::budget::{ContextBudget, PerMille};
pub use context::compact::ContextSection;
pub use context::evict::{Evicted, Stubs};
pub use context::window::{DEFAULT_CONTEXT_WINDOW, known_context_window};
pub use conversation::Conversation;
pub use error::AgentError;
pub use error::ScriptPlace;
pub use error::TurnError;
pub use forced::AUDIT_TOOLS;
pub use forced::EXTENSION_TOOLS;
pub use forced::Forced;
pub use forced::REMEDIATE_TOOLS;
pub use forced::REPAIR_TOOLS;
pub use forced::RESEARCH_TOOLS;
pub use forced::REVIEW_TOOLS;
pub use forced::RUN_TOOLS;
pub use forced::SEARCH_DATA_TOOLS;
pub use forced::row;
pub use guard::Check;
pub use guard::GuardCode;
pub use guard::LoopGuard;
pub use guard::MAX_REPEATS;
pub use guard::Progress;
pub use guard::Refusal;
pub use guard::search_words;
pub use history::Compaction;
pub use history::CompactionTrigger;
pub use history::Event;
pub use history::SEARCH_TOOLS;
pub use host::CallRequest;
pub use host::CapabilityAnswer;
pub use host::CapabilityRequest;
pub use host::Decided;
pub use host::HostError;
pub use host::HostFuture;
pub use host::Permit;
pub use host::ToolIndex;
pub use host::ToolRun;
pub use host::TurnHost;
pub use loop_tools::catalogue_spec;
pub use loop_tools::loop_tool_spec;
pub use plan::TurnPlan;
pub use provider::AnthropicProvider;
pub use provider::CacheHints;
pub use provider::CheckProblem;
pub use provider::DEFAULT_MAX_OUTPUT_TOKENS;
pub use provider::EventStream;
pub use provider::InvalidToolCall;
pub use provider::MULTIMODAL_PREFIXES;
pub use provider::Message;
pub use provider::ModelProvider;
pub use provider::ModelRequest;
pub use provider::OpenAiProvider;
pub use provider::Picture;
pub use provider::ProviderChoice;
pub use provider::ProviderConfig;
pub use provider::ProviderError;
pub use provider::ProviderErrorKind;
pub use provider::ProviderFailure;
pub use provider::ProviderKind;
pub use provider::RetryPolicy;
pub use provider::Retrying;
pub use provider::Secret;
pub use provider::StopReason;
pub use provider::StreamEvent;
pub use provider::TimeoutPhase;
pub use provider::Timeouts;
pub use provider::ToolCall;
pub use provider::ToolDefinition;
pub use provider::ToolResult;
pub use provider::ToolTier;
pub use provider::build_provider;
pub use provider::check_provider;
pub use provider::is_loopback_url;
pub use provider::list_models;
pub use provider::models_url;
pub use provider::multimodal_by_name;
pub use reason::EndReason;
pub use registry::Registry;
pub use registry::RegistryTool;
pub use research::ResearchMatch;
pub use research::ResearchRule;
pub use research::classify_research;
pub use script::Script;
pub use script::ScriptCursor;
pub use script::ScriptRound;
pub use script::ScriptStep;
pub use script::ScriptToolCall;
pub use script::ScriptTurn;
pub use script::parse_script;
pub use scripted::ScriptedProvider;
pub use scripted::is_script_exhausted;
pub use slash::Command;
pub use slash::ReviewArgs;
pub use slash::ReviewFlag;
pub use slash::ReviewForm;
pub use slash::Slash;
pub use slash::command_of;
pub use slash::parse_slash;
pub use surface::BINDING_TURNS;
pub use surface::MAX_FOUND;
pub use surface::Surface;
pub use surface::TurnState;
pub use surface::surface;
pub use surface::withholding;
pub use turn::ContextShare;
pub use turn::TurnConfig;
pub use turn::TurnEvent;
pub use turn::run_turn;
pub use usage::Usage;
