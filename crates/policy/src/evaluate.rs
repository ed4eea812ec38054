//! `evaluate`: the rules, in order, applied to one call.
//!
//! Rule order (the documentation lists the same): loop guard, the person's refusal at the call's
//! card, an operator hook's `deny` (its `allow` and `ask` speak at the permission class), known tool, withheld, slash gate, mode allowlist, binding, argument shape, path shape, protected paths, read-only activity, fence,
//! permission class. Verdicts combine with `max`; among equally severe outcomes the earlier rule
//! speaks. A refusal is final the moment it is found, so evaluation stops there; a prompt is
//! remembered while later capabilities are still checked for a recorded refusal.

use std::borrow::Cow;

use codaris_catalogue::ToolId;
use serde_json::{Map, Value};

use crate::builtin_specs::{builtin, spec as builtin_spec};
use crate::capability::{CapabilityName, HTTP_CARRYING};
use crate::closest;
use crate::command::CommandLine;
use crate::decision::{Decision, Rule, RuleSet};
use crate::grant_set::{CommandCover, Cover, GrantSet};
use crate::hook::{HookCard, HookDecision, HookOutcome};
use crate::path::normalize_absolute;
use crate::path::{BadPath, absolutize, has_git_component, is_within, is_within_ignore_case};
use crate::spec::{Access, Effect, PathDefault, PermissionClass, ToolSpec, Withholding};
use crate::table::{Finding, JsonKind, Need, Protection, decide};
use crate::task::{Activity, ImpliedBy, MemoryRole, OperatingMode, PermissionMode, Task};

/// One tool call as the model made it, with the spec of a tool the crate does not know.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The tool the model called, its name read once where the call entered.
    pub tool: &'a ToolId,
    /// The arguments as the model sent them: any JSON value.
    pub args: &'a Value,
    /// A spec for a tool with no built-in one (an MCP tool). Ignored for built-in names, so a
    /// caller cannot loosen a built-in tool by describing it differently.
    pub spec: Option<&'a ToolSpec>,
}

/// Decides what `call` may do in `task`, given the grants in force. Total and pure: every
/// input gets a decision, nothing is read or written, and the same input gets the same answer.
pub fn evaluate(call: &Call<'_>, grants: &GrantSet, task: &Task) -> Decision {
    evaluate_read(call, grants, task, None)
}

/// [`evaluate`] with the call's command line read already (`read`), as the daemon prepared
/// it: the same decision, without reading the line again. A reading of another line than the
/// call's is ignored and the call's own line read.
pub fn evaluate_read(
    call: &Call<'_>,
    grants: &GrantSet,
    task: &Task,
    read: Option<&CommandLine>,
) -> Decision {
    let mut rules = RuleSet::default();
    let finding = judge(call, grants, task, read, &mut rules);
    decide(call.tool, finding, rules, grants)
}

/// A path argument after it was made absolute and normalised.
struct PathUse<'a> {
    access: Access,
    path: Cow<'a, str>,
    /// Inside an allowed root or the workspace.
    inside: bool,
}

