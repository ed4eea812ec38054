//! What the policy needs to know about a tool, as data: its permission class, which arguments
//! are paths and whether each is read or changed, the modes that offer it, its slash gate.
//!
//! Built-in specs are `'static` (see `catalogue`); a spec carried by a call for a tool the crate
//! does not know (an MCP tool) is owned. One type serves both through `Cow`.

use std::borrow::Cow;

use codaris_catalogue::BuiltinTool;
use serde::{Deserialize, Serialize};

use crate::task::OperatingMode;

/// The permission classes of the catalogue: when a call of this class needs a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionClass {
    /// Never prompts.
    #[default]
    None,
    /// File writes: prompts under `ask` unless the path was granted.
    Write,
    /// Commands: prompts unless granted; `bypass` skips the prompt.
    Command,
    /// Codaris's own configuration: prompts under `ask` and `accept_edits`.
    Config,
    /// Arbitrary HTTP: prompts under `ask` and `accept_edits` unless the origin was granted.
    Http,
    /// Prompts in every mode unless granted.
    Always,
    /// Runs a Nextflow pipeline: prompts in every mode unless `run_pipeline` was granted for
    /// the pipeline's directory (its first `mutate` path argument, else the working directory).
    Pipeline,
    /// Pushes a container image to the registry its `registry` argument names: refused unless
    /// the operator lists that registry (`task.push_registries`), then prompts in every mode
    /// unless `push_image` was granted for it. Without a `registry` it pushes nowhere and never
    /// prompts.
    Push,
    /// Launches a pipeline on Seqera Platform (`seqera__launch_pipeline`): refused when the
    /// operator lists compute environments (`task.compute_envs`) and the call names none of
    /// them, or when a samplesheet parameter is a local file without a gate that holds
    /// (`task.gated_sheets`) or a location no compute environment reads; then prompts in every
    /// mode unless `launch_on_platform` was granted for its workspace, compute environment
    /// and work directory.
    Launch,
    /// Takes the session out of plan mode (`plan_exit`): in plan mode it prompts in every
    /// permission mode unless granted, since leaving the mode is the person's call and not the
    /// model's; elsewhere there is no plan mode to leave and it never prompts.
    LeavePlan,
}

/// What a call of the tool can change, which decides the capability a read-only activity asks
/// for before letting it through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Changes nothing outside the session's own bookkeeping, unless a path argument marked
    /// `mutate` is given (then exactly that path).
    ReadOnly,
    /// Changes exactly the paths its `mutate` arguments name, and nothing else.
    Paths,
    /// Runs a command, in its `mutate` directory argument or the task's working directory.
    Command,
    /// Changes Codaris's own configuration.
    Config,
    /// Changes things no argument describes (runs a pipeline, touches a remote host, an MCP
    /// tool not marked read-only): only a grant for the tool itself covers it.
    Opaque,
}

/// Whether a path argument is read or changed by the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// The tool only reads it.
    Read,
    /// The tool may create, change or remove it (or run something there).
    Mutate,
}

/// What an absent (or `null`) path argument means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathDefault {
    /// The tool cannot run without it: absent is `bad_path`.
    Required,
    /// The tool acts on the task's working directory, which is then checked instead.
    Cwd,
    /// The tool does without it.
    #[default]
    Optional,
}

/// One argument that names a file-system path (or a list of them).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathArg {
    /// The argument's name in the call's JSON object.
    pub name: Cow<'static, str>,
    /// Read or changed.
    pub access: Access,
    /// What its absence means.
    #[serde(default)]
    pub default: PathDefault,
}

impl PathArg {
    /// A built-in path argument.
    pub const fn new(name: &'static str, access: Access, default: PathDefault) -> PathArg {
        PathArg {
            name: Cow::Borrowed(name),
            access,
            default,
        }
    }
}

/// The operating modes whose tool lists contain a tool (a small set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Modes(u8);

impl Modes {
    /// Offered in no mode (a tool that only a subagent sees).
    pub const NONE: Modes = Modes(0);
    /// Agent mode only.
    pub const AGENT: Modes = Modes(1);
    /// Agent and plan modes.
    pub const AGENT_PLAN: Modes = Modes(1 | 2);
    /// Agent, plan and ask modes.
    pub const ALL: Modes = Modes(1 | 2 | 4);

    fn bit(mode: OperatingMode) -> u8 {
        match mode {
            OperatingMode::Agent => 1,
            OperatingMode::Plan => 2,
            OperatingMode::Ask => 4,
        }
    }

