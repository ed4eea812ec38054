//! The decision table: what the rules found, turned into a verdict, a code, a sentence and a
//! capability. One `match`, one arm per code, so the whole vocabulary reads in one place.

use std::borrow::Cow;
use std::fmt::{self, Display, Formatter};

use codaris_catalogue::{McpTool, ToolId};

use crate::capability::{Capability, CapabilityName};
use crate::code::Code;
use crate::decision::{Decision, RuleSet};
use crate::grant::UsedGrant;
use crate::grant_set::GrantSet;
use crate::guard::RepeatedSearch;
use crate::hook::HookAnswer;
use crate::path::{BadPath, MAX_PATH_BYTES};
use crate::spec::Withholding;
use crate::task::{Activity, OperatingMode, PermissionMode};
use crate::text::{OneOf, Quoted, Whole};

/// A capability the call needs, borrowed from the call where possible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Need<'a> {
    pub name: CapabilityName,
    pub target: Option<Cow<'a, str>>,
}

impl Need<'_> {
    fn capability(&self) -> Capability {
        Capability::new(self.name, self.target.as_deref().map(str::to_owned))
    }
}

// The sentence pieces below are `Display` values rather than `String`s so a sentence is built in
// one allocation: `evaluate` is on the dispatch path of every tool call.

/// " on `target`", or nothing for an unscoped capability.
struct On<'n, 'a>(&'n Need<'a>);

impl Display for On<'_, '_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self.0.target.as_deref() {
            Some(target) => write!(f, " on {}", Quoted(target)),
            None => Ok(()),
        }
    }
}

/// What the call would do, as a verb phrase.
struct Action<'n, 'a>(&'n Need<'a>);

impl Display for Action<'_, '_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let target = Quoted(self.0.target.as_deref().unwrap_or(""));
        match self.0.name {
            CapabilityName::Write | CapabilityName::MutateOutsideFence => {
                write!(f, "change {target}")
            }
            CapabilityName::RunCommand => write!(f, "run a command in {target}"),
            CapabilityName::ChangeConfig => f.write_str("change Codaris's configuration"),
            CapabilityName::SendHttp => write!(f, "send a request to {target}"),
            CapabilityName::ReadOutsideFence => write!(f, "read {target}"),
            CapabilityName::UseTool => f.write_str("have effects outside the session"),
            CapabilityName::RunProgram => write!(f, "run {target}"),
            CapabilityName::RunPipeline => write!(f, "run the pipeline {target}"),
            CapabilityName::PushImage => write!(f, "push an image to the registry {target}"),
            CapabilityName::LaunchOnPlatform => {
                write!(f, "launch a pipeline on Seqera Platform in {target}")
            }
        }
    }
}

/// How the model asks for the capability.
struct AskFor<'n, 'a>(&'n Need<'a>);

impl Display for AskFor<'_, '_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let name = Quoted(self.0.name.as_str());
        write!(
            f,
            "call `request_capability` for {name}{} to ask the user",
            On(self.0)
        )
    }
}

/// The JSON type of arguments that were not an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonKind {
    Null,
    Bool,
    Number,
    String,
    Array,
}

/// Why a path is out of every tool's reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Protection {
    /// A `.git` directory, in any letter case.
    Git,
    /// `task.protected`: Codaris's ledger and configuration (changes only).
    State,
    /// `task.secret`: credentials (reads too).
    Secret,
    /// `task.state_dir` outside the session's own workspace (reads too).
    StateDir,
    /// A recursive removal whose tree holds this `.git` (found by the daemon).
    NestedGit(String),
    /// A recursive removal of a tree too large to check for a `.git`.
    UncheckedTree,
}