fn judge<'a>(
    call: &Call<'a>,
    grants: &GrantSet,
    task: &'a Task,
    read: Option<&CommandLine>,
    rules: &mut RuleSet,
) -> Finding<'a> {
    let tool = call.tool.as_str();
    // The guard's finding is final: the call repeats what this turn already did.
    if let Some(repeat) = &task.repeated_search {
        rules.insert(Rule::LoopGuard);
        return Finding::RepeatedSearch(repeat);
    }
    // The person's answer at this call's card is final: they refused this call. Nothing about
    // the tool matters any more, and no grant recorded meanwhile lets it run.
    if let Some(refused) = &task.refused_at_card {
        rules.insert(Rule::UserRefusal);
        return Finding::RefusedAtCard(refused);
    }
    // The operator's hooks ran before the permission gate. A `deny` is final like the
    // person's refusal; so is the person's refusal on the card a hook's `ask` raised.
    let hook = task.hook.as_ref().and_then(HookOutcome::deciding);
    if let Some(answer) = hook {
        rules.insert(Rule::Hook);
        if answer.decision == HookDecision::Deny {
            return Finding::BlockedByHook(answer);
        }
    }
    let hook_card = task.hook.as_ref().and_then(|h| h.at_card);
    if let Some(answer) = hook.filter(|a| a.decision == HookDecision::Ask)
        && hook_card == Some(HookCard::Refused)
    {
        rules.insert(Rule::UserRefusal);
        return Finding::RefusedAtHookCard(answer);
    }
    // A built-in's spec is found by its id, never by searching; a carried spec serves the rest.
    // A built-in of the tool surface that is not built yet has a spec but nothing runs it and
    // no search finds it: in a turn with a surface (the daemon's) it is as unknown as a guessed
    // name, and answered with the closest. Without one (`bound` absent: every known tool, an
    // auditor's what-if) it is judged by its spec, the rules it will have once built.
    let built = task.bound.is_none() || call.tool.builtin().is_none_or(|b| b.entry().is_some());
    let spec = call.tool.builtin().map(builtin_spec).or(call.spec);
    let (Some(spec), true) = (spec, built) else {
        rules.insert(Rule::KnownTool);
        return Finding::UnknownTool {
            closest: closest::names(tool, task),
            not_built: !built,
        };
    };
    let object = call.args.as_object();
    // A report-only call is the read-only form of its tool: no gate, no class, no mutation.
    let report_only = spec
        .report_only
        .is_some_and(|arg| object.and_then(|o| o.get(arg)) == Some(&Value::Bool(true)));

    if let Some(why) = withholding(spec, tool, task) {
        rules.insert(Rule::Withheld);
        return Finding::Withheld(why);
    }
    if let Some(what) = &spec.held {
        rules.insert(Rule::Withheld);
        return Finding::DefinitionChanged(what);
    }
    if !spec.slash.is_empty() && !report_only && !task.typed_any(spec.slash) {
        rules.insert(Rule::SlashGate);
        return Finding::SlashRequired(spec.slash);
    }
    // Before the binding: the surface never binds a tool the mode forbids, so `not_bound` would
    // send the model to `search_tools`, which cannot help; only a mode switch can.
    let mode = task.activity.operating_mode();
    if !spec.modes.allows(mode) && !memory_tool_of_memory_task(spec, task) {
        rules.insert(Rule::ModeAllowlist);
        return mode_refusal(spec, tool, object, task, mode, report_only, rules);
    }
    if let Some(bound) = &task.bound
        && !bound.iter().any(|b| b == tool)
    {
        rules.insert(Rule::Binding);
        return Finding::NotBound;
    }
    let Some(object) = object else {
        rules.insert(Rule::ArgsShape);
        return Finding::ArgsNotObject(json_kind(call.args));
    };
    let uses = match path_uses(spec, object, task, report_only) {
        Ok(uses) => uses,
        Err((arg, why)) => {
            rules.insert(Rule::PathShape);
            return Finding::BadPath { arg, why };
        }
    };
    let effect = if report_only {
        Effect::ReadOnly
    } else {
        spec.effect
    };
    if let Some((path, why)) = protected(&uses, effect, task) {
        rules.insert(Rule::ProtectedPath);
        return Finding::ProtectedPath { path, why };
    }

    let mut granted = Granted::default();

    // Read-only activities: a changing call needs a grant; `bypass` does not lift this.
    if task.activity.is_read_only() && mutating(effect, &uses) {
        rules.insert(Rule::ReadOnlyActivity);
        for need in mutation_needs(effect, tool, &uses, task) {
            match cover(grants, &need) {
                Cover::Denied { .. } => return refused(rules, need),
                Cover::Allowed { index } => granted.note(rules, index, need),
                Cover::None => {
                    let activity = task.activity;
                    return Finding::ReadOnlyActivity { activity, need };
                }
            }
        }
    }

    // The fence: every path inside an allowed root or the workspace, or granted.
    for u in uses.iter().filter(|u| !u.inside) {
        rules.insert(Rule::Fence);
        let name = match u.access {
            Access::Read => CapabilityName::ReadOutsideFence,
            Access::Mutate => CapabilityName::MutateOutsideFence,
        };
        let need = Need {
            name,
            target: Some(u.path.clone()),
        };
        match grants.lookup(need.name, need.target.as_deref()) {
            Cover::Denied { .. } => return refused(rules, need),
            Cover::Allowed { index } => granted.note(rules, index, need),
            Cover::None if u.access == Access::Read => return Finding::ReadOutsideFence(need),
            Cover::None => return Finding::MutateOutsideFence(need),
        }
    }

    // The permission class under the permission mode.
    let class = if report_only {
        PermissionClass::None
    } else {
        spec.class
    };
    let pmode = task.permission_mode;
    let auto = auto_approves(class, pmode);
    let mut prompt = None;
    let mut by_mode = false;
    // A command may instead be covered program by program (`run_program`, the allowlist).
    let program = match (class, object.get("command")) {
        (PermissionClass::Command, Some(Value::String(line))) => {
            match read.filter(|read| read.line() == line) {
                Some(read) => grants.commands_cover(read.commands()),
                None => grants.command_cover(line),
            }
        }
        _ => CommandCover::None,
    };
    if let CommandCover::Denied { index } = program {
        rules.insert(Rule::PermissionClass);
        return refused(rules, program_need(grants, index));
    }
    for need in class_needs(class, pmode, tool, call.args, &uses, task) {
        rules.insert(Rule::PermissionClass);
        // The operator's list bounds what a card can approve: an unlisted registry is refused
        // before anyone is asked.
        if need.name == CapabilityName::PushImage
            && let Some(registry) = need.target.as_deref()
            && !task.push_registries.iter().any(|listed| listed == registry)
        {
            return Finding::RegistryNotListed(need);
        }
        if need.name == CapabilityName::LaunchOnPlatform
            && let Some(refusal) = crate::launch::launch_refusal(call.args, task)
        {
            return refusal;
        }
        match (cover(grants, &need), auto, &program) {
            (Cover::Denied { .. }, _, _) => return refused(rules, need),
            (_, true, _) => by_mode = true,
            (Cover::Allowed { index }, false, _) => granted.note(rules, index, need),
            (Cover::None, false, CommandCover::Allowed { indexes }) => {
                for &index in indexes {
                    granted.note(rules, index, program_need(grants, index));
                }
            }
            (Cover::None, false, _) => {
                prompt.get_or_insert(need);
            }
        }
    }

    if let Some(need) = prompt {
        // A hook's `allow` answers the permission prompt, and only it: everything that refuses
        // (the fence, protected paths, a recorded refusal) was decided above.
        return match hook.filter(|a| a.decision == HookDecision::Allow) {
            Some(answer) => Finding::AllowedByHook { answer, need },
            None => Finding::NeedsApproval { mode: pmode, need },
        };
    }
    // A hook's `ask` puts an allowed call before the person, whatever the permission mode,
    // until they answered its card.
    if let Some(answer) = hook.filter(|a| a.decision == HookDecision::Ask)
        && hook_card != Some(HookCard::Approved)
    {
        return Finding::AskedByHook(answer);
    }
    if let Some(need) = granted.first {
        return Finding::AllowedByGrant {
            need,
            used: granted.used,
        };
    }
    rules.insert(Rule::PermissionClass);
    if by_mode {
        Finding::AllowedByMode(pmode)
    } else {
        Finding::AllowedByDefault
    }
}