    /// True when `mode`'s allowlist contains the tool.
    pub fn allows(self, mode: OperatingMode) -> bool {
        self.0 & Modes::bit(mode) != 0
    }

    /// The set of the given modes.
    pub fn of(modes: &[OperatingMode]) -> Modes {
        Modes(modes.iter().fold(0, |acc, m| acc | Modes::bit(*m)))
    }

    /// The modes in the set, in the order agent, plan, ask.
    pub fn to_vec(self) -> Vec<OperatingMode> {
        [
            OperatingMode::Agent,
            OperatingMode::Plan,
            OperatingMode::Ask,
        ]
        .into_iter()
        .filter(|m| self.allows(*m))
        .collect()
    }
}

impl Serialize for Modes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_vec().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Modes {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Modes, D::Error> {
        Vec::<OperatingMode>::deserialize(deserializer).map(|v| Modes::of(&v))
    }
}

/// A task condition under which a tool is withheld whatever the surface says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Withholding {
    /// The tool is switched off for this task (listed in the task's `withheld`).
    SwitchedOff,
    /// An `/audit` turn: the audit reports, it does not review.
    AuditTurn,
    /// An extension workspace keeps no session checklist.
    ExtensionWorkspace,
    /// The tool belongs to the memory subagent; the main model never calls it.
    MemoryChild,
    /// The task is a subagent's ([`crate::Task::subagent`]): the tool acts for the person in
    /// front of the session (`switch_model`), whom a child does not have.
    Subagent,
    /// The subagent's definition leaves the tool out ([`crate::Task::narrowed`]).
    Definition,
    /// The session is as deep as `subagents.max_depth` allows ([`crate::Task::at_max_depth`]):
    /// it spawns no further child.
    DepthLimit,
    /// The task is a memory subagent's ([`crate::Task::memory`]): it has the memory tools and
    /// no other.
    NotMemory,
    /// The task is a recall-only memory subagent's (an ask-mode turn's): it searches, lists and
    /// reads notes, and changes none.
    RecallOnly,
}

impl Withholding {
    /// Why a tool so withheld cannot be called, as the decision's sentence and a search's
    /// answer say it after the tool's name.
    pub fn reason(self) -> &'static str {
        match self {
            Withholding::SwitchedOff => {
                "is switched off for this task; use another tool or ask the user to switch it on"
            }
            Withholding::AuditTurn => {
                "is withheld in an `/audit` turn; report through the compliance audit instead"
            }
            Withholding::ExtensionWorkspace => {
                "is withheld in an extension workspace; keep the checklist in your reply instead"
            }
            Withholding::MemoryChild => "belongs to the memory subagent and cannot be called here",
            Withholding::Subagent => {
                "is never offered to a subagent; say in your report what the parent should change"
            }
            Withholding::Definition => {
                "is not among the tools this subagent's definition gives it; do the task with the tools you have, or say in your report what is missing"
            }
            Withholding::DepthLimit => {
                "cannot start another subagent here: this session is as deep as `subagents.max_depth` allows; do the task yourself"
            }
            Withholding::NotMemory => {
                "is not a memory tool; a memory subagent has only the `codaris_memory_*` tools"
            }
            Withholding::RecallOnly => {
                "changes notes, and this memory subagent only recalls (an ask-mode turn); search, list and read instead"
            }
        }
    }
}

/// Where a spec came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Compiled into this crate.
    Builtin,
    /// Carried by the call (an MCP tool).
    External,
}

/// Everything the policy knows about one tool.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: Cow<'static, str>,
    /// When it prompts.
    pub class: PermissionClass,
    /// What it can change.
    pub effect: Effect,
    /// Its path arguments.
    pub paths: Cow<'static, [PathArg]>,
    /// The operating modes that offer it.
    pub modes: Modes,
    /// Slash commands of which one must be typed this turn for it to run; empty when ungated.
    pub slash: &'static [&'static str],
    /// An argument that, when `true`, makes a call report only: no slash gate, no mutation.
    pub report_only: Option<&'static str>,
    /// A task condition that withholds it.
    pub withheld_when: Option<Withholding>,
    /// Where the spec came from.
    pub origin: Origin,
    /// Why the tool is held back until its server is approved again (an MCP tool whose
    /// definition changed since the approval, or that appeared after it): what changed.
    pub held: Option<Cow<'static, str>>,
    /// The built-in it specifies; `None` for a spec a call carries.
    #[serde(skip)]
    pub builtin: Option<BuiltinTool>,
}

