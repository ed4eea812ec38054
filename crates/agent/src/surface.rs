//! The surface of a round: one pure function of the conversation history, the turn's state and
//! the registry view. The rules are in `docs/surface.md`; in short:
//!
//! - the always-on nine, in the fixed order of [`ALWAYS_ON`] (or, on the legacy surface, every
//!   tool of the registry, the nine first);
//! - then the tools this turn forced (slash table, research, a pasted link), in table order;
//! - then the tools found by `search_tools` results of this turn and the two before it, oldest
//!   first, at most [`MAX_FOUND`], the most recently found kept.
//!
//! A tool not in the registry is left out and named in [`Surface::missing`]; a held-back tool
//! (switched off, `review_pipeline` in an audit turn, `planner` in an extension workspace, a
//! memory-subagent tool, or not in the allowlist of `ask` or `plan`) is left out and named in
//! [`Surface::held_back`].

use std::cmp::Reverse;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use codaris_policy::{ALWAYS_ON, HeldBack, Task, Withholding, builtin, held_back};

use crate::forced::Forced;
use crate::history::Event;
use crate::plan::TurnPlan;
use crate::registry::Registry;

/// At most this many found tools are bound at once.
pub const MAX_FOUND: usize = 12;
/// A search in turn `t` binds through turn `t + BINDING_TURNS - 1`.
pub const BINDING_TURNS: usize = 3;

/// The state of a turn the surface depends on: the plan of its message, the policy's task with
/// that plan applied, and whether the lean surface is on (`CODARIS_LEAN_7_TOOLS`, default on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnState {
    plan: TurnPlan,
    task: Task,
    /// The directory a tool moved the turn to, typed; the task holds its text.
    moved_to: Option<std::path::PathBuf>,
    lean: bool,
}

impl TurnState {
    /// The state of a turn: `task` is the session's task, to which the plan is applied (typed
    /// commands, activity, extension workspace).
    pub fn new(plan: TurnPlan, mut task: Task, lean: bool) -> TurnState {
        plan.apply_to(&mut task);
        TurnState {
            plan,
            task,
            moved_to: None,
            lean,
        }
    }

    /// The plan of the turn's message.
    pub fn plan(&self) -> &TurnPlan {
        &self.plan
    }

    /// The policy's task for this turn, without a surface.
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// True for the lean surface, false for the legacy one (the whole registry).
    pub fn lean(&self) -> bool {
        self.lean
    }

    /// The task to dispatch a call of this round with: this turn's task, bound to the surface.
    pub fn dispatch_task(&self, surface: &Surface) -> Task {
        let mut task = self.task.clone();
        task.bound = Some(surface.tools.clone());
        task
    }

    /// Moves the turn to `cwd` (a tool moved the session): later calls are decided and run
    /// there. The task, which the policy reads, gets its text; the path itself is kept for the
    /// host, which prepares the calls in it.
    pub fn move_to(&mut self, cwd: std::path::PathBuf) {
        self.task.cwd = cwd.to_string_lossy().into_owned();
        self.moved_to = Some(cwd);
    }

    /// The directory a tool moved the turn to, if one did.
    pub fn moved_to(&self) -> Option<&std::path::Path> {
        self.moved_to.as_deref()
    }

    /// The tools switched off as of this round, from the registry: never offered, found or
    /// bound, and refused `tool_withheld` at dispatch.
    pub fn switch_off(&mut self, registry: &Registry) {
        if self.task.withheld != registry.switched_off() {
            self.task.withheld = registry.switched_off().to_vec();
        }
    }
}

/// The tools of one round and how they were chosen.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Surface {
    /// The names, in the order they are sent.
    pub tools: Vec<String>,
    /// How many are always-on (on the legacy surface: all of them).
    pub always_on: usize,
    /// How many this turn forced.
    pub forced: usize,
    /// How many a search found.
    pub found: usize,
    /// How many tools the registry holds.
    pub filtered_from: usize,
    /// Tools that would be on the surface but are not in the registry, for the log.
    pub missing: Vec<String>,
    /// Tools that would be on the surface but are withheld for this task, for the log.
    pub held_back: Vec<String>,
    /// True when a pasted link asked for the URL fetcher and no MCP server fetches URLs.
    pub no_url_fetcher: bool,
}

impl Surface {
    /// The binding line the log and the `binding` event carry.
    pub fn line(&self) -> String {
        format!(
            "Lean tools active: bound {} tools to model ({} always-on, {} forced, {} found by search; filtered from {}).",
            self.tools.len(),
            self.always_on,
            self.forced,
            self.found,
            self.filtered_from
        )
    }

    fn has(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t == name)
    }

    /// Adds `name` if it is new, in the registry and not withheld; true when added.
    fn offer(&mut self, name: &str, task: &Task, registry: &Registry) -> bool {
        if self.has(name) {
            return false;
        }
        if registry.get(name).is_none() {
            push_once(&mut self.missing, name);
            return false;
        }
        if withholding(name, task, registry).is_some() {
            push_once(&mut self.held_back, name);
            return false;
        }
        self.tools.push(name.to_owned());
        true
    }
}