/// The refusal of a call outside the `plan` or `ask` allowlist. Both modes are read-only, so a
/// call that would change something is refused as such (`read_only_activity`, naming what the
/// change needs) and any other as `mode_forbids`. No grant lifts either: the allowlist is fixed
/// and only the person leaves the mode. A call whose arguments cannot be read for what it
/// would change is refused by the mode alone.
fn mode_refusal<'a>(
    spec: &'a ToolSpec,
    tool: &'a str,
    object: Option<&'a Map<String, Value>>,
    task: &'a Task,
    mode: OperatingMode,
    report_only: bool,
    rules: &mut RuleSet,
) -> Finding<'a> {
    let effect = if report_only {
        Effect::ReadOnly
    } else {
        spec.effect
    };
    let uses = object.and_then(|o| path_uses(spec, o, task, report_only).ok());
    let need = uses
        .filter(|uses| mutating(effect, uses))
        .and_then(|uses| mutation_needs(effect, tool, &uses, task).into_iter().next());
    match need {
        Some(need) => {
            rules.insert(Rule::ReadOnlyActivity);
            Finding::ModeReadOnly { mode, need }
        }
        None => Finding::ModeForbids(mode),
    }
}

/// The grants relied on so far, each once, and the first capability one covered.
#[derive(Default)]
struct Granted<'a> {
    used: Vec<usize>,
    first: Option<Need<'a>>,
}

impl<'a> Granted<'a> {
    fn note(&mut self, rules: &mut RuleSet, index: usize, need: Need<'a>) {
        rules.insert(Rule::Grant);
        if !self.used.contains(&index) {
            self.used.push(index);
        }
        self.first.get_or_insert(need);
    }
}