impl ToolSpec {
    /// A built-in spec with no slash gate, report-only switch or withholding condition.
    pub const fn builtin(
        tool: BuiltinTool,
        class: PermissionClass,
        effect: Effect,
        paths: &'static [PathArg],
        modes: Modes,
    ) -> ToolSpec {
        ToolSpec {
            name: Cow::Borrowed(tool.as_str()),
            class,
            effect,
            paths: Cow::Borrowed(paths),
            modes,
            slash: &[],
            report_only: None,
            withheld_when: None,
            origin: Origin::Builtin,
            held: None,
            builtin: Some(tool),
        }
    }

    /// The same spec gated on one of these slash commands.
    pub const fn gated(mut self, slash: &'static [&'static str]) -> ToolSpec {
        self.slash = slash;
        self
    }

    /// The same spec with a report-only switch argument.
    pub const fn with_report_only(mut self, arg: &'static str) -> ToolSpec {
        self.report_only = Some(arg);
        self
    }

    /// The same spec withheld under a task condition.
    pub const fn withheld(mut self, when: Withholding) -> ToolSpec {
        self.withheld_when = Some(when);
        self
    }

    /// True when some call of this tool can change something outside the session.
    pub fn can_mutate(&self) -> bool {
        self.effect != Effect::ReadOnly || self.paths.iter().any(|p| p.access == Access::Mutate)
    }
}

/// The spec a request carries for a tool the crate does not know, typically an MCP tool.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalSpec {
    /// Declared free of side effects by its registration. Absent means not read-only.
    #[serde(default)]
    pub read_only: bool,
    /// Its path arguments (absent ones are ignored unless their `default` says otherwise).
    #[serde(default)]
    pub paths: Vec<PathArg>,
    /// Its permission class; MCP tools have no built-in prompt, so the default is `none`.
    #[serde(default)]
    pub permission: PermissionClass,
    /// The modes that offer it; MCP tools are offered in agent and plan mode, never in ask.
    #[serde(default)]
    pub modes: Option<Modes>,
    /// SHA-256 of the tool's definition as its server gave it (an MCP tool): recorded with each
    /// decision, so an auditor knows which definition a call was decided under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
    /// What changed since the tool's server was approved, when the tool is held back for it
    /// (`definition_changed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
}

impl ExternalSpec {
    /// The policy's view of the tool called `name`.
    pub fn to_tool_spec(&self, name: &str) -> ToolSpec {
        ToolSpec {
            name: Cow::Owned(name.to_owned()),
            class: self.permission,
            effect: if self.read_only {
                Effect::ReadOnly
            } else {
                Effect::Opaque
            },
            paths: Cow::Owned(self.paths.clone()),
            modes: self.modes.unwrap_or(Modes::AGENT_PLAN),
            slash: &[],
            report_only: None,
            withheld_when: None,
            origin: Origin::External,
            held: self.held.clone().map(Cow::Owned),
            builtin: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn modes_round_trip_as_lists() {
        let modes = Modes::of(&[OperatingMode::Plan, OperatingMode::Agent]);
        assert_eq!(modes, Modes::AGENT_PLAN);
        assert_eq!(
            serde_json::to_value(modes).ok(),
            Some(json!(["agent", "plan"]))
        );
        assert!(!modes.allows(OperatingMode::Ask));
    }

    #[test]
    fn an_mcp_spec_defaults_to_opaque_agent_and_plan() {
        let parsed: Result<ExternalSpec, _> = serde_json::from_value(json!(
            {"paths": [{"name": "file", "access": "mutate"}]}
        ));
        let spec = parsed.map(|s| s.to_tool_spec("demo__save")).ok();
        let spec = spec.unwrap_or_else(|| ExternalSpec::default().to_tool_spec("x"));
        assert_eq!(spec.effect, Effect::Opaque);
        assert_eq!(spec.modes, Modes::AGENT_PLAN);
        assert_eq!(spec.class, PermissionClass::None);
        assert_eq!(spec.origin, Origin::External);
        assert_eq!(
            spec.paths.to_vec(),
            [PathArg::new("file", Access::Mutate, PathDefault::Optional)]
        );
    }

    #[test]
    fn a_read_only_mcp_spec_mutates_only_through_mutate_paths() {
        let reader = ExternalSpec {
            read_only: true,
            ..ExternalSpec::default()
        };
        assert!(!reader.to_tool_spec("demo__get").can_mutate());
        let saver = ExternalSpec {
            read_only: true,
            paths: vec![PathArg::new("out", Access::Mutate, PathDefault::Optional)],
            ..ExternalSpec::default()
        };
        assert!(saver.to_tool_spec("demo__save").can_mutate());
    }
}