/// What the rules found: the deciding outcome of one evaluation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Finding<'a> {
    RepeatedSearch(&'a RepeatedSearch),
    /// No tool by the name, or (`not_built`) a built-in not built yet; `closest` are the
    /// names the model can reach nearest to it.
    UnknownTool {
        closest: Vec<String>,
        not_built: bool,
    },
    Withheld(Withholding),
    DefinitionChanged(&'a str),
    SlashRequired(&'static [&'static str]),
    NotBound,
    ModeForbids(OperatingMode),
    /// A call outside the mode's allowlist that would change something.
    ModeReadOnly {
        mode: OperatingMode,
        need: Need<'a>,
    },
    ArgsNotObject(JsonKind),
    BadPath {
        arg: &'a str,
        why: BadPath,
    },
    ProtectedPath {
        path: Cow<'a, str>,
        why: Protection,
    },
    ReadOnlyActivity {
        activity: Activity,
        need: Need<'a>,
    },
    ReadOutsideFence(Need<'a>),
    MutateOutsideFence(Need<'a>),
    DeniedByUser(Need<'a>),
    /// The person refused this call alone at its card (`task.refused_at_card`).
    RefusedAtCard(&'a Capability),
    RegistryNotListed(Need<'a>),
    /// A launch names a compute environment the operator does not list (`None`: it names
    /// none, where some are listed).
    ComputeEnvNotListed(Option<&'a str>),
    /// A launch's samplesheet parameter `param` is `value`, which no gate or compute
    /// environment vouches for; `local`: a local file without a gate that holds.
    SamplesheetNotGated {
        param: String,
        value: String,
        local: bool,
    },
    NeedsApproval {
        mode: PermissionMode,
        need: Need<'a>,
    },
    AllowedByGrant {
        need: Need<'a>,
        used: Vec<usize>,
    },
    AllowedByMode(PermissionMode),
    AllowedByDefault,
    /// An operator's hook refused the call.
    BlockedByHook(&'a HookAnswer),
    /// The person refused the call on the card a hook's `ask` raised.
    RefusedAtHookCard(&'a HookAnswer),
    /// A hook asks the person about a call the policy allows.
    AskedByHook(&'a HookAnswer),
    /// A hook answered the permission prompt `need` would raise.
    AllowedByHook {
        answer: &'a HookAnswer,
        need: Need<'a>,
    },
}

/// A hook's reason as a sentence's end: on one line, without a final period, at most
/// [`MAX_REASON_CHARS`] characters (the hook's own text, not a value of the call).
struct Reason<'a>(&'a str);

/// The longest reason of a hook a sentence repeats.
const MAX_REASON_CHARS: usize = 500;

impl Display for Reason<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let words: Vec<&str> = self.0.split_whitespace().collect();
        let line = words.join(" ");
        let line = line.trim_end_matches('.');
        match line.char_indices().nth(MAX_REASON_CHARS) {
            Some((cut, _)) => write!(f, "{}…", &line[..cut]),
            None => f.write_str(line),
        }
    }
}

/// A hook as a sentence names it: its program, in backticks.
fn hook_name(answer: &HookAnswer) -> Quoted<'_> {
    Quoted(answer.command.first().map_or("", String::as_str))
}

/// `: <reason>` when the hook gave one.
struct Because<'a>(&'a HookAnswer);

impl Display for Because<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.0.reason.trim().is_empty() {
            Ok(())
        } else {
            write!(f, ": {}", Reason(&self.0.reason))
        }
    }
}

/// Builds the decision for `finding`; `rules` are those that matched.
pub(crate) fn decide(
    id: &ToolId,
    finding: Finding<'_>,
    rules: RuleSet,
    grants: &GrantSet,
) -> Decision {
    let tool = id.as_str();
    let t = Quoted(tool);
    let mut used_grants = Vec::new();
    let (code, sentence, capability) = match finding {
        // The guard saw this search already this turn; another search or a bound tool helps.
        Finding::RepeatedSearch(repeat) => (Code::RepeatedSearch, repeat.sentence(), None),
        // No spec, built in or carried: the name was guessed or mistyped. Or a tool of the
        // surface that is not built: no search can bind it, so none is suggested for it.
        Finding::UnknownTool { closest, not_built } => {
            let what = if not_built {
                format!("tool {t} is not built in this Codaris and no search finds it")
            } else {
                format!("no tool is named {t}")
            };
            let instead = if closest.is_empty() {
                "call `search_tools` with what you need instead of guessing a name".to_owned()
            } else {
                let names: Vec<String> = closest.iter().map(|n| format!("`{n}`")).collect();
                format!(
                    "the closest names are {}: call one of them, or `search_tools` with what you need instead of guessing a name",
                    names.join(", ")
                )
            };
            (Code::UnknownTool, format!("{what}; {instead}"), None)
        }
        // Withheld whatever the surface says; searching does not bring it back.
        Finding::Withheld(why) => {
            let reason = why.reason();
            (Code::ToolWithheld, format!("tool {t} {reason}"), None)
        }
        // Only the person can accept a changed definition, by approving the server again.
        Finding::DefinitionChanged(what) => (
            Code::DefinitionChanged,
            format!(
                "tool {t} is held back: {}; it stays unavailable until the user approves its server again (`codaris mcp approve {}`)",
                what.split_whitespace().collect::<Vec<_>>().join(" "),
                id.mcp().map_or(tool, McpTool::server)
            ),
            None,
        ),
        // Only the person can open the gate, by typing the command; no grant does.
        Finding::SlashRequired(commands) => (
            Code::SlashRequired,
            format!(
                "tool {t} runs only in a turn where the user typed {}; ask the user to type one if they want it",
                OneOf(commands)
            ),
            None,
        ),
        // Exists, but this turn's surface does not carry it.
        Finding::NotBound => (
            Code::NotBound,
            format!(
                "tool {t} is not bound on this turn; call `search_tools` to bind it, then call it again"
            ),
            None,
        ),
        // The plan and ask allowlists are fixed; only a mode switch changes them.
        Finding::ModeForbids(mode) => {
            let allows = match mode {
                OperatingMode::Plan => "reading and planning tools",
                OperatingMode::Ask => "read-only tools",
                OperatingMode::Agent => "every tool",
            };
            (
                Code::ModeForbids,
                format!(
                    "tool {t} is not available in {} mode, which allows {allows}; searching does not bind it: only the user can switch to agent mode (`/mode agent` in chat)",
                    Quoted(mode.as_str())
                ),
                None,
            )
        }
        // The mode is read-only and its allowlist fixed: no grant or search helps, so the
        // sentence says what the call would change and that only leaving the mode allows it.
        Finding::ModeReadOnly { mode, need } => (
            Code::ReadOnlyActivity,
            format!(
                "{} mode is read-only and {t} would {}, which needs {}; no search or grant allows it there: the user must leave {} mode (`/mode agent` in chat), so describe what you would do instead",
                Quoted(mode.as_str()),
                Action(&need),
                Quoted(need.name.as_str()),
                Quoted(mode.as_str()),
            ),
            Some(need.capability()),
        ),
        // Tell the model exactly how to call again; a string is usually a double-encoded object.
        Finding::ArgsNotObject(kind) => {
            let (got, hint) = match kind {
                JsonKind::String => (
                    "a string",
                    "pass the object itself, not the object encoded as a string",
                ),
                JsonKind::Array => ("an array", "put the values under their argument names"),
                JsonKind::Number => ("a number", "put the value under its argument name"),
                JsonKind::Bool => ("a boolean", "put the value under its argument name"),
                JsonKind::Null => ("null", "pass `{}` when there is nothing to say"),
            };
            (
                Code::ArgsNotObject,
                format!(
                    "the arguments to {t} are {got}, not a JSON object; call {t} again with one JSON object of named arguments: {hint}"
                ),
                None,
            )
        }
        // A path that no system call could take; say which argument and why.
        Finding::BadPath { arg, why } => {
            let a = Quoted(arg);
            let sentence = match why {
                BadPath::Missing => {
                    format!("tool {t} needs the path argument {a}; call it again with one")
                }
                BadPath::NotString => {
                    format!("argument {a} of {t} must be a path string; call it again with one")
                }
                BadPath::Empty => {
                    format!("argument {a} of {t} is an empty path; call it again with a real path")
                }
                BadPath::Nul => {
                    format!("argument {a} of {t} contains a NUL byte; call it again without it")
                }
                BadPath::TooLong => format!(
                    "argument {a} of {t} is longer than {MAX_PATH_BYTES} bytes; use a shorter path"
                ),
                BadPath::Relative => format!(
                    "argument {a} of {t} is relative but the task has no absolute working directory; pass an absolute path"
                ),
                BadPath::UnknownVariable => format!(
                    "argument {a} of {t} names a path through an environment variable the daemon does not know, so the fence cannot judge it; call it again with an absolute path"
                ),
                BadPath::OtherUsersHome => format!(
                    "argument {a} of {t} names another user's home directory, which the fence cannot judge; call it again with an absolute path"
                ),
                BadPath::ForeignHost => format!(
                    "argument {a} of {t} is a `file:` URI on another host, which the fence cannot judge; call it again with a local path"
                ),
                BadPath::TooManyPaths => format!(
                    "the arguments of {t} name more paths than the fence judges in one call; split it into smaller calls"
                ),
            };
            (Code::BadPath, sentence, None)
        }
        // Never changed by a tool in any mode, and no grant helps: the person does it.
        Finding::ProtectedPath { path, why } => {
            let what = match &why {
                Protection::Git => {
                    "is inside a `.git` directory, which no tool may change".to_owned()
                }
                Protection::State => {
                    "is part of Codaris's own state, which no tool may change".to_owned()
                }
                Protection::Secret => {
                    "holds Codaris's credentials, which no tool may read or change".to_owned()
                }
                Protection::StateDir => "is inside Codaris's state directory, which no tool may read or change (only the session's own workspace is open)".to_owned(),
                Protection::NestedGit(found) => format!(
                    "holds the `.git` directory {}, which no tool may change, so it may not be removed",
                    Quoted(found)
                ),
                Protection::UncheckedTree => "holds more entries than Codaris checks for a `.git` directory, so no tool may remove it".to_owned(),
            };
            (
                Code::ProtectedPath,
                format!(
                    "path {} {what}; ask the user to make that change themselves",
                    Quoted(&path)
                ),
                None,
            )
        }
        // A read-only turn can still change something if the person grants it.
        Finding::ReadOnlyActivity { activity, need } => (
            Code::ReadOnlyActivity,
            format!(
                "this {} turn is read-only and {t} would {}; {}",
                Quoted(activity.as_str()),
                Action(&need),
                AskFor(&need)
            ),
            Some(need.capability()),
        ),
        // Reading outside every allowed root, without a grant for that path.
        Finding::ReadOutsideFence(need) => (
            Code::ReadOutsideFence,
            format!(
                "tool {t} would {}, which is outside the allowed folders; {}",
                Action(&need),
                AskFor(&need)
            ),
            Some(need.capability()),
        ),
        // Changing outside every allowed root, without a grant for that path.
        Finding::MutateOutsideFence(need) => (
            Code::MutateOutsideFence,
            format!(
                "tool {t} would {}, which is outside the allowed folders; {}",
                Action(&need),
                AskFor(&need)
            ),
            Some(need.capability()),
        ),
        // A `deny` grant answers the same question again, so no new card is shown.
        Finding::DeniedByUser(need) => (
            Code::DeniedByUser,
            format!(
                "the user already refused {}{} in this session; do not ask again, find another way or stop",
                Quoted(need.name.as_str()),
                On(&need)
            ),
            Some(need.capability()),
        ),
        // This call alone was refused at its card: no `deny` grant stands behind it, so the
        // same call may be asked about again, which the sentence leaves to the model. The path
        // is named whole (escaped, never shortened): the sentence reads as it did when the
        // daemon wrote it.
        Finding::RefusedAtCard(refused) => (
            Code::DeniedByUser,
            format!(
                "the user refused this call ({}{}); do not repeat it unchanged, find another way or ask them",
                Quoted(refused.name.as_str()),
                refused
                    .path
                    .as_deref()
                    .map(|path| format!(" on {}", Whole(path)))
                    .unwrap_or_default()
            ),
            Some(refused.clone()),
        ),
        // Only the operator can list a registry; no card or grant does, so none is named.
        Finding::RegistryNotListed(need) => (
            Code::RegistryNotListed,
            format!(
                "tool {t} may not push to the registry {}: the operator has not listed it among the registries images may be pushed to (`[seqera] registries`); build without `registry`, or ask the user to have it listed",
                Quoted(need.target.as_deref().unwrap_or(""))
            ),
            None,
        ),
        // Only the operator lists compute environments; no card or grant lifts this.
        Finding::ComputeEnvNotListed(named) => (
            Code::ComputeEnvNotListed,
            match named {
                Some(ce) => format!(
                    "tool {t} may not launch on the compute environment {}: the operator has not listed it (`[seqera] compute_envs`); launch on a listed one, or ask the user to have it listed",
                    Quoted(ce)
                ),
                None => format!(
                    "tool {t} must name its compute environment (`compute_env`): the operator lists the ones launches may use (`[seqera] compute_envs`)"
                ),
            },
            None,
        ),
        // A sheet is vouched for by its gate or by living where the compute environment reads;
        // no card stands in for either.
        Finding::SamplesheetNotGated {
            param,
            value,
            local,
        } => (
            Code::SamplesheetNotGated,
            if local {
                format!(
                    "tool {t}: the samplesheet {} ({}) has no samplesheet gate that holds; check it with prepare_samplesheet_gate first, or point it at s3://, gs://, az:// or a Platform dataset the compute environment reads",
                    Quoted(&param),
                    Quoted(&value)
                )
            } else {
                format!(
                    "tool {t}: the samplesheet {} ({}) can be neither gated nor read by a compute environment as a dataset; use a local file with a passing gate, or s3://, gs://, az:// or a Platform dataset",
                    Quoted(&param),
                    Quoted(&value)
                )
            },
            None,
        ),
        // The class prompts in this permission mode and no grant covers the call.
        Finding::NeedsApproval { mode, need } => (
            Code::NeedsApproval,
            format!(
                "tool {t} needs the user's approval for {}{} under permission mode {}; wait for their answer",
                Quoted(need.name.as_str()),
                On(&need),
                Quoted(mode.as_str())
            ),
            Some(need.capability()),
        ),
        // Grants covered everything that would have refused or prompted.
        Finding::AllowedByGrant { need, used } => {
            used_grants = used
                .iter()
                .filter_map(|&index| {
                    let g = grants.get(index)?;
                    Some(UsedGrant {
                        index,
                        id: g.id.clone(),
                        lifetime: g.lifetime,
                    })
                })
                .collect();
            // Name the grant as the person gave it, which may be a parent of the call's path.
            let grant = used.first().and_then(|&i| grants.get(i));
            let lifetime = grant.map_or("", |g| g.lifetime.as_str());
            let given = Need {
                name: grant.map_or(need.name, |g| g.capability),
                target: grant.and_then(|g| g.path.as_deref()).map(Cow::Borrowed),
            };
            (
                Code::AllowedByGrant,
                format!(
                    "tool {t} is allowed by the user's {} grant of {}{}",
                    Quoted(lifetime),
                    Quoted(given.name.as_str()),
                    On(&given),
                ),
                Some(need.capability()),
            )
        }
        // The permission mode approves this class without a card.
        Finding::AllowedByMode(mode) => (
            Code::AllowedByMode,
            format!(
                "tool {t} is allowed by permission mode {}",
                Quoted(mode.as_str())
            ),
            None,
        ),
        // The operator's hook refused: the model reads its reason, as Claude Code's do.
        Finding::BlockedByHook(answer) => {
            let reason = if answer.reason.trim().is_empty() {
                format!("hook {} refused the call", hook_name(answer))
            } else {
                Reason(&answer.reason).to_string()
            };
            (
                Code::BlockedByHook,
                format!("blocked by hook: {reason}"),
                None,
            )
        }
        // The person said no on the card the hook asked for; no grant stands behind it.
        Finding::RefusedAtHookCard(answer) => (
            Code::DeniedByUser,
            format!(
                "the user refused this call on the card hook {} asked for; do not repeat it unchanged, find another way or ask them",
                hook_name(answer)
            ),
            // What the person refused: this tool, for this call (no grant records it).
            Some(Capability::new(
                CapabilityName::UseTool,
                Some(tool.to_owned()),
            )),
        ),
        // A card the permission mode would not raise; no grant is asked for, so the answer
        // covers this call only.
        Finding::AskedByHook(answer) => (
            Code::AskedByHook,
            format!(
                "hook {} asks the user to approve this call of {t}{}; wait for their answer",
                hook_name(answer),
                Because(answer)
            ),
            None,
        ),
        // The hook answered the prompt the permission class would raise.
        Finding::AllowedByHook { answer, need } => (
            Code::AllowedByHook,
            format!(
                "tool {t} is allowed by hook {} for {}{}{}",
                hook_name(answer),
                Quoted(need.name.as_str()),
                On(&need),
                Because(answer)
            ),
            Some(need.capability()),
        ),
        // Nothing about the call needs approval.
        Finding::AllowedByDefault => (
            Code::AllowedByDefault,
            format!("tool {t} needs no approval for this call"),
            None,
        ),
    };
    Decision {
        verdict: code.verdict(),
        code,
        sentence,
        capability,
        rules: rules.to_vec(),
        used_grants,
    }
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