fn refused<'a>(rules: &mut RuleSet, need: Need<'a>) -> Finding<'a> {
    rules.insert(Rule::UserRefusal);
    Finding::DeniedByUser(need)
}

/// Why a tool is held back from a task before any call is made: the rules that refuse a call
/// whatever its arguments, so the surface never offers what dispatch would refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldBack {
    /// Switched off, or withheld under a task condition (`tool_withheld`).
    Withheld(Withholding),
    /// Not in the operating mode's allowlist (`mode_forbids`).
    Mode(OperatingMode),
}

/// Whether `tool` (with `spec` when it has no built-in one) is held back from `task`: the same
/// withholding and mode rules `evaluate` applies. A tool with no spec at all is held back only
/// when the task switches it off; dispatch refuses it as unknown anyway.
pub fn held_back(tool: &str, spec: Option<&ToolSpec>, task: &Task) -> Option<HeldBack> {
    let Some(spec) = builtin(tool).or(spec) else {
        return task
            .withheld
            .iter()
            .any(|w| w == tool)
            .then_some(HeldBack::Withheld(Withholding::SwitchedOff));
    };
    if let Some(why) = withholding(spec, tool, task) {
        return Some(HeldBack::Withheld(why));
    }
    let mode = task.activity.operating_mode();
    (!spec.modes.allows(mode) && !memory_tool_of_memory_task(spec, task))
        .then_some(HeldBack::Mode(mode))
}

/// A memory tool in a memory subagent's task: the catalogue's "memory child" mode, which no
/// operating mode's list holds.
fn memory_tool_of_memory_task(spec: &ToolSpec, task: &Task) -> bool {
    task.memory.is_some() && spec.withheld_when == Some(Withholding::MemoryChild)
}

/// The memory tools that change notes, which a recall-only child is not given.
const MEMORY_CHANGES: [&str; 3] = [
    "codaris_memory_mkdir",
    "codaris_memory_save",
    "codaris_memory_delete",
];

fn withholding(spec: &ToolSpec, tool: &str, task: &Task) -> Option<Withholding> {
    if task.withheld.iter().any(|w| w == tool) {
        return Some(Withholding::SwitchedOff);
    }
    // A memory subagent has the memory tools and nothing else; the loop's own tools neither
    // (its surface is the memory tools, bound from the start: nothing to search for).
    if let Some(role) = task.memory {
        if spec.withheld_when != Some(Withholding::MemoryChild) {
            return Some(Withholding::NotMemory);
        }
        if role == MemoryRole::Recall && MEMORY_CHANGES.contains(&tool) {
            return Some(Withholding::RecallOnly);
        }
        return None;
    }
    if task.narrowed.as_ref().is_some_and(|n| n.removes(tool)) {
        return Some(Withholding::Definition);
    }
    match spec.withheld_when? {
        Withholding::AuditTurn
            if task.activity == Activity::Audit || task.typed_any(&["/audit"]) =>
        {
            Some(Withholding::AuditTurn)
        }
        Withholding::ExtensionWorkspace if task.extension => Some(Withholding::ExtensionWorkspace),
        Withholding::MemoryChild => Some(Withholding::MemoryChild),
        Withholding::Subagent if task.subagent => Some(Withholding::Subagent),
        Withholding::DepthLimit if task.at_max_depth => Some(Withholding::DepthLimit),
        _ => None,
    }
}

fn json_kind(value: &Value) -> JsonKind {
    match value {
        Value::Null => JsonKind::Null,
        Value::Bool(_) => JsonKind::Bool,
        Value::Number(_) => JsonKind::Number,
        Value::String(_) => JsonKind::String,
        // An object never reaches here; calling it an array keeps the function total.
        Value::Array(_) | Value::Object(_) => JsonKind::Array,
    }
}

