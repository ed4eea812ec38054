//! `codaris-policy`: what a tool call may do, decided by one pure function.
//!
//! `evaluate(call, ledger view, task) -> Decision` is total: it returns a decision for every input
//! and never panics. The crate also holds the built-in tool specs as data so an offline auditor
//! knows them without the daemon.
//!
//! A [`Decision`] is a value shaped like cedar's `Response`: a [`Verdict`] (`allow < ask < deny`,
//! combined with `max`), a [`Code`] from a closed vocabulary, a one-line sentence for the person
//! and the model, the [`Capability`] a grant would need, the [`Rule`]s that matched, and the
//! grants it relied on. The ledger view is a [`GrantSet`], indexed once so a lookup costs the
//! depth of the path, not the number of grants. [`Request`] is the JSON contract of
//! `codaris policy eval`; [`Case`] checks one line of the decision corpus.
//!
//! The vocabulary, the rule order and the symlink contract are documented in
//! `docs/decision-codes.md`.
//!
//! Non-goals: no I/O, no clock, no environment, no logging. Time and resolved paths are inputs;
//! symlinks are resolved by the caller before `evaluate` sees a path, and the paths a call changes
//! beyond its arguments (a patch's files, a `.git` inside a removed tree) are found by the caller
//! and passed in [`Task::implied`]. The crate does not store
//! grants (the daemon's ledger does), does not consume `once` grants (the daemon serialises that),
//! does not show cards, and does not parse slash commands or patch bodies.

mod builtin_specs;
mod capability;
mod closest;
mod code;
mod command;
mod corpus;
mod decision;
mod evaluate;
mod grant;
mod grant_set;
mod guard;
mod hook;
mod launch;
mod path;
mod request;
mod spec;
mod table;
mod task;
mod text;
mod verdict;

/// Version of the rules, recorded with every decision so a replay knows what decided it.
/// "2": the Nextflow tools' path arguments are the ones their tools take (the samplesheet gate
/// reads, `clone_nfcore_base` writes into `outdir`, the remediation plan is read).
/// "3": running or testing a pipeline needs `run_pipeline` for its directory (the `pipeline`
/// class) instead of `use_tool` for the tool; `fetch_test_data` changes the pipeline's `path`.
/// "4": the `push` class (`push_image` for a registry the task lists; `registry_not_listed`
/// for one it does not).
/// "5": the `plan` and `ask` allowlists are checked before the binding, and a call outside them
/// that would change something is refused `read_only_activity` (else `mode_forbids`) instead of
/// `not_bound`, which sent the model searching for a tool no search could bind.
/// "6": a built-in tool that is not built yet (no catalogue entry: `question`, …) is refused
/// `unknown_tool` instead of `not_bound`, and `unknown_tool` names the closest tools the task
/// can reach (`task.other_tools` adds the daemon's MCP tools); `plan_exit` is in plan mode's
/// allowlist with the `leave_plan` class (a card in plan mode whatever the permission mode,
/// nothing elsewhere).
/// "7": `question`, `switch_model`, `load_skill`, `codaris_docs_search` and `codaris_docs_read`
/// are built, so a call to one is no longer `unknown_tool`; `question` and `switch_model` are
/// withheld from a subagent's task (`tool_withheld`).
/// "8": subagents: `plan_exit` and the six configuration tools are withheld from a subagent's
/// task; a subagent's agent definition removes tools (`task.narrowed`, `tool_withheld`); a
/// session at `subagents.max_depth` is refused `spawn_agent` (`task.at_max_depth`).
/// "9": the operator's PreToolUse hooks' answers (`task.hook`) take part: a hook's `deny` refuses
/// the call (`blocked_by_hook`), its `ask` turns an allowed call into a card (`asked_by_hook`),
/// its `allow` answers the permission prompt (`allowed_by_hook`).
/// "10": the six configuration tools are built, so a call to one is no longer `unknown_tool`;
/// the `config` class (`config_commit`, `config_rollback`) asks in every permission mode,
/// `bypass` included: a commit can widen the fence, add hooks and start MCP servers, all run
/// outside the sandbox, so only the person (or the operator's hook) agrees to one.
/// "11": the `launch` class (`seqera__launch_pipeline`): `launch_on_platform` for the
/// workspace, compute environment and work directory, a card in every mode unless granted;
/// `compute_env_not_listed` for a compute environment outside `task.compute_envs`, and
/// `samplesheet_not_gated` for a local samplesheet outside `task.gated_sheets` or one no
/// compute environment reads.
/// "12": the scheduler's eleven `codaris_scheduler_*` tools are real (offered while
/// `[scheduler] enabled`): agent mode only, the changing ones class `always`, list/get/runs
/// `none`; a call to one is decided rather than refused as a tool not built.
/// "13": the memory subagent: a task with `memory` has the six `codaris_memory_*` tools (in any
/// operating mode) and no other (`tool_withheld`), a recall-only one (`memory: recall`, an
/// ask-mode turn's) not `_mkdir`, `_save` or `_delete`; every other task is still never offered
/// a memory tool.
pub const POLICY_VERSION: &str = "13";

pub use builtin_specs::ALWAYS_ON;
pub use builtin_specs::BUILTIN;
pub use builtin_specs::builtin;
pub use builtin_specs::spec as builtin_spec;
pub use capability::Capability;
pub use capability::CapabilityName;
pub use capability::Scope;
pub use capability::http_origin;
pub use codaris_catalogue::{BuiltinTool, McpTool, ToolId};
pub use code::Code;
pub use command::CommandLine;
pub use command::prefix_words;
pub use command::simple_commands;
pub use corpus::Case;
pub use corpus::CaseError;
pub use corpus::Expect;
pub use corpus::check_case_line;
pub use decision::Decision;
pub use decision::Rule;
pub use evaluate::Call;
pub use evaluate::HeldBack;
pub use evaluate::evaluate;
pub use evaluate::evaluate_read;
pub use evaluate::held_back;
pub use grant::Grant;
pub use grant::Lifetime;
pub use grant::UsedGrant;
pub use grant_set::CommandCover;
pub use grant_set::Cover;
pub use grant_set::GrantSet;
pub use guard::RepeatedSearch;
pub use guard::ending;
pub use hook::HookAnswer;
pub use hook::HookCard;
pub use hook::HookDecision;
pub use hook::HookOutcome;
pub use launch::{LaunchSheet, REMOTE_SCHEMES, SheetPlace, launch_samplesheets, launch_target};
pub use path::BadPath;
pub use path::MAX_PATH_BYTES;
pub use path::normalize_absolute;
pub use request::Request;
pub use request::RequestError;
pub use request::evaluate_json;
pub use spec::Access;
pub use spec::Effect;
pub use spec::ExternalSpec;
pub use spec::Modes;
pub use spec::Origin;
pub use spec::PathArg;
pub use spec::PathDefault;
pub use spec::PermissionClass;
pub use spec::ToolSpec;
pub use spec::Withholding;
pub use task::Activity;
pub use task::Implied;
pub use task::ImpliedBy;
pub use task::MemoryRole;
pub use task::Narrowed;
pub use task::OperatingMode;
pub use task::PermissionMode;
pub use task::Task;
pub use verdict::Verdict;