fn push_once(list: &mut Vec<String>, name: &str) {
    if !list.iter().any(|n| n == name) {
        list.push(name.to_owned());
    }
}

/// Why `name` is held back from `task`, if it is: switched off in the registry, else the
/// policy's own rules ([`codaris_policy::held_back`]: listed in the task's `withheld`,
/// `review_pipeline` in an audit turn, `planner` in an extension workspace, a memory-subagent
/// tool, or outside the operating mode's allowlist). So the surface never offers what dispatch
/// would refuse as `tool_withheld` or `mode_forbids`.
pub fn withholding(name: &str, task: &Task, registry: &Registry) -> Option<HeldBack> {
    let tool = registry.get(name);
    if tool.is_some_and(|t| !t.enabled) {
        return Some(HeldBack::Withheld(Withholding::SwitchedOff));
    }
    // An MCP tool's modes are those of any carried spec (agent and plan, never ask), so ask
    // mode never sends one.
    let external = tool
        .filter(|t| t.server.is_some())
        .map(|_| codaris_policy::ExternalSpec::default().to_tool_spec(name));
    held_back(name, external.as_ref(), task)
}

/// The surface of the next model call, given everything that happened so far (the current
/// turn's user message included).
pub fn surface(history: &[Event], state: &TurnState, registry: &Registry) -> Surface {
    let task = &state.task;
    let mut out = Surface {
        tools: Vec::with_capacity(ALWAYS_ON.len() + 16),
        filtered_from: registry.len(),
        ..Surface::default()
    };
    for name in ALWAYS_ON {
        out.always_on += usize::from(out.offer(name, task, registry));
    }
    if !state.lean {
        // Registry names are unique, so only the nine already placed need skipping.
        for tool in registry.tools() {
            let name = tool.name.as_str();
            if ALWAYS_ON.contains(&name) {
                continue;
            }
            if withholding(name, task, registry).is_some() {
                out.held_back.push(tool.name.clone());
            } else {
                out.tools.push(tool.name.clone());
                out.always_on += 1;
            }
        }
        return out;
    }
    for forced in state.plan.forced() {
        let name = match forced {
            Forced::Tool(tool) => tool.as_str(),
            Forced::UrlFetcher => {
                // Every URL-fetching server's fetcher, with no search.
                let fetchers: Vec<&str> = registry.url_fetchers().collect();
                if fetchers.is_empty() {
                    out.no_url_fetcher = true;
                }
                for name in fetchers {
                    out.forced += usize::from(out.offer(name, task, registry));
                }
                continue;
            }
        };
        out.forced += usize::from(out.offer(name, task, registry));
    }
    for name in found(history, &out, task, registry) {
        out.found += usize::from(out.offer(name, task, registry));
    }
    out
}

/// Where a name was found: the event index and its rank in that result.
type Seen = (usize, usize);

/// The found tools to bind, oldest first, capped to the most recently found. Names already on
/// the surface and slash-gated tools are skipped here; missing and withheld ones are left for
/// `offer` to report.
fn found<'h>(
    history: &'h [Event],
    so_far: &Surface,
    task: &Task,
    registry: &Registry,
) -> Vec<&'h str> {
    let start = window_start(history);
    let mut order: Vec<(&str, Seen, Seen)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for (i, event) in history.iter().enumerate().skip(start) {
        for (rank, name) in event.binds().iter().enumerate() {
            let name = name.as_str();
            if so_far.has(name) || builtin(name).is_some_and(|s| !s.slash.is_empty()) {
                continue;
            }
            match at.get(name) {
                Some(&k) => order[k].2 = (i, rank),
                None => {
                    at.insert(name, order.len());
                    order.push((name, (i, rank), (i, rank)));
                }
            }
        }
    }
    // Only names that can be bound compete for the cap; the others are reported by `offer`.
    let (mut bindable, rest): (Vec<_>, Vec<_>) = order.into_iter().partition(|(name, ..)| {
        registry.get(name).is_some() && withholding(name, task, registry).is_none()
    });
    // Newest first: a later result wins; within one result the better-ranked hit wins.
    bindable.sort_by_key(|&(_, _, (i, rank))| (Reverse(i), rank));
    bindable.truncate(MAX_FOUND);
    bindable.sort_by_key(|&(_, first, _)| first);
    bindable
        .into_iter()
        .chain(rest)
        .map(|(name, ..)| name)
        .collect()
}

/// The index of the user message that starts turn `t - 2`, where `t` is the last turn; 0 when
/// the history holds fewer turns.
fn window_start(history: &[Event]) -> usize {
    let mut turns = 0;
    for (i, event) in history.iter().enumerate().rev() {
        if matches!(event, Event::User { .. }) {
            turns += 1;
            if turns == BINDING_TURNS {
                return i;
            }
        }
    }
    0
}