/// Every path the call names, made absolute and normalised, or the first unusable one.
fn path_uses<'a>(
    spec: &'a ToolSpec,
    object: &'a Map<String, Value>,
    task: &'a Task,
    report_only: bool,
) -> Result<Vec<PathUse<'a>>, (&'a str, BadPath)> {
    let mut uses = Vec::with_capacity(spec.paths.len());
    for arg in spec.paths.iter() {
        let name: &str = &arg.name;
        let access = if report_only {
            Access::Read
        } else {
            arg.access
        };
        let mut push = |raw: &'a str| -> Result<(), (&'a str, BadPath)> {
            let path = absolutize(raw, &task.cwd).map_err(|why| (name, why))?;
            let inside = fence_roots(task).any(|root| is_within(&path, &root));
            uses.push(PathUse {
                access,
                path,
                inside,
            });
            Ok(())
        };
        match object.get(name) {
            None | Some(Value::Null) => match arg.default {
                PathDefault::Required => return Err((name, BadPath::Missing)),
                PathDefault::Optional => {}
                PathDefault::Cwd if task.cwd.starts_with('/') => {
                    push(&task.cwd).map_err(|(n, _)| (n, BadPath::Relative))?;
                }
                PathDefault::Cwd => return Err((name, BadPath::Relative)),
            },
            Some(Value::String(raw)) => push(raw)?,
            Some(Value::Array(items)) => {
                if items.is_empty() && arg.default == PathDefault::Required {
                    return Err((name, BadPath::Missing));
                }
                for item in items {
                    push(item.as_str().ok_or((name, BadPath::NotString))?)?;
                }
            }
            Some(_) => return Err((name, BadPath::NotString)),
        }
    }
    // The files a patch touches are changed paths like any argument, and so are the files an
    // MCP call names by URI (read only by a read-only tool): the daemon found them.
    let reads = spec.effect == Effect::ReadOnly || report_only;
    for implied in &task.implied {
        let named = implied.arg.as_deref();
        let (access, arg) = match implied.by {
            ImpliedBy::PatchTarget => (Access::Mutate, "patch"),
            ImpliedBy::FileUri if reads => (Access::Read, named.unwrap_or("file URI")),
            ImpliedBy::FileUri => (Access::Mutate, named.unwrap_or("file URI")),
            ImpliedBy::ArgumentPath if reads => (Access::Read, named.unwrap_or("argument")),
            ImpliedBy::ArgumentPath => (Access::Mutate, named.unwrap_or("argument")),
            // The daemon could not read it as a path: refused before anything is judged.
            ImpliedBy::Unjudged(why) => return Err((named.unwrap_or("argument"), why)),
            ImpliedBy::RemovedGit | ImpliedBy::RemovalUnchecked => continue,
        };
        let path = absolutize(&implied.path, &task.cwd).map_err(|why| (arg, why))?;
        let inside = fence_roots(task).any(|root| is_within(&path, &root));
        uses.push(PathUse {
            access,
            path,
            inside,
        });
    }
    Ok(uses)
}

/// The first path the call may not touch, and why: a secret or the state directory (outside
/// the session's own workspace) read or changed, a `.git` directory or protected path changed,
/// or a tree removed that the daemon found a `.git` in (`task.implied`).
fn protected<'a>(
    uses: &[PathUse<'a>],
    effect: Effect,
    task: &Task,
) -> Option<(Cow<'a, str>, Protection)> {
    // A path tool removing or moving an ancestor takes the protected path with it.
    let covers = |u: &PathUse<'_>, root: &str| {
        let ancestor =
            effect == Effect::Paths && u.access == Access::Mutate && is_within(root, &u.path);
        ancestor || is_within_ignore_case(&u.path, root)
    };
    let state = task
        .state_dir
        .as_deref()
        .and_then(|raw| absolutize(raw, &task.cwd).ok());
    // The session's own workspace lies inside the state directory and is the one part open.
    let open = task
        .workspace
        .as_deref()
        .and_then(|raw| absolutize(raw, &task.cwd).ok())
        .filter(|ws| {
            state
                .as_deref()
                .is_some_and(|s| is_within(ws, s) && ws != s)
        });
    for u in uses {
        for raw in &task.secret {
            if let Ok(root) = absolutize(raw, &task.cwd)
                && covers(u, &root)
            {
                return Some((u.path.clone(), Protection::Secret));
            }
        }
        if let Some(state) = &state
            && covers(u, state)
            && !open.as_deref().is_some_and(|ws| is_within(&u.path, ws))
        {
            return Some((u.path.clone(), Protection::StateDir));
        }
    }
    for u in uses.iter().filter(|u| u.access == Access::Mutate) {
        if has_git_component(&u.path) {
            return Some((u.path.clone(), Protection::Git));
        }
        for raw in &task.protected {
            if let Ok(root) = absolutize(raw, &task.cwd)
                && covers(u, &root)
            {
                return Some((u.path.clone(), Protection::State));
            }
        }
    }
    // A recursive removal takes every `.git` inside its tree with it.
    for implied in &task.implied {
        let found = absolutize(&implied.path, &task.cwd)
            .map_or_else(|_| implied.path.clone(), Cow::into_owned);
        let why = match implied.by {
            // Judged above as a path the call reads or changes.
            ImpliedBy::PatchTarget
            | ImpliedBy::FileUri
            | ImpliedBy::ArgumentPath
            | ImpliedBy::Unjudged(_) => continue,
            ImpliedBy::RemovedGit => Protection::NestedGit(found.clone()),
            ImpliedBy::RemovalUnchecked => Protection::UncheckedTree,
        };
        // Name the removal that takes it: the changed argument holding it, else the first.
        let removed = uses
            .iter()
            .filter(|u| u.access == Access::Mutate)
            .find(|u| is_within(&found, &u.path))
            .or_else(|| uses.iter().find(|u| u.access == Access::Mutate))
            .map_or(Cow::Owned(found), |u| u.path.clone());
        return Some((removed, why));
    }
    None
}

fn fence_roots(task: &Task) -> impl Iterator<Item = Cow<'_, str>> {
    task.allowed_roots
        .iter()
        .chain(task.workspace.as_ref())
        .filter_map(|root| normalize_absolute(root))
}

fn mutating(effect: Effect, uses: &[PathUse<'_>]) -> bool {
    matches!(effect, Effect::Command | Effect::Config | Effect::Opaque)
        || uses.iter().any(|u| u.access == Access::Mutate)
}

/// One `write` need per changed path; outside the fence it is `mutate_outside_fence` instead,
/// so the one grant a refusal asks for also lets the call past the fence.
fn write_needs<'a>(uses: &[PathUse<'a>]) -> impl Iterator<Item = Need<'a>> {
    uses.iter()
        .filter(|u| u.access == Access::Mutate)
        .map(|u| Need {
            name: if u.inside {
                CapabilityName::Write
            } else {
                CapabilityName::MutateOutsideFence
            },
            target: Some(u.path.clone()),
        })
}

/// What the grants say about a need. Permission to change a path outside the fence is the
/// stronger permission, so it also answers a `write` prompt for the same paths.
fn cover(grants: &GrantSet, need: &Need<'_>) -> Cover {
    let target = need.target.as_deref();
    let direct = grants.lookup(need.name, target);
    if need.name != CapabilityName::Write {
        return direct;
    }
    match (
        direct,
        grants.lookup(CapabilityName::MutateOutsideFence, target),
    ) {
        (d @ Cover::Denied { .. }, _) | (_, d @ Cover::Denied { .. }) => d,
        (a @ Cover::Allowed { .. }, _) | (_, a @ Cover::Allowed { .. }) => a,
        (Cover::None, Cover::None) => Cover::None,
    }
}

/// The `run_program` capability a grant in the set names, as a decision cites it.
fn program_need<'a>(grants: &GrantSet, index: usize) -> Need<'a> {
    let prefix = grants.get(index).and_then(|g| g.path.clone());
    Need {
        name: CapabilityName::RunProgram,
        target: prefix.map(Cow::Owned),
    }
}

/// Where a command runs: its directory argument, else the task's working directory.
fn command_dir<'a>(uses: &[PathUse<'a>], task: &'a Task) -> Need<'a> {
    let dir = uses
        .iter()
        .find(|u| u.access == Access::Mutate)
        .map(|u| u.path.clone())
        .or_else(|| normalize_absolute(&task.cwd));
    Need {
        name: CapabilityName::RunCommand,
        target: dir,
    }
}

/// The capabilities a read-only activity needs granted before a changing call runs.
fn mutation_needs<'a>(
    effect: Effect,
    tool: &'a str,
    uses: &[PathUse<'a>],
    task: &'a Task,
) -> Vec<Need<'a>> {
    match effect {
        Effect::ReadOnly | Effect::Paths => write_needs(uses).collect(),
        Effect::Command => vec![command_dir(uses, task)],
        Effect::Config => vec![Need {
            name: CapabilityName::ChangeConfig,
            target: None,
        }],
        Effect::Opaque => vec![Need {
            name: CapabilityName::UseTool,
            target: Some(Cow::Borrowed(tool)),
        }],
    }
}

/// The capabilities the permission class asks about under this permission mode.
fn class_needs<'a>(
    class: PermissionClass,
    mode: PermissionMode,
    tool: &'a str,
    args: &'a Value,
    uses: &[PathUse<'a>],
    task: &'a Task,
) -> Vec<Need<'a>> {
    match class {
        PermissionClass::None => Vec::new(),
        PermissionClass::Write => write_needs(uses).collect(),
        PermissionClass::Command => vec![command_dir(uses, task)],
        PermissionClass::Config => vec![Need {
            name: CapabilityName::ChangeConfig,
            target: None,
        }],
        PermissionClass::Http => {
            let url = args.get("url").and_then(Value::as_str);
            let target = url.map(|u| Cow::Owned(http_target(u, args, uses, task)));
            let mut needs = vec![Need {
                name: CapabilityName::SendHttp,
                target,
            }];
            // Under `ask` the file a request saves is approved like any other write.
            if mode == PermissionMode::Ask {
                needs.extend(write_needs(uses));
            }
            needs
        }
        PermissionClass::Always => vec![Need {
            name: CapabilityName::UseTool,
            target: Some(Cow::Borrowed(tool)),
        }],
        PermissionClass::LeavePlan if task.activity == Activity::Plan => vec![Need {
            name: CapabilityName::UseTool,
            target: Some(Cow::Borrowed(tool)),
        }],
        PermissionClass::LeavePlan => Vec::new(),
        PermissionClass::Pipeline => vec![Need {
            name: CapabilityName::RunPipeline,
            ..command_dir(uses, task)
        }],
        PermissionClass::Launch => vec![Need {
            name: CapabilityName::LaunchOnPlatform,
            target: Some(Cow::Owned(crate::launch::launch_target(args))),
        }],
        // No registry, no push: the image stays on the builder's own registry.
        PermissionClass::Push => match args.get("registry").and_then(Value::as_str) {
            Some(registry) if !registry.trim().is_empty() => vec![Need {
                name: CapabilityName::PushImage,
                target: Some(Cow::Borrowed(registry)),
            }],
            _ => Vec::new(),
        },
    }
}

/// What an `http` class call asks to send: its destination origin, and everything else the
/// request carries, so that approving the destination alone does not approve a call that adds
/// a local file, a proxy, an unchecked certificate or redirects to any host. The extras come in
/// a fixed order after ` carrying `, separated by `; ` (see [`crate::http_origin`]).
fn http_target(url: &str, args: &Value, uses: &[PathUse<'_>], task: &Task) -> String {
    let mut extras: Vec<String> = uses
        .iter()
        .filter(|u| u.access == Access::Read)
        .map(|u| format!("file {}", u.path))
        .collect();
    if let Some(fields) = args.get("form_data").and_then(Value::as_object) {
        for value in fields.values() {
            if let Some(raw) = value.get("file").and_then(Value::as_str) {
                let path =
                    absolutize(raw, &task.cwd).map_or_else(|_| raw.to_owned(), Cow::into_owned);
                extras.push(format!("file {path}"));
            }
        }
    }
    if let Some(proxy) = args.get("proxy").and_then(Value::as_str) {
        extras.push(format!("proxy {proxy}"));
    }
    if args.get("verify_tls") == Some(&Value::Bool(false)) {
        extras.push("an unchecked certificate".to_owned());
    }
    if args.get("follow_redirects") == Some(&Value::Bool(true)) {
        extras.push("redirects to any host".to_owned());
    }
    let origin = crate::capability::http_origin(url);
    if extras.is_empty() {
        origin
    } else {
        format!("{origin}{HTTP_CARRYING}{}", extras.join("; "))
    }
}

/// The catalogue's table: which classes a permission mode approves without a card. Unlike the
/// catalogue, `bypass` does not approve the `config` class: a commit rewrites the policy's own
/// inputs (the roots, the allowlists, hooks and MCP servers that run outside the sandbox), and
/// the threat model lets no tool write the configuration without the person.
fn auto_approves(class: PermissionClass, mode: PermissionMode) -> bool {
    use PermissionClass as C;
    use PermissionMode as P;
    matches!(
        (class, mode),
        (C::Write, P::AcceptEdits | P::Bypass) | (C::Command | C::Http, P::Bypass)
    )
}

#[cfg(test)]
mod tests;
